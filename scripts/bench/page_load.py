"""The exporter's web page on one big group in a real headless Chromium: time to first render and to a refresh.

    .venv/bin/python scripts/bench/page_load.py --partitions 4096 --rounds 7

Writes one group straight into ZooKeeper under its own chroot (no broker, no consumer): a topic
node of --partitions partitions, --members registrations (half marked as zkconsumer members, half
left as Scala members register), an owner node of every partition held by its member's thread
(ephemeral, of the script's session, as a member's own would be) and an offset node of every
partition. No broker serves that chroot, so the log ends come from a stand-in source: each
partition's committed offset plus a made-up lag (0 for most, up to a few thousand for some;
growing by 1 per refresh so each refresh changes the page). The history is filled with an hour
of points (as after an hour's run) before the page is opened.

Runs the real Exporter (its view, history and HTTP server) in this process with --interval, and
a headless Chromium (Debian's package) driven through the DevTools protocol. Each round loads the
group's page afresh and reads what the page measured itself (performance.now(), from navigation
start to the first render's DOM and layout; then one refresh: both JSON fetches, the render and
its layout). Medians over --rounds.

Starts ZooKeeper (a LocalCluster: ZooKeeper and one broker, which never sees the group) unless
given --zookeeper HOST:PORT. Last line: partitions= members= rounds= overview_bytes= overview_ms=
history_bytes= history_ms= (each the median of 5 GETs by this script) history_points= first_render_ms= (median) first_render_max_ms= refresh_ms= (median) refresh_max_ms=
dom_cells= load1= (the machine's 1-minute load average at the end)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kazoo.client import KazooClient  # noqa: E402

from harness.chromium import Chromium  # noqa: E402
from zkconsumer.exporter.exporter import Exporter  # noqa: E402
from zkconsumer.exporter.history import LagHistory  # noqa: E402
from zkconsumer.partitions import TopicPartition  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402
from zkconsumer.zookeeper.client import close_quietly, connect  # noqa: E402
from zkconsumer.zookeeper.znodes import Registration  # noqa: E402

CHROOT = "/page-load"
GROUP = "page-load"
TOPIC = "page-load"


def lag_of(partition: int) -> int:
    """The made-up lag: most partitions caught up, every 7th behind by up to a few thousand."""
    return 0 if partition % 7 else (partition * 37) % 3000 + 1


class StandInLogEnds:
    """Log ends without a broker: the committed offset (1000 + p) plus lag_of(p) plus the refreshes so far."""

    reason: str | None = None

    def __init__(self) -> None:
        self.batches = 0

    def read(self, keys: Iterable[TopicPartition]) -> Mapping[TopicPartition, int]:
        self.batches += 1
        return {(t, p): 1000 + p + lag_of(p) + self.batches for t, p in keys}


def write_group(zk: KazooClient, partitions: int, members: int) -> None:
    """The topic node, the registrations, owner and offset nodes of GROUP, pipelined."""
    assignment = ",".join(f'"{p}":[0]' for p in range(partitions))
    zk.create(
        CHROOT + znodes.topic_path(TOPIC), f'{{"version":1,"partitions":{{{assignment}}}}}'.encode(), makepath=True
    )
    ids = [f"{GROUP}_host{m}-{1_700_000_000_000 + m}-{m:08x}" for m in range(members)]
    registration = Registration(((TOPIC, 1),), "static", str(int(time.time() * 1000)), 1).encode()
    for m, cid in enumerate(ids):
        zk.create(CHROOT + znodes.member_path(GROUP, cid), registration, ephemeral=True, makepath=True)
        if m % 2 == 0:
            zk.create(CHROOT + znodes.zkconsumer_members_path(GROUP) + "/" + cid, b"", ephemeral=True, makepath=True)
    zk.ensure_path(CHROOT + znodes.owners_path(GROUP, TOPIC))
    zk.ensure_path(CHROOT + znodes.offsets_path(GROUP, TOPIC))
    pending = []
    per = -(-partitions // members)
    for p in range(partitions):
        owner = f"{ids[p // per]}-0"
        pending.append(zk.create_async(CHROOT + znodes.owner_path(GROUP, TOPIC, p), owner.encode(), ephemeral=True))
        pending.append(zk.create_async(CHROOT + znodes.offset_path(GROUP, TOPIC, p), str(1000 + p).encode()))
    for result in pending:
        result.get(timeout=60)


def fill_history(exporter: Exporter) -> None:
    """An hour of points up to the last refresh, from the group's current verdict (as if it had run
    that long), in a history of its own that then replaces the exporter's."""
    state = exporter.view.state
    history = LagHistory(exporter.interval_s)
    step_ms = int(history.step_s * 1000)
    verdicts = {GROUP: state.groups[GROUP].verdict}
    for i in range(history.capacity - 1, -1, -1):
        history.record(state.at_ms - i * step_ms, verdicts)
    exporter.history = history


def fetch(url: str, times: int = 5) -> tuple[int, float]:
    """(size in bytes, median ms) of `times` GETs of `url`: the exporter's side of a page refresh."""
    took, size = [], 0
    for _ in range(times):
        began = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:
            size = len(answer.read())
        took.append((time.perf_counter() - began) * 1000)
    return size, statistics.median(took)


def measure(browser: Chromium, url: str, rounds: int, interval_s: float) -> tuple[list[float], list[float], int]:
    """(first render ms, refresh ms) of each round, and the page's cell count."""
    first, refresh, cells = [], [], 0
    with browser.page(timeout_s=60) as page:
        for _ in range(rounds):
            page.navigate("about:blank")
            page.navigate(url)
            page.wait_for("window.zkPage && window.zkPage.renders >= 1 && window.zkPage.group !== null", 60)
            if page.evaluate("document.getElementById('error').hidden") is not True:
                raise SystemExit(
                    f"the page shows an error: {page.evaluate('document.getElementById(`error`).textContent')}"
                )
            first.append(float(page.evaluate("window.zkPage.firstRenderMs")))
            page.wait_for("window.zkPage.renders >= 2", interval_s * 4 + 30)
            refresh.append(float(page.evaluate("window.zkPage.lastRefreshMs")))
            cells = int(page.evaluate("document.querySelectorAll('.grid i').length"))
    return first, refresh, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=4096)
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--interval", type=float, default=2.0, help="the exporter's refresh interval, seconds")
    parser.add_argument("--zookeeper", help="HOST:PORT of a running ZooKeeper (default: start a local cluster)")
    parser.add_argument("--screenshot", type=Path, help="write a screenshot of the last round's page here")
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="page-load-")))
        hosts = args.zookeeper
        if hosts is None:
            cluster = stack.enter_context(LocalCluster(brokers=1, chroot="/kafka", workdir=tmp / "cluster"))
            hosts = cluster.zookeeper_hosts
        writer = connect(hosts, session_timeout_s=30.0, connect_timeout_s=10.0)
        stack.callback(close_quietly, writer, 10)
        if writer.exists(CHROOT):
            writer.delete(CHROOT, recursive=True)
        stack.callback(lambda: writer.delete(CHROOT, recursive=True))
        write_group(writer, args.partitions, args.members)
        client = connect(hosts + CHROOT, session_timeout_s=30.0, connect_timeout_s=10.0)
        stack.callback(close_quietly, client, 10)
        exporter = Exporter(
            client,
            StandInLogEnds(),  # type: ignore[arg-type]  # the view's LogEndSource, as LogEnds is
            host="127.0.0.1",
            port=0,
            interval_s=args.interval,
            window_s=60,
        )
        exporter.start()
        stack.callback(exporter.stop, 30)
        exporter.wait_for_refresh(0, timeout_s=120)
        fill_history(exporter)
        base = f"http://127.0.0.1:{exporter.port}"
        overview, overview_ms = fetch(f"{base}/v1/groups/{GROUP}/overview")
        history, history_ms = fetch(f"{base}/v1/groups/{GROUP}/history")
        points = exporter.history.points(GROUP)
        browser = stack.enter_context(Chromium(tmp / "chromium"))
        first, refresh, cells = measure(browser, f"{base}/#group={GROUP}", args.rounds, args.interval)
        if args.screenshot is not None:
            with browser.page() as page:
                page.screenshot(args.screenshot)
    print(f"first render ms per round: {' '.join(f'{v:.0f}' for v in first)}")
    print(f"refresh ms per round: {' '.join(f'{v:.0f}' for v in refresh)}")
    print(
        f"partitions={args.partitions} members={args.members} rounds={args.rounds} overview_bytes={overview} "
        f"overview_ms={overview_ms:.0f} history_bytes={history} history_ms={history_ms:.0f} history_points={len(points['at_ms']) if points else 0} "
        f"first_render_ms={statistics.median(first):.0f} first_render_max_ms={max(first):.0f} "
        f"refresh_ms={statistics.median(refresh):.0f} refresh_max_ms={max(refresh):.0f} dom_cells={cells} "
        f"load1={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
