"""A gracefully stopped stream commits to ZooKeeper exactly the last batch its sink committed, never a cancelled one."""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import describe, sink_rows, wait_until

from harness.members import committed_offsets
from zkconsumer.spark.checkpoint import parse_offset_entries
from zkconsumer.spark.offsets import decode_offsets
from zkconsumer.testing import kafka

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def start(df: Any, folder: Path, trigger: str) -> Any:
    return (
        df.writeStream.format("parquet")
        .option("path", str(folder / "out"))
        .option("checkpointLocation", str(folder / "checkpoint"))
        .trigger(processingTime=trigger)
        .start()
    )


def left_the_group(zk: Any, group: str) -> bool:
    """The planner commits on stop before it leaves: once it left, ZooKeeper holds its last word."""
    return zk.exists(f"/consumers/{group}/ids") is None or zk.get_children(f"/consumers/{group}/ids") == []


def sink_ends(rows: list[tuple[str, int, int, bytes]]) -> dict[int, int]:
    """partition -> one past the highest offset in the sink, checking the sink holds no gap or duplicate."""
    by_partition: dict[int, list[int]] = collections.defaultdict(list)
    for _, partition, offset, _ in rows:
        by_partition[partition].append(offset)
    for partition, offsets in by_partition.items():
        assert sorted(offsets) == list(range(len(offsets))), f"partition {partition}: gaps or duplicates"
    return {p: len(o) for p, o in by_partition.items()}


def test_a_graceful_stop_commits_the_last_batch_the_sink_committed(
    spark, cluster, zk, stream_reader, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=3)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 90, partitions=3)
    checkpoint = tmp_path / "checkpoint"
    df = stream_reader(group_id, topic, startingOffsets="earliest", checkpointLocation=str(checkpoint))
    # One batch, then none for an hour: Spark's own "batch 0 is done" would come only with batch 1.
    query = start(df, tmp_path, "1 hour")
    try:
        wait_until(lambda: (checkpoint / "commits" / "0").exists(), 90, "batch 0 in the commit log", query)
        assert committed_offsets(zk, group_id, topic) == {0: 0, 1: 0, 2: 0}, "before the stop: batch 0's start"
    finally:
        query.stop()
    wait_until(lambda: left_the_group(zk, group_id), 30, "the query to leave the group")
    ends = sink_ends(sink_rows(spark, str(tmp_path / "out")))
    assert ends == {0: 30, 1: 30, 2: 30}
    assert committed_offsets(zk, group_id, topic) == ends, "ZooKeeper equals the sink's content"
    assert describe(cluster, group_id)["total_lag"] == 0


def test_a_batch_cancelled_by_the_stop_is_not_committed(
    spark, cluster, zk, stream_reader, topic_factory, group_id, tmp_path
) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType

    topic = topic_factory(partitions=2)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 60, partitions=2)
    stall = f"{topic}-1000".encode()

    def slow(value):  # type: ignore[no-untyped-def]  # nested: pickled by value for the workers; no hints: a plain UDF
        if value == stall:
            time.sleep(600)  # a batch still running when the query stops
        return value

    checkpoint = tmp_path / "checkpoint"
    df = stream_reader(group_id, topic, startingOffsets="earliest", checkpointLocation=str(checkpoint))
    df = df.withColumn("value", F.udf(slow, BinaryType(), useArrow=False)("value"))
    query = start(df, tmp_path, "500 milliseconds")
    try:
        wait_until(lambda: (checkpoint / "commits" / "0").exists(), 90, "batch 0 in the commit log", query)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 1, partitions=2, start=1000)  # -> partition 0
        wait_until(lambda: (checkpoint / "offsets" / "1").exists(), 60, "batch 1 planned", query)
        time.sleep(3.0)  # its task is in the UDF's sleep
    finally:
        began = time.monotonic()
        query.stop()
    assert time.monotonic() - began < 60, "the stop cancelled the stalled batch"
    wait_until(lambda: left_the_group(zk, group_id), 30, "the query to leave the group")
    assert not (checkpoint / "commits" / "1").exists(), "batch 1 was cancelled, not committed"
    (planned,) = parse_offset_entries((checkpoint / "offsets" / "1").read_text())
    assert planned is not None and decode_offsets(planned)[(topic, 0)] == 31, "batch 1 holds the stalled message"
    ends = sink_ends(sink_rows(spark, str(tmp_path / "out")))
    assert ends == {0: 30, 1: 30}
    assert committed_offsets(zk, group_id, topic) == ends, "batch 0's end: not the cancelled batch 1's"
