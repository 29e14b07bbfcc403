"""The exporter's web page in a real headless Chromium: the groups, the ownership map, lag per partition and the chart show what ZooKeeper holds, and refresh by themselves."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from harness import members
from harness.chromium import Chromium
from harness.devtools import DevTools
from harness.members import Recorder, drain, keys_of, wait_for_balanced
from harness.scala import ScalaMember
from tests.cluster.test_exporter import ExporterProcess, eventually
from zkconsumer import ConsumerConnector
from zkconsumer.testing.probes import ClusterStartError
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.ecosystem]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "images" / "exporter-group-page.png"
PARTITIONS = 4
PER_PARTITION = 10

# What the page renders, read back from its DOM (not from the JSON it fetched): per grid cell the
# member its colour names (the legend's order) and whether it is striped (a Scala member); the
# partition table's lag column; the members table; the chart's points turned back into values
# through the scale the SVG carries.
READ_PAGE = """(() => {
  const legend = [...document.querySelectorAll('#owner-legend [data-member]')].map((e) => e.dataset.member);
  const owners = {};
  document.querySelectorAll('.grid.owners').forEach((grid) => {
    const t = window.zkPage.overview.topics[Number(grid.dataset.topic)];
    [...grid.children].forEach((cell, i) => {
      const m = cell.className.match(/\\bo(\\d+)\\b/);
      owners[`${t.topic}/${t.partition[i]}`] = cell.classList.contains('unowned') ? null
        : cell.classList.contains('gone') ? 'gone' : [legend[Number(m[1])], cell.classList.contains('scala')];
    });
  });
  const lags = {};
  document.querySelectorAll('#partitions tbody tr').forEach((row) => {
    const text = row.querySelector('td.lag').textContent.replace(/,/g, '');
    lags[`${row.dataset.topic}/${row.dataset.partition}`] = text === '–' ? null : Number(text);
  });
  const people = [...document.querySelectorAll('#members tbody tr')].map((row) =>
    [row.dataset.member, row.cells[1].textContent, row.cells[2].textContent]);
  const svg = document.querySelector('#lag-chart svg');
  const [L, T, w, h] = svg.dataset.plot.split(' ').map(Number);
  const ymax = Number(svg.dataset.ymax);
  const chart = [...svg.querySelectorAll('polyline')].flatMap((line) => line.getAttribute('points').split(' ')
    .map((pt) => Math.round(ymax * (1 - (Number(pt.split(',')[1]) - T) / h))));
  return {group: window.zkPage.overview.group, status: document.querySelector('#group-name .badge').textContent,
          todo: document.getElementById('todo').textContent, owners, lags, people, chart,
          history: window.zkPage.history.lag, now: document.querySelector('#lag-chart .now').textContent};
})()"""


ROWS = """[...document.querySelectorAll('#groups tbody tr')].map((r) => [r.dataset.group, r.cells[1].textContent,
  ...[2, 3, 4, 5].map((i) => Number(r.cells[i].textContent.replace(/,/g, '')))])"""


def truth(zk, group: str, topic: str, log_end: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """What ZooKeeper holds of `group`: each partition's owner (consumer id, Scala or not) and lag, its members."""
    marked = set(zk.get_children(znodes.zkconsumer_members_path(group))) if zk.exists(
        znodes.zkconsumer_members_path(group)) else set()  # fmt: skip
    ids = zk.get_children(znodes.ids_path(group)) if zk.exists(znodes.ids_path(group)) else []
    people = sorted(
        [
            cid,
            "zkconsumer" if cid in marked else "Scala",
            f"0x{zk.get(znodes.member_path(group, cid))[1].ephemeralOwner:x}",
        ]
        for cid in ids
    )
    owners: dict[str, Any] = {}
    lags: dict[str, int] = {}
    for p in range(PARTITIONS):
        key = f"{topic}/{p}"
        owner = zk.exists(znodes.owner_path(group, topic, p))
        if owner is None:
            owners[key] = None
        else:
            cid = znodes.consumer_id_of_thread(zk.get(znodes.owner_path(group, topic, p))[0].decode())
            owners[key] = [cid, cid not in marked]
        offset = zk.exists(znodes.offset_path(group, topic, p))
        committed = int(zk.get(znodes.offset_path(group, topic, p))[0]) if offset else 0
        lags[key] = log_end - committed
    return {"owners": owners, "lags": lags, "people": people, "total": sum(lags.values())}


def read_page(page: DevTools, group: str) -> dict[str, Any] | None:
    found = page.evaluate(f"window.zkPage && window.zkPage.overview && window.zkPage.group === {json.dumps(group)}"
                          f" && document.querySelector('#lag-chart svg') ? {READ_PAGE} : null")  # fmt: skip
    return found if found and found["group"] == group else None


def shows(page: DevTools, group: str, want: dict[str, Any]) -> dict[str, Any] | None:
    """The page's reading once it matches ZooKeeper's truth (None until then)."""
    seen = read_page(page, group)
    if seen is None:
        return None
    same = (seen["owners"], seen["lags"], seen["people"]) == (want["owners"], want["lags"], want["people"])
    return seen if same and seen["chart"] and seen["chart"][-1] == want["total"] else None


def test_the_page_shows_the_true_ownership_lag_and_history(  # type: ignore[no-untyped-def]
    cluster, zk, topic_factory, produce, group_id, tmp_path
) -> None:
    exporter = ExporterProcess(cluster.zookeeper_connect, tmp_path / "exporter.log")
    # Short names, unique in this run: the screenshot in the docs shows them whole.
    tag = "-".join(group_id.rsplit("-", 2)[-2:])  # the process and a counter
    topic = topic_factory(partitions=PARTITIONS, name=f"orders-{tag}")
    live, stopped, mixed = (f"billing-{tag}-{kind}" for kind in ("live", "stopped", "mixed"))
    for partition in range(PARTITIONS):  # no member: 4, 5, 6, 7 of 10 consumed
        zk.create(znodes.offset_path(stopped, topic, partition), str(4 + partition).encode(), makepath=True)
    # The mixed group: a Scala member committing every 0.5 s beside a zkconsumer member that commits
    # once, so that its partitions lag and the Scala member's do not.
    committing = {"auto.commit.enable": "true", "auto.commit.interval.ms": 500}
    scala = ScalaMember(cluster.zookeeper_connect, mixed, "s", workdir=tmp_path / "s", topics={topic: 1},
                        properties=committing).start()  # fmt: skip
    base = {"zookeeper.connect": cluster.zookeeper_connect, **members.FAST, "auto.commit.enable": False}
    recorder, mixed_recorder = Recorder(), Recorder()
    try:
        scala.wait_ready()
        with (
            ConsumerConnector({**base, "group.id": live, "consumer.id": "a"}) as conn,
            ConsumerConnector({**base, "group.id": mixed, "consumer.id": "z"}) as mixed_conn,
        ):
            drain("a", conn.create_message_streams({topic: 1})[topic], recorder)
            drain("z", mixed_conn.create_message_streams({topic: 1})[topic], mixed_recorder)
            wait_for_balanced(zk, live, [topic], members=1)
            owners = wait_for_balanced(zk, mixed, [topic], members=2)
            mine = [p for (_, p), thread in owners.items() if thread.startswith(f"{mixed}_z-")]
            # Produced once both groups are balanced: a Scala member alone in the group before would
            # read and commit every partition, leaving the zkconsumer member nothing to deliver.
            produce(topic, PARTITIONS * PER_PARTITION, partitions=PARTITIONS)
            recorder.wait_for({(topic, p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}, timeout=60)
            mixed_recorder.wait_for({(topic, p, o) for p in mine for o in range(PER_PARTITION)}, timeout=60)
            conn.commit_offsets()  # at 10 each
            mixed_conn.commit_offsets()
            # 3 more per partition, read by both zkconsumer members, committed by neither (lag 3 each).
            more = keys_of(produce(topic, 3 * PARTITIONS, partitions=PARTITIONS, start=40))
            recorder.wait_for(more, timeout=60)
            mixed_recorder.wait_for({k for k in more if k[1] in mine}, timeout=60)
            log_end = PER_PARTITION + 3
            eventually(lambda: truth(zk, mixed, topic, log_end)["total"] == 3 * len(mine), "the Scala member committed")
            exporter.wait_healthy()
            _check_the_page(zk, exporter, tmp_path, topic, log_end, (live, stopped, mixed))
    finally:
        scala.stop()
        code = exporter.stop()
    assert code == 0, exporter.log_tail()
    assert "Traceback" not in exporter.log_path.read_text()


def _check_the_page(zk, exporter: ExporterProcess, tmp_path: Path, topic: str, log_end: int, groups) -> None:  # type: ignore[no-untyped-def]
    live, stopped, mixed = groups
    try:
        browser = Chromium(tmp_path / "chromium").start()
    except ClusterStartError as exc:
        pytest.fail(f"Chromium did not start:\n{exc}", pytrace=False)
    try:
        with browser.page() as page:
            base = f"http://127.0.0.1:{exporter.port}"
            page.navigate(base + "/")
            # The groups: members, partitions, unowned partitions and lag as ZooKeeper has them.
            want_rows = {
                group: [len(t["people"]), PARTITIONS, list(t["owners"].values()).count(None), t["total"]]
                for group in groups
                for t in [truth(zk, group, topic, log_end)]
            }

            def groups_listed() -> dict[str, list[Any]] | None:
                rows = {r[0]: r[2:] for r in page.evaluate(ROWS) if r[0] in want_rows}
                return rows if rows == want_rows else None

            eventually(groups_listed, f"the groups list shows {want_rows}", timeout=30)
            assert {r[0]: r[1] for r in page.evaluate(ROWS)}[stopped] == "ERR"

            for group in groups:
                want = truth(zk, group, topic, log_end)
                page.navigate(f"{base}/#group={group}")
                seen = eventually(lambda: shows(page, group, want), f"{group}'s page shows {want}", timeout=30)
                # The chart draws every known point of the history it fetched, and the exporter's
                # history ends at the true lag too.
                assert seen["chart"] == [v for v in seen["history"] if v is not None], seen
                assert exporter.get(f"/v1/groups/{group}/history")[1]["lag"][-1] == want["total"]
                if group == mixed:  # Scala and zkconsumer members told apart: striped cells and solid ones
                    assert {tuple(v) for v in seen["owners"].values()} == {(f"{mixed}_s", True), (f"{mixed}_z", False)}
                    assert sorted(kind for _, kind, _ in seen["people"]) == ["Scala", "zkconsumer"]

            # The page refreshes by itself: a commit of the stopped group shows without a reload.
            page.navigate(f"{base}/#group={stopped}")
            eventually(lambda: read_page(page, stopped), "the stopped group's page", timeout=30)
            renders = page.evaluate("window.zkPage.renders")
            zk.set(znodes.offset_path(stopped, topic, 0), str(log_end).encode())
            want = truth(zk, stopped, topic, log_end)
            seen = eventually(lambda: shows(page, stopped, want), "the stopped group's new commit on its page", 30)
            assert page.evaluate("window.zkPage.renders") > renders
            assert seen["lags"][f"{topic}/0"] == 0 and "No member is registered" in seen["todo"], seen

            # The docs' picture: the mixed group once its chart has a few points (one per 5 s at most).
            page.navigate(f"{base}/#group={mixed}")
            want = truth(zk, mixed, topic, log_end)
            eventually(lambda: (seen := shows(page, mixed, want)) and len(seen["chart"]) >= 4, "4 points", 40)
            page.screenshot(SCREENSHOT)
            _check_hostile_names_and_gone_groups(zk, page, base, topic, stopped)
    finally:
        browser.stop()


SHOWN = """[document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
  document.getElementById('main').innerText, window.pwned === undefined]"""


def _check_hostile_names_and_gone_groups(zk, page: DevTools, base: str, topic: str, stopped: str) -> None:  # type: ignore[no-untyped-def]
    """Names are text, never markup; a hand-typed "%" in the address is a name (the page once stayed
    at "Loading…"); an unknown or deleted group leaves an error and no view of a group (the page once
    kept showing the group it showed before, or the deleted group's last lag and members)."""
    hostile = f'<img src=x onerror="window.pwned=1">{stopped}'
    zk.create(znodes.offset_path(hostile, topic, 0), b"1", makepath=True)
    try:
        page.navigate(f"{base}/")
        eventually(lambda: hostile in [r[0] for r in page.evaluate(ROWS)], "the hostile group listed", timeout=30)
        page.navigate(f"{base}/#group={quote(hostile, safe='')}")
        eventually(
            lambda: page.evaluate("window.zkPage.overview && window.zkPage.overview.group") == hostile, "its page"
        )
        assert page.evaluate("document.getElementById('group-name').textContent").startswith(hostile)
        assert page.evaluate("window.pwned === undefined"), "a group name ran as markup"
    finally:
        zk.delete(znodes.group_path(hostile), recursive=True)
    page.navigate(f"{base}/#group={stopped}")
    eventually(lambda: read_page(page, stopped), "the stopped group's page", timeout=30)
    page.evaluate("location.hash = '#group=100%'")
    error, main, safe = eventually(lambda: (seen := page.evaluate(SHOWN))[0] and seen, "an error for 100%", 30)
    assert "unknown group '100%'" in error and main == "Nothing to show for group 100%." and safe, (error, main)
    page.evaluate(f"location.hash = {json.dumps('#group=' + stopped)}")
    eventually(lambda: read_page(page, stopped), "the stopped group's page again", timeout=30)
    zk.delete(znodes.group_path(stopped), recursive=True)
    error, main, _ = eventually(lambda: (seen := page.evaluate(SHOWN))[0] and seen, "the deleted group's error", 30)
    assert f"unknown group {stopped!r}" in error and main == f"Nothing to show for group {stopped}.", (error, main)


def test_page_load_bench_smoke(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """scripts/bench/page_load.py on a small group of the session cluster's ZooKeeper: its last line is complete."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench" / "page_load.py"), "--zookeeper", cluster.zookeeper_connect,
         "--partitions", "64", "--rounds", "1", "--interval", "1"],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = dict(word.split("=", 1) for word in done.stdout.strip().splitlines()[-1].split())
    assert (last["partitions"], last["rounds"], last["dom_cells"]) == ("64", "1", "128"), last
    assert 0 < float(last["first_render_ms"]) < 30_000 and float(last["refresh_ms"]) > 0, last
    assert int(last["history_points"]) > 1 and int(last["overview_bytes"]) > 0, last
    assert time.monotonic() - began < 120
