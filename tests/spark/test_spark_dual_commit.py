"""Dual commit from a stream: a query whose group migrates off ZooKeeper commits each batch to ZooKeeper and to the brokers' group."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import ZKCONSUMER, sink_rows, wait_until
from test_spark_stop_commit import left_the_group, sink_ends

from harness.members import committed_offsets, kafka_offsets
from zkconsumer.testing import kafka

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

PARTITIONS = 3
BLOCKED = 3  # migrate's exit status when a blocker stands in the way (here: the live query)
DUAL = {"offsets.storage": "kafka", "dual.commit.enabled": "true"}  # the connector's properties, as docs/migration.md


def migrate(cluster: Any, *args: str) -> tuple[int, dict[str, Any]]:
    """`zkconsumer migrate ... --json`, run as the installed CLI: (exit status, document)."""
    done = subprocess.run(
        [ZKCONSUMER, "migrate", *args, "--zookeeper", cluster.zookeeper_connect, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def run(spark, cluster, zk, stream_reader, topic, group, folder: Path, *, dual: bool) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """60 rows, then 30 more while the query runs, then a graceful stop; returns the sink's ends
    (checked free of gaps and duplicates). With `dual`, batch 0's end must reach the brokers too."""
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 60, partitions=PARTITIONS)
    checkpoint = folder / "checkpoint"
    df = stream_reader(
        group, topic, startingOffsets="earliest", checkpointLocation=str(checkpoint), **(DUAL if dual else {})
    )
    query = (
        df.writeStream.format("parquet")
        .option("path", str(folder / "out"))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        # The trigger after batch 0 completed commits its end (the planning commit).
        first = {p: 20 for p in range(PARTITIONS)}
        wait_until(lambda: committed_offsets(zk, group, topic) == first, 120, "batch 0's end in ZooKeeper", query)
        if dual:  # the brokers' group follows in the same commit, right after ZooKeeper
            wait_until(
                lambda: kafka_offsets(cluster.bootstrap_servers, group, topic, PARTITIONS) == first,
                30,
                "batch 0's end on the brokers",
                query,
            )
            code, plan = migrate(cluster, "plan", "--group", group)
            assert code == BLOCKED and plan["step"]["name"] == "dual-commit-live", plan
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 30, partitions=PARTITIONS, start=60)
        wait_until(lambda: len(sink_rows(spark, str(folder / "out"))) == 90, 120, "all 90 rows in the sink", query)
    finally:
        query.stop()
    wait_until(lambda: left_the_group(zk, group), 30, "the query to leave the group")
    return sink_ends(sink_rows(spark, str(folder / "out")))


def test_dual_commit_writes_each_batch_to_zookeeper_and_to_the_brokers_group(
    spark: Any, cluster: Any, zk: Any, stream_reader: Any, topic_factory: Any, group_id: str, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    ends = run(spark, cluster, zk, stream_reader, topic, group_id, tmp_path, dual=True)
    assert ends == {p: 30 for p in range(PARTITIONS)}
    zookeeper = committed_offsets(zk, group_id, topic)
    assert zookeeper == ends, "the graceful stop committed the last batch the sink committed"
    brokers = kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS)
    assert brokers == zookeeper, "per partition, the brokers' group holds what ZooKeeper holds"
    code, copy = migrate(cluster, "offsets", "--group", group_id, "--to", "kafka")  # the guide's switch step
    assert code == 0 and {row["action"] for row in copy["partitions"]} == {"already-equal"}, copy


def test_without_dual_commit_nothing_is_committed_to_the_brokers(
    spark: Any, cluster: Any, zk: Any, stream_reader: Any, topic_factory: Any, group_id: str, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    ends = run(spark, cluster, zk, stream_reader, topic, group_id, tmp_path, dual=False)
    assert committed_offsets(zk, group_id, topic) == ends == {p: 30 for p in range(PARTITIONS)}
    assert kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS) == {}
