"""Dual commit from a stream: a query whose group migrates off ZooKeeper commits each batch to ZooKeeper and to the brokers' group."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from spark_helpers import ZKCONSUMER, sink_rows, wait_until
from test_spark_stop_commit import left_the_group, sink_ends

from harness.members import committed_offsets, kafka_offsets
from zkconsumer.testing import kafka

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

PARTITIONS = 3
BLOCKED = 3  # migrate's exit status when a blocker stands in the way (here: the live query)
FIRST = {p: 20 for p in range(PARTITIONS)}  # batch 0's end: the first 60 rows
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


def run(
    spark, cluster, zk, stream_reader, topic, group, folder: Path, *, dual: bool, after_first: Callable[[Any], None]
) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """60 rows, then 30 more while the query runs, then a graceful stop; returns the sink's ends
    (checked free of gaps and duplicates). `after_first(query)` runs once batch 0's end is in ZooKeeper."""
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
        wait_until(lambda: committed_offsets(zk, group, topic) == FIRST, 120, "batch 0's end in ZooKeeper", query)
        after_first(query)
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

    def brokers_follow(query: Any) -> None:  # in the same commit, right after ZooKeeper
        wait_until(
            lambda: kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS) == FIRST,
            30,
            "batch 0's end on the brokers",
            query,
        )
        code, plan = migrate(cluster, "plan", "--group", group_id)
        assert code == BLOCKED and plan["step"]["name"] == "dual-commit-live", plan

    ends = run(spark, cluster, zk, stream_reader, topic, group_id, tmp_path, dual=True, after_first=brokers_follow)
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
    ends = run(spark, cluster, zk, stream_reader, topic, group_id, tmp_path, dual=False, after_first=lambda _q: None)
    assert committed_offsets(zk, group_id, topic) == ends == {p: 30 for p in range(PARTITIONS)}
    assert kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS) == {}


def test_broker_commits_rejected_by_a_live_broker_group_keep_zookeeper_and_catch_up_once_it_is_empty(
    spark: Any, cluster: Any, zk: Any, stream_reader: Any, topic_factory: Any, group_id: str, tmp_path: Path
) -> None:
    """The mixed step of docs/migration.md: while a broker-coordinated consumer is in the brokers'
    group with our id, the brokers answer the query's commits UNKNOWN_MEMBER_ID; ZooKeeper commits go
    on, and once that group is Empty a later commit writes the full map."""
    topic, elsewhere = topic_factory(partitions=PARTITIONS), topic_factory(partitions=1)
    holder = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group_id, "session.timeout.ms": 6000}
    )
    holder.subscribe([elsewhere])  # it joins the brokers' group G without reading our topic
    deadline = time.monotonic() + 60
    while not holder.assignment():
        assert time.monotonic() < deadline, "the broker-coordinated consumer never got its assignment"
        holder.poll(0.5)

    def rejected_then_empty(query: Any) -> None:
        time.sleep(3.0)  # a few more triggers' commits, each rejected
        assert kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS) == {}, "accepted while live?"
        assert query.exception() is None, "a rejection must not end the query"
        holder.close()  # leaves: the group is Empty, simple commits are accepted again
        closed.append(True)

    closed: list[bool] = []
    try:
        ends = run(
            spark, cluster, zk, stream_reader, topic, group_id, tmp_path, dual=True, after_first=rejected_then_empty
        )
    finally:
        if not closed:
            holder.close()
    assert committed_offsets(zk, group_id, topic) == ends == {p: 30 for p in range(PARTITIONS)}
    assert kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS) == ends
