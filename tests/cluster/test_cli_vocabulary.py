"""The old tools' vocabulary on a real cluster: kafka-consumer-groups' reset options and CSV, the console
consumer's --partition/--offset/print.* and earliest|latest, ConsumerOffsetChecker's --topic a,b."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.members import committed_offsets
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

ZKCONSUMER = os.path.join(os.path.dirname(sys.executable), "zkconsumer")


def run_cli(cluster, *args: str) -> subprocess.CompletedProcess[bytes]:  # type: ignore[no-untyped-def]
    """The installed command in its own process (consume handles signals and joins a group)."""
    return subprocess.run(
        [ZKCONSUMER, *args, "--zookeeper", cluster.zookeeper_connect], capture_output=True, timeout=90
    )


def test_consume_one_partition_from_an_offset_writes_nothing(cluster, zk, topic_factory, produce) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)  # partition 1 offset o holds "<topic>-<2o+1>"
    groups_before = set(zk.get_children(znodes.CONSUMERS))
    proc = run_cli(
        cluster,
        "consume",
        "-t",
        topic,
        "--partition",
        "1",
        "--offset",
        "3",
        "--max-messages",
        "2",
        "--property",
        "print.offset=true",
        "--property",
        "print.headers=true",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines() == [f"Offset:3\tNO_HEADERS\t{topic}-7", f"Offset:4\tNO_HEADERS\t{topic}-9"]
    assert set(zk.get_children(znodes.CONSUMERS)) == groups_before  # no group was registered

    keys_only = run_cli(
        cluster, "consume", "-t", topic, "--partition", "0", "--offset", "earliest", "--max-messages", "1",
        "--property", "print.key=true", "--property", "print.value=false", "--property", "print.partition=true",
    )  # fmt: skip
    assert keys_only.returncode == 0 and keys_only.stdout == b"Partition:0\tnull\n", keys_only.stderr

    past = run_cli(cluster, "consume", "-t", topic, "--partition", "1", "--offset", "999", "--max-messages", "1")
    assert past.returncode == 2
    assert past.stderr.decode().strip() == (
        f"zkconsumer: error: --offset: {topic}-1: offset 999 is beyond the log end; the log holds [0, 10]"
    )
    missing = run_cli(cluster, "consume", "-t", topic, "--partition", "5", "--max-messages", "1")
    assert missing.returncode == 2 and f"topic {topic} has no partition 5" in missing.stderr.decode()


def test_consume_takes_earliest_as_smallest_without_from_beginning(cluster, zk, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 5, partitions=1)
    proc = run_cli(
        cluster, "consume", "-t", topic, "--consumer-property", "auto.offset.reset=earliest", "--max-messages", "3"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines() == [f"{topic}-0", f"{topic}-1", f"{topic}-2"]


def test_describe_takes_the_offset_checkers_topic_list(zk, run, topic_factory, group_id) -> None:
    a, b, c = (topic_factory(partitions=2) for _ in range(3))
    for topic in (a, b, c):
        for p in (0, 1):
            zk.create(znodes.offset_path(group_id, topic, p), b"0", makepath=True)
    both = run("groups", "describe", "-g", group_id, "-t", f"{a},{b}", "--json")
    assert both.exit_code == 0, both.output
    rows = {(r["topic"], r["partition"]) for r in json.loads(both.stdout)["partitions"]}
    assert rows == {(a, 0), (a, 1), (b, 0), (b, 1)}
    one = run("groups", "describe", "-g", group_id, "--topic", f"{a}:1", "--json")
    assert {(r["topic"], r["partition"]) for r in json.loads(one.stdout)["partitions"]} == {(a, 1)}

    every = run("groups", "describe", "--all-groups", "-t", c, "--json")
    assert every.exit_code == 0, every.output
    docs = [json.loads(line) for line in every.stdout.splitlines()]  # one line per group
    assert group_id in {doc["group"] for doc in docs}


def test_reset_to_current_exports_csv_that_import_reads_back(zk, run, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)
    for p, offset in {0: 4, 1: 6}.items():
        zk.create(znodes.offset_path(group_id, topic, p), str(offset).encode(), makepath=True)

    exported = run("offsets", "reset", "-g", group_id, "-t", topic, "--to-current", "--dry-run", "--export")
    assert exported.exit_code == 0, exported.output
    assert exported.stdout == f"{topic},0,4\n{topic},1,6\n"
    csv = run("offsets", "export", "-g", group_id, "--format", "csv")
    assert csv.stdout == exported.stdout

    hour = run("offsets", "reset", "-g", group_id, "--all-topics", "--by-duration", "PT1H", "--execute", "--json")
    assert hour.exit_code == 0, hour.output
    assert committed_offsets(zk, group_id, topic) == {0: 0, 1: 0}  # every message is younger than an hour
    assert json.loads(hour.stdout)["executed"] is True

    back = run("offsets", "import", "--format", "csv", "-g", group_id, "-i", "-", "--execute", input=exported.stdout)
    assert back.exit_code == 0, back.output
    assert committed_offsets(zk, group_id, topic) == {0: 4, 1: 6}
    plan = run("offsets", "import", "--format", "csv", "-g", group_id, "-i", "-", "--json", input=exported.stdout)
    assert plan.stdout.count("\n") == 1 and json.loads(plan.stdout)["executed"] is False
