"""Executor reads reuse one consumer per partition (consumer_pool.py): the same messages, fewer consumers."""

from __future__ import annotations

import pytest

from zkconsumer.spark.consumer_pool import POOL, pool_key
from zkconsumer.spark.kafka_read import read_range
from zkconsumer.spark.offsets import OffsetRange
from zkconsumer.spark.options import READER_FORCED

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def conf() -> dict[str, object]:
    return {**READER_FORCED, "group.id": "spark-reuse-test", "client.id": "spark-reuse-test"}


def read(cluster, topic: str, start: int, end: int) -> list[int]:  # type: ignore[no-untyped-def]
    part = OffsetRange(topic, 0, start, end, cluster.bootstrap_servers)
    return [
        o
        for batch in read_range(part, conf(), batch_size=30, fail_on_data_loss=True, poll_timeout_s=30.0, reuse=True)
        for o in batch.column("offset").to_pylist()
    ]


def test_consecutive_batches_of_a_partition_go_on_with_the_same_consumer(cluster, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 200, partitions=1)
    key = pool_key({**conf(), "bootstrap.servers": cluster.bootstrap_servers}, topic, 0)
    POOL.close_all()
    assert read(cluster, topic, 0, 80) == list(range(80))
    first, standing = POOL.take(key)
    assert first is not None and standing == 80  # given back, standing where the next batch starts
    POOL.give_back(key, first, standing)
    assert read(cluster, topic, 80, 200) == list(range(80, 200))  # no re-assign: it reads on
    again, standing = POOL.take(key)
    assert again is first and standing == 200
    POOL.give_back(key, again, standing)
    assert read(cluster, topic, 10, 20) == list(range(10, 20))  # a replayed batch: re-assigned, exact
    assert POOL.take(key)[0] is first
    POOL.close_all()


def test_a_read_cut_short_closes_its_consumer(cluster, topic_factory, produce) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 100, partitions=1)
    key = pool_key({**conf(), "bootstrap.servers": cluster.bootstrap_servers}, topic, 0)
    POOL.close_all()
    part = OffsetRange(topic, 0, 0, 100, cluster.bootstrap_servers)
    batches = read_range(part, conf(), batch_size=30, fail_on_data_loss=True, poll_timeout_s=30.0, reuse=True)
    next(batches)
    batches.close()  # the task was killed (or the query stopped) mid-range: its position means nothing
    assert POOL.take(key) == (None, None)
