"""Demo: a 3-member zkconsumer group on the embedded cluster; one member leaves; nothing is lost; the ops CLI checks it.

Run through scripts/demo.sh (which installs what is needed first).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test harness: tests/harness

from harness import member, python_env  # noqa: E402
from harness.members import owner_table, wait_for_balanced  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402

console = Console()
GROUP = "demo-group"
TOPIC = "demo-orders"
PARTITIONS = 12


def ownership(zk, title: str) -> dict[tuple[str, int], str]:  # type: ignore[no-untyped-def]
    owners = owner_table(zk, GROUP, [TOPIC])
    offsets = {}
    for p in range(PARTITIONS):
        stat = zk.exists(znodes.offset_path(GROUP, TOPIC, p))
        offsets[p] = znodes.decode_offset(zk.get(znodes.offset_path(GROUP, TOPIC, p))[0], "") if stat else "-"
    table = Table(title=title)
    for col in ("partition", f"owner thread (/consumers/{GROUP}/owners/{TOPIC}/<p>)", "committed offset"):
        table.add_column(col)
    for (_, p), owner in sorted(owners.items()):
        table.add_row(str(p), owner, str(offsets[p]))
    console.print(table)
    return owners


DEMO_PROPERTIES = {"auto.commit.interval.ms": 1000, "rebalance.backoff.ms": 500, "rebalance.max.retries": 20}


def spawn(cluster: LocalCluster, workdir: Path, name: str) -> tuple[subprocess.Popen, Path]:  # type: ignore[type-arg]
    out = workdir / f"{name}.deliveries"
    proc = subprocess.Popen(
        member.command(
            cluster.zookeeper_connect, GROUP, TOPIC, out, streams=2, properties=DEMO_PROPERTIES | {"consumer.id": name}
        ),
        stdout=subprocess.PIPE,
        stderr=open(workdir / f"{name}.log", "w"),
        text=True,
        env=python_env(),  # the child finds the harness
    )
    info = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
    console.print(f"  started member [bold]{info['consumer_id']}[/] (pid {proc.pid})")
    return proc, out


def delivered(files: list[Path]) -> list[tuple[int, int]]:
    out = []
    for path in files:
        if path.exists():
            out += [(int(p), int(o)) for _, p, o in (line.split() for line in path.read_text().splitlines() if line)]
    return out


def wait_all(files: list[Path], want: set[tuple[int, int]], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not want <= set(delivered(files)):
        if time.monotonic() > deadline:
            raise SystemExit(f"demo failed: {len(want - set(delivered(files)))} messages never delivered")
        time.sleep(0.2)


def ops_view(cluster: LocalCluster) -> bool:
    """What an operator runs against the live group: `zkconsumer groups describe`, then `zkconsumer verify`."""
    ok = True
    for command in (["groups", "describe", "--group", GROUP, "--members"], ["verify", "--group", GROUP]):
        args = [*command, "--zookeeper", cluster.zookeeper_connect]
        console.print(f"[bold]$ zkconsumer {' '.join(args)}[/]")
        done = subprocess.run([sys.executable, "-m", "zkconsumer.cli.main", *args], timeout=60)  # prints itself
        console.print(f"(exit status {done.returncode})\n")
        ok = ok and done.returncode == 0
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="zkconsumer-demo-"))
    # Our own log lines (librdkafka's among them) go to a file: the terminal shows the demo.
    logging.basicConfig(
        filename=workdir / "demo.log", level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    console.rule("zkconsumer demo")
    with console.status("starting ZooKeeper + Kafka 3.9 (ZooKeeper mode) from jars..."):
        cluster = LocalCluster(brokers=1, chroot="/demo").start()
    console.print(
        f"cluster up in {cluster.start_seconds:.1f}s: zookeeper.connect={cluster.zookeeper_connect} "
        f"bootstrap={cluster.bootstrap_servers}"
    )
    members: dict[str, tuple[subprocess.Popen, Path]] = {}  # type: ignore[type-arg]
    try:
        zk = cluster.zk_client()
        kafka.create_topic(cluster.bootstrap_servers, TOPIC, PARTITIONS)
        console.print(f"/brokers/ids/0 = {zk.get('/brokers/ids/0')[0].decode()}")
        console.print(f"/brokers/topics/{TOPIC} = {zk.get(znodes.topic_path(TOPIC))[0].decode()}")
        console.print("starting 3 members in separate processes (2 streams each, range assignment):")
        for name in ("alpha", "bravo", "charlie"):
            members[name] = spawn(cluster, workdir, name)
        wait_for_balanced(zk, GROUP, [TOPIC], members=3)
        half = args.messages // 2
        sent = kafka.produce_numbered(cluster.bootstrap_servers, TOPIC, half, partitions=PARTITIONS)
        files = [out for _, out in members.values()]
        wait_all(files, {(m.partition, m.offset) for m in sent})
        console.print(f"produced and consumed {half} messages")
        time.sleep(1.5)  # one auto.commit.interval.ms, so the table shows committed progress
        ownership(zk, "ownership with 3 members")

        console.print("[bold]bravo leaves cleanly[/] (SIGTERM: commit, then its ephemeral nodes vanish)")
        proc, _ = members["bravo"]
        left_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        wait_for_balanced(zk, GROUP, [TOPIC], members=2)
        console.print(f"partitions re-owned {time.monotonic() - left_at:.2f}s after bravo left")
        sent += kafka.produce_numbered(
            cluster.bootstrap_servers, TOPIC, args.messages - half, partitions=PARTITIONS, start=half
        )
        wait_all(files, {(m.partition, m.offset) for m in sent})
        time.sleep(1.5)
        ownership(zk, "ownership with 2 members")
        console.rule("the ops side: the live group, as an operator sees it")
        verified = ops_view(cluster)
        got = delivered(files)
        missing = {(m.partition, m.offset) for m in sent} - set(got)
        dupes = len(got) - len(set(got))
        console.print(
            f"[bold green]produced {len(sent)}, delivered {len(set(got))} distinct, "
            f"missing {len(missing)}, duplicates {dupes}[/]"
        )
        zk.stop()
        return 0 if not missing and verified else 1
    finally:
        for proc, _ in members.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        cluster.stop()
        console.print(f"cluster stopped; member logs and demo.log in {workdir}")


if __name__ == "__main__":
    sys.exit(main())
