"""Run every `zkconsumer` help and a set of live commands under two checkouts and compare them byte for byte.

    .venv/bin/python scripts/cli_compare.py --before /path/to/old-checkout --after . [--out FOLDER]

Starts one local cluster (ZooKeeper + one Kafka broker, from this checkout's test kit and jars),
seeds it (scripts/cli_compare_cases.py lists the command lines):

- topics `orders` (4 partitions), `events` (3) and `single` (1), 30 messages in each partition;
- `settled` and `multi`: offsets committed in ZooKeeper, no members;
- `live`: one zkconsumer member (a ConsumerConnector of the --before checkout, in a subprocess)
  that read and committed everything, then 5 more messages per partition of `orders`;
- `held`: offsets, and an owner node held by a session that is no member's (this script's);
- `odd`: offset nodes that are garbled, negative, beyond the log, of a partition or topic that
  does not exist, and a registration nobody can parse; `empty`: a group node only;
- `kafkagroup`: offsets committed to Kafka (and others in ZooKeeper);
- `scratch` (and `peek`, which `consume` joins): seeded again before each checkout's run of a
  command that writes them, whose ZooKeeper data (and, for `migrate offsets`, Kafka-committed
  offsets) after the run is compared too.

Each command runs as `python -c <main()>` with PYTHONPATH=<checkout>, in one work folder (so
paths in the output are the same): a command that only reads runs under both checkouts at once, one
that writes (Case.alone) under --before, then under --after, each from the same seeded state. Exit
status, stdout and stderr are compared after the normalisations in NORMALISE, the only things that
differ between two runs of the same code. One line per command, a unified diff per difference, a
summary, and last a line of key=value pairs. Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli_compare_cases import COMMITTED, MESSAGES, SCRATCH, TOPICS, Case, live_cases, write_import_files  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from zkconsumer.testing.cluster import LocalCluster  # noqa: E402

CLI = "import sys; from zkconsumer.cli.main import main; sys.argv[0] = 'zkconsumer'; main()"
RUN_TIMEOUT = 90.0

# (what varies between two runs of the same code, pattern, replacement). Nothing else is touched.
NORMALISE: list[tuple[str, re.Pattern[str], str]] = [
    ("top's clock in its header line", re.compile(r"^(group \S+  )\d\d:\d\d:\d\d(  )", re.M), r"\1HH:MM:SS\2"),
    (
        "rebalance's nudge child: <group>_zkconsumer-rebalance-<ms>-<random>",
        re.compile(r"(_zkconsumer-rebalance-)\d+-[0-9a-f]+"),
        r"\1MS-RANDOM",
    ),
    (
        "rebalance's wait: owned N.NN s after the nudge",
        re.compile(r"\b\d+\.\d\d s after the nudge"),
        "N.NN s after the nudge",
    ),
]

MEMBER = """\
import signal, sys, threading
from zkconsumer import ConsumerConnector, ConsumerTimeout
config = {"zookeeper.connect": sys.argv[1], "group.id": "live", "consumer.id": "alpha",
          "auto.commit.enable": False, "auto.offset.reset": "smallest", "consumer.timeout.ms": 3000}
signal.signal(signal.SIGTERM, lambda *_: sys.exit())
def drain(stream):
    try:
        for _ in stream:
            pass
    except ConsumerTimeout:
        pass
try:
    with ConsumerConnector(config) as conn:
        threads = [threading.Thread(target=drain, args=(s,)) for s in conn.create_message_streams({"orders": 2})["orders"]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        conn.commit_offsets()
        print("committed", flush=True)
        signal.pause()
except SystemExit:
    pass
"""


def checkout_env(tree: Path) -> dict[str, str]:
    """The environment of a CLI run: ours without ZKCONSUMER_* settings, the checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZKCONSUMER_")}
    # Not normalisations but the same setting for both: help text wraps to COLUMNS whatever terminal
    # this runs in, and a fixed hash seed gives both runs the same set order.
    env.update(PYTHONPATH=str(tree), COLUMNS="100", LINES="40", PYTHONHASHSEED="0")
    return env


def check_checkout(tree: Path, work: Path) -> None:
    """Exit unless `zkconsumer` imports from inside `tree` and its test kit finds the jars there."""
    probe = (
        "import zkconsumer; from zkconsumer.testing.jars import jars_home; "
        "print(zkconsumer.__file__); print(jars_home())"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=checkout_env(tree), cwd=work, capture_output=True, text=True, check=False
    )
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or not Path(lines[0]).resolve().is_relative_to(tree):
        sys.exit(f"{tree}: zkconsumer does not import from it: {done.stdout}{done.stderr}")
    jars = Path(lines[1])
    if not jars.is_dir() or not any(jars.iterdir()):
        sys.exit(f"{tree}: its test kit looks for jars in {jars}, which holds none")
    print(f"checkout {tree}: zkconsumer from {lines[0]}, jars in {jars}")


def help_commands(tree: Path, work: Path, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """`path` and every command below it, read from the `Commands:` lists of the CLI's own --help."""
    done = subprocess.run(
        [sys.executable, "-c", CLI, *path, "--help"], env=checkout_env(tree), cwd=work, capture_output=True, text=True
    )
    found = [path]
    listing = done.stdout.split("\nCommands:\n", 1)
    if len(listing) == 2:
        for name in re.findall(r"^  (\S+)", listing[1], re.M):
            found += help_commands(tree, work, (*path, name))
    return found


class Seeder:
    """Writes the groups the commands read, through one ZooKeeper session kept for the whole run."""

    def __init__(self, cluster: LocalCluster, before: Path, work: Path) -> None:
        self.cluster = cluster
        self.zk = cluster.zk_client()
        self.before = before
        self.work = work
        self.member: subprocess.Popen[str] | None = None

    def put(self, path: str, data: str, *, ephemeral: bool = False) -> None:
        self.zk.create(path, data.encode(), makepath=True, ephemeral=ephemeral)

    def offsets(self, group: str, offsets: dict[str, list[int]]) -> None:
        for topic, values in offsets.items():
            for partition, offset in enumerate(values):
                self.put(f"/consumers/{group}/offsets/{topic}/{partition}", str(offset))

    def produce(self, topic: str, partitions: int, first: int, count: int) -> None:
        producer = Producer({"bootstrap.servers": self.cluster.bootstrap_servers})
        for partition in range(partitions):
            for i in range(first, first + count):
                producer.produce(topic, key=f"k{i}", value=f"{topic}-{partition}-{i}", partition=partition)
        if producer.flush(60):
            sys.exit(f"{topic}: messages not delivered within 60 s")

    def seed(self) -> None:
        bootstrap = self.cluster.bootstrap_servers
        for topic, partitions in TOPICS.items():
            self.cluster.create_topic(topic, partitions)
            self.produce(topic, partitions, 0, MESSAGES)
        self.offsets("settled", COMMITTED)
        self.reseed_scratch(SCRATCH)
        self.offsets("multi", {"orders": [1, 2, 3, 4], "events": [6, 7, 8]})
        self.offsets("held", {"orders": [3, 3, 3, 3]})
        self.put("/consumers/held/ids", "")
        self.put("/consumers/held/owners/orders/0", "held_ghost-0", ephemeral=True)
        for node, data in [("0", "garbage"), ("1", "-5"), ("2", "999999"), ("3", ""), ("42", "3")]:
            self.put(f"/consumers/odd/offsets/orders/{node}", data)
        self.put("/consumers/odd/offsets/missing-topic/0", "1")
        self.put("/consumers/odd/ids/odd_member", "not json")
        self.put("/consumers/empty", "")
        self.offsets("kafkagroup", {"orders": [1, 1, 1, 1]})
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkagroup", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("orders", p, 10 + p) for p in range(4)], asynchronous=False)
        consumer.close()
        script = self.work / "live_member.py"
        script.write_text(MEMBER)
        self.member = subprocess.Popen(
            [sys.executable, str(script), self.cluster.zookeeper_connect],
            env=checkout_env(self.before),
            cwd=self.work,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.member.stdout is not None
        if self.member.stdout.readline().strip() != "committed":
            sys.exit("the live member did not commit")
        self.produce("orders", TOPICS["orders"], MESSAGES, 5)  # lag 5 per partition for `live`

    def reseed_scratch(self, group: str, *, kafka: bool = False) -> None:
        """Put `group` back as seeded: SCRATCH with `settled`'s offsets of orders, any other gone
        (and, with `kafka`, no Kafka-committed offsets)."""
        self.zk.delete(f"/consumers/{group}", recursive=True)
        if group == SCRATCH:
            self.offsets(group, {"orders": COMMITTED["orders"]})
        if kafka:
            admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers})
            for future in admin.delete_consumer_groups([group]).values():
                try:
                    future.result()
                except Exception as exc:  # absent the first time: GROUP_ID_NOT_FOUND
                    if "GROUP_ID_NOT_FOUND" not in str(exc):
                        raise

    def zookeeper_state(self, group: str) -> str:
        """Every node under /consumers/<group> with its data, sorted (what a write left)."""
        lines: list[str] = []

        def walk(path: str) -> None:
            data, _ = self.zk.get(path)
            lines.append(f"{path} = {data.decode(errors='replace')!r}")
            for child in sorted(self.zk.get_children(path)):
                walk(f"{path}/{child}")

        if self.zk.exists(f"/consumers/{group}"):
            walk(f"/consumers/{group}")
        else:
            lines.append(f"/consumers/{group} does not exist")
        return "\n".join(lines) + "\n"

    def kafka_state(self, group: str) -> str:
        consumer = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": group})
        try:
            parts = [TopicPartition(t, p) for t, n in sorted(TOPICS.items()) for p in range(n)]
            committed = consumer.committed(parts, timeout=30)
        finally:
            consumer.close()
        return "".join(f"kafka {group} {tp.topic}/{tp.partition} = {tp.offset}\n" for tp in committed)

    def close(self) -> None:
        if self.member is not None:
            self.member.terminate()
            self.member.wait(30)
        self.zk.stop()
        self.zk.close()


def run(tree: Path, case: Case, zookeeper: str, work: Path, seeder: Seeder) -> str:
    """The record of one run: exit status, stdout, stderr, and what it left where it writes."""
    for group in case.scratch:
        seeder.reseed_scratch(group, kafka=case.kafka_scratch)
    for name in case.files:
        (work / name).unlink(missing_ok=True)
    args = [*case.args, *(("--zookeeper", zookeeper) if case.zookeeper else ())]
    try:
        done = subprocess.run(
            [sys.executable, "-c", CLI, *args],
            env=checkout_env(tree),
            cwd=work,
            capture_output=True,
            timeout=RUN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        status, out, err = str(done.returncode), done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        status, out, err = f"killed after {RUN_TIMEOUT:.0f} s", exc.stdout or b"", exc.stderr or b""
    record = [f"exit status: {status}\n", "--- stdout\n", out.decode(errors="replace"), "--- stderr\n"]
    record.append(err.decode(errors="replace"))
    for group in case.scratch:
        record += [f"--- ZooKeeper after the run: {group}\n", seeder.zookeeper_state(group)]
        if case.kafka_scratch:
            record += [f"--- Kafka after the run: {group}\n", seeder.kafka_state(group)]
        seeder.reseed_scratch(group)  # as seeded again for the read-only commands that follow
    for name in case.files:
        path = work / name
        record += [f"--- file {name}\n", path.read_text() if path.exists() else "(not written)\n"]
    return normalise("".join(record))


def normalise(text: str) -> str:
    for _, pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return text


def compare(
    cases: list[Case], trees: tuple[Path, Path], runner: Callable[[Path, Case], str], out: Path
) -> tuple[int, list[str]]:
    """Run each case under both trees; print a line each (and a diff when they differ)."""
    different: list[str] = []
    pool = ThreadPoolExecutor(2)
    for number, case in enumerate(cases, 1):
        began = time.monotonic()
        if case.alone:
            records = [runner(tree, case) for tree in trees]
        else:  # it only reads: both runs at once, on the same state
            records = list(pool.map(runner, trees, [case, case]))
        took = time.monotonic() - began
        for side, record in zip(("before", "after"), records):
            (out / f"{number:03d}.{side}.txt").write_text(f"$ zkconsumer {' '.join(case.args)}\n{record}")
        same = records[0] == records[1]
        print(f"{number:3d} {'same     ' if same else 'DIFFERENT'} {took:4.1f}s {case.label}", flush=True)
        if not same:
            different.append(case.label)
            diff = difflib.unified_diff(
                records[0].splitlines(keepends=True),
                records[1].splitlines(keepends=True),
                f"before: zkconsumer {' '.join(case.args)}",
                "after",
            )
            sys.stdout.writelines("      " + line if line.endswith("\n") else f"      {line}\n" for line in diff)
    pool.shutdown()
    return len(cases), different


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout before the change")
    parser.add_argument("--after", type=Path, required=True, help="the checkout after the change")
    parser.add_argument("--out", type=Path, help="folder for every run's record (default: a new temporary one)")
    args = parser.parse_args()
    before, after = args.before.resolve(), args.after.resolve()
    out = (args.out or Path(tempfile.mkdtemp(prefix="cli-compare-"))).resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    logging.getLogger("kazoo.client").setLevel(logging.ERROR)  # "Connection dropped" while ZooKeeper starts
    for tree in (before, after):
        check_checkout(tree, work)
    print("normalised in both outputs:", "; ".join(what for what, _, _ in NORMALISE))
    helps = sorted(set(help_commands(before, work)) | set(help_commands(after, work)))
    cases = [Case(f"help {' '.join(path)}".strip(), (*path, "--help"), zookeeper=False) for path in helps]
    cases.append(Case("help -h", ("-h",), zookeeper=False))
    write_import_files(work)
    with LocalCluster(brokers=1, chroot="/cli-compare", workdir=out / "cluster") as cluster:
        seeder = Seeder(cluster, before, work)
        try:
            seeder.seed()
            print(f"cluster {cluster.zookeeper_connect} seeded in {time.monotonic() - began:.0f}s; records in {out}")
            cases += live_cases(cluster.zookeeper_connect, cluster.bootstrap_servers)

            def runner(tree: Path, case: Case) -> str:
                return run(tree, case, cluster.zookeeper_connect, work, seeder)

            total, different = compare(cases, (before, after), runner, out)
        finally:
            seeder.close()
    print(f"\n{total} commands ({len(helps) + 1} --help), {total - len(different)} same, {len(different)} different")
    for label in different:
        print(f"  DIFFERENT: {label}")
    print(f"took {time.monotonic() - began:.0f}s; every run's record is in {out}")
    print(
        f"commands={total} same={total - len(different)} different={len(different)} seconds={time.monotonic() - began:.0f}"
    )
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
