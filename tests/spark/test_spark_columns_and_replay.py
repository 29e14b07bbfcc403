"""Spark's columns (timestampType, opt-in headers), Spark's offsets JSON shape, and a batch replayed from the
checkpoint after its topic was deleted and created again (issue 43, finding 4), on local Spark and the real cluster."""

from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import FAST, source_end, wait_until

from zkconsumer.spark.checkpoint import batch_ids
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]


def produce_with_headers(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        headers = [("n", str(i).encode()), ("empty", None)] if i % 2 else None
        producer.produce(topic, value=f"{topic}-{i}".encode(), partition=0, headers=headers)
    assert producer.flush(30) == 0


def batch_read(spark: Any, cluster: Any, group: str, topic: str, **options: str) -> Any:
    reader = (
        spark.read.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", group)
        .option("topics", topic)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_spark_s_columns_with_timestamp_type_and_headers_only_when_asked(spark, cluster, group_id) -> None:
    topic = f"columns-{group_id[-12:]}"
    cluster.create_topic(topic, 1)
    produce_with_headers(cluster.bootstrap_servers, topic, 6)
    plain = batch_read(spark, cluster, group_id, topic)
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    rows = plain.orderBy("offset").collect()
    assert [r.offset for r in rows] == list(range(6))
    assert {r.timestampType for r in rows} == {0}, "CreateTime, Kafka's id as in Spark's source"
    assert all(r.timestamp is not None for r in rows)

    full = batch_read(spark, cluster, group_id, topic, includeHeaders="true")
    assert full.columns[-1] == "headers" and full.schema["headers"].dataType.simpleString() == (
        "array<struct<key:string,value:binary>>"
    )
    headers = {r.offset: r.headers for r in full.orderBy("offset").collect()}
    assert headers[0] is None
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in headers[3]] == [("n", b"3"), ("empty", None)]


def test_spark_s_offsets_json_shape_and_max_records_per_partition_on_a_batch_read(spark, cluster, group_id) -> None:
    topic = f"shape-{group_id[-12:]}"
    cluster.create_topic(topic, 2)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 40, partitions=2)  # 20 a partition
    df = batch_read(
        spark,
        cluster,
        group_id,
        topic,
        startingOffsets=f'{{"{topic}": {{"0": 5, "1": -2}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 15}}, "{topic}/1": 3}}',
        maxRecordsPerPartition="4",
    )
    assert df.rdd.getNumPartitions() == 4, "[5, 15) in pieces of at most 4, and [0, 3)"
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 15)] + [(1, o) for o in range(3)]


def test_spark_s_timestamp_options_on_a_batch_read(spark, cluster, group_id) -> None:
    """Message i of each partition is stamped BASE + i seconds: a time resolves to the first message
    at or after it (Kafka's offsetsForTimes), as in Spark's source."""
    from confluent_kafka import Producer

    topic = f"stamped-{group_id[-12:]}"
    cluster.create_topic(topic, 2)
    base = 1_700_000_000_000
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for partition in (0, 1):
        for i in range(20):
            producer.produce(topic, value=b"%d" % i, partition=partition, timestamp=base + i * 1000)
    assert producer.flush(30) == 0

    def offsets(df: Any) -> list[tuple[int, int]]:
        return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())

    df = batch_read(
        spark,
        cluster,
        group_id,
        topic,
        startingOffsetsByTimestamp=f'{{"{topic}": {{"0": {base + 4500}}}}}',
        startingOffsets=f'{{"{topic}": {{"1": 18}}}}',
        endingTimestamp=str(base + 15000),
    )
    assert offsets(df) == [(0, o) for o in range(5, 15)], "partition 1: [18, 15) is empty"
    everywhere = batch_read(spark, cluster, group_id, topic, startingTimestamp=str(base + 17000))
    assert offsets(everywhere) == [(p, o) for p in (0, 1) for o in (17, 18, 19)]
    too_late = str(base + 60_000)
    skipped = batch_read(
        spark, cluster, group_id, topic, startingTimestamp=too_late, startingOffsetsByTimestampStrategy="latest"
    )
    assert offsets(skipped) == []
    with pytest.raises(Exception, match=rf"no message at or after the starting timestamp in {topic}-0"):
        batch_read(spark, cluster, group_id, topic, startingTimestamp=too_late).collect()


def newest_commit(checkpoint: Path) -> int:
    ids = batch_ids(os.listdir(checkpoint / "commits"))
    return ids[-1] if ids else -1


def start_recording(df: Any, out: Path, checkpoint: Path) -> Any:
    """A foreachBatch sink that appends every batch it is handed, replays included (no sink-side dedup):
    what the source hands a replay is what the sink gets."""

    def record(batch: Any, batch_id: int) -> None:
        batch.select("topic", "partition", "offset", "value").write.mode("append").parquet(str(out))

    return (
        df.writeStream.foreachBatch(record)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def test_a_batch_replayed_after_its_topic_was_re_created_fails_or_is_skipped_never_read_at_old_offsets(
    spark, cluster, zk, group_id, tmp_path
) -> None:
    """Before: the replay read offsets [0, 30) of the NEW topic and the next trigger read the new topic
    from 0 again: 30 rows in the sink twice."""
    topic = f"replayed-{group_id[-12:]}"
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    cluster.create_topic(topic, 1)
    old = kafka.produce_numbered(cluster.bootstrap_servers, topic, 30, partitions=1)

    def stream(**options: str) -> Any:
        reader = (
            spark.readStream.format("zkconsumer")
            .option("zookeeper.connect", cluster.zookeeper_connect)
            .option("group.id", group_id)
            .option("topics", topic)
            .option("startingOffsets", "earliest")
        )
        for key, value in {**FAST, **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    def left() -> bool:
        return zk.get_children(f"/consumers/{group_id}/ids") == []

    query = start_recording(stream(), out, checkpoint)
    try:
        wait_until(lambda: (source_end(query) or {}).get((topic, 0)) == 30, 90, "the old topic read", query)
        wait_until(lambda: newest_commit(checkpoint) >= 0, 30, "the batch committed", query)
    finally:
        query.stop()
    wait_until(left, 30, "the query to leave the group")
    # The last batch becomes one Spark replays at the restart: in the offset log, not in the commit log.
    last = newest_commit(checkpoint)
    for name in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    kafka.delete_topic(cluster.bootstrap_servers, topic)
    wait_until(lambda: zk.exists(znodes.topic_path(topic)) is None, 60, "the topic deletion")
    cluster.create_topic(topic, 1)
    new = kafka.produce_numbered(cluster.bootstrap_servers, topic, 45, partitions=1, start=1000)

    query = start_recording(stream(), out, checkpoint)
    try:
        wait_until(lambda: query.exception() is not None or not query.isActive, 90, "the replay to fail")
    finally:
        query.stop()
    failure = str(query.exception())
    assert f"topic {topic} was deleted and created again" in failure, failure[-3000:]
    assert "failOnDataLoss=false" in failure
    wait_until(left, 30, "the failed query to leave the group")

    query = start_recording(stream(failOnDataLoss="false"), out, checkpoint)
    try:
        wait_until(lambda: (source_end(query) or {}).get((topic, 0)) == 45, 90, "the new topic read", query)
        wait_until(lambda: newest_commit(checkpoint) > last, 30, "the new batch committed", query)
    finally:
        query.stop()
    rows = spark.read.parquet(str(out)).collect()
    got = collections.Counter(bytes(r.value) for r in rows)
    old_values, new_values = {m.value for m in old}, {m.value for m in new}
    assert {v: n for v, n in got.items() if v in new_values} == dict.fromkeys(new_values, 1), (
        "every message of the new topic exactly once"
    )
    assert set(got) <= old_values | new_values
    assert {v for v in got if v in old_values} == old_values, "the old topic's batch reached the sink before"
