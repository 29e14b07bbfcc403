"""The executor read of one offset range while its broker goes away: a restart is waited out, an outage
longer than pollTimeoutMs fails the task (Spark retries it) whatever failOnDataLoss says."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from zkconsumer.spark.kafka_read import FetchTimeoutError, read_task
from zkconsumer.spark.offsets import OffsetRange
from zkconsumer.spark.options import READER_FORCED
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.pytest_plugin import running
from zkconsumer.testing.versions import versions_from_env

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of its own: these tests stop its only broker."""
    local = LocalCluster(
        brokers=1, chroot="/sparkread", workdir=tmp_path_factory.mktemp("sparkread") / "cluster", **versions_from_env()
    )
    with running(local, "the Spark read cluster", timeout=90):
        yield local


def conf() -> dict[str, object]:
    return {**READER_FORCED, "group.id": "spark-read-test", "client.id": "spark-read-test"}


def offsets_read(batches) -> list[int]:  # type: ignore[no-untyped-def]
    return [o for batch in batches for o in batch.column("offset").to_pylist()]


def test_a_broker_restart_mid_range_is_waited_out(cluster: LocalCluster, topic_factory, produce) -> None:
    """Half the range exists; the broker restarts while the reader waits for the rest (librdkafka
    reports the lost connection as a per-message error); then the rest arrives: every offset once."""
    topic = topic_factory(partitions=1)
    produce(topic, 100, partitions=1)
    part = OffsetRange(topic, 0, 0, 200, cluster.bootstrap_servers)
    read: list[int] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            read.extend(
                offsets_read(read_task([part], conf(), batch_size=50, fail_on_data_loss=True, poll_timeout_s=90.0))
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    reader = threading.Thread(target=run, name="range-reader", daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while len(read) < 100 and time.monotonic() < deadline and reader.is_alive():
        time.sleep(0.1)
    time.sleep(1.0)  # the reader now waits at offset 100
    cluster.brokers[0].kill()  # refused reconnections: librdkafka reports _TRANSPORT, _ALL_BROKERS_DOWN
    cluster.restart_broker(0)
    produce(topic, 100, partitions=1, start=100)
    reader.join(120)
    assert not failures, f"the read failed across a broker restart: {failures[0]!r}"
    assert read == list(range(200))


def test_a_partition_unavailable_past_poll_timeout_fails_the_task_even_without_fail_on_data_loss(
    cluster: LocalCluster, topic_factory, produce
) -> None:
    """Before: with failOnDataLoss=false the range was cut short and the task succeeded, so Spark
    recorded (and ZooKeeper got) an end offset whose messages were never read."""
    topic = topic_factory(partitions=1)
    produce(topic, 50, partitions=1)
    part = OffsetRange(topic, 0, 0, 50, cluster.bootstrap_servers)
    cluster.brokers[0].kill()
    try:
        began = time.monotonic()
        with pytest.raises(FetchTimeoutError, match=rf"{topic}-0: no message at offset 0 within 4s"):
            list(read_task([part], conf(), batch_size=50, fail_on_data_loss=False, poll_timeout_s=4.0))
        assert time.monotonic() - began < 60
    finally:
        cluster.restart_broker(0)
    assert offsets_read(read_task([part], conf(), batch_size=50, fail_on_data_loss=False, poll_timeout_s=30.0)) == list(
        range(50)
    )


def test_one_task_reads_its_ranges_of_several_partitions_through_one_consumer(
    cluster: LocalCluster, topic_factory, produce
) -> None:
    """Four partitions, ranges that start and end mid-log (and one empty): every offset of each range
    once, none outside it, each batch from one partition, in offset order per partition."""
    topic = topic_factory(partitions=4)
    produce(topic, 400, partitions=4)  # 100 per partition
    ranges = [
        OffsetRange(topic, 0, 0, 100, cluster.bootstrap_servers),
        OffsetRange(topic, 1, 10, 60, cluster.bootstrap_servers),
        OffsetRange(topic, 2, 99, 100, cluster.bootstrap_servers),
        OffsetRange(topic, 3, 40, 40, cluster.bootstrap_servers),
    ]
    batches = list(read_task(ranges, conf(), batch_size=30, fail_on_data_loss=True, poll_timeout_s=30.0))
    read: dict[int, list[int]] = {}
    for batch in batches:
        (partition,) = set(batch.column("partition").to_pylist())
        read.setdefault(partition, []).extend(batch.column("offset").to_pylist())
    assert read == {0: list(range(100)), 1: list(range(10, 60)), 2: [99]}
    values = {b.column("partition")[0].as_py(): b.column("value")[0].as_py() for b in batches}
    assert values[2] == f"{topic}-{99 * 4 + 2}".encode()  # message i went to partition i % 4


def test_a_range_the_log_does_not_reach_fails_the_task_while_its_neighbours_progress(
    cluster: LocalCluster, topic_factory, produce
) -> None:
    """The wait is timed per range: messages of a busy partition in the same task do not keep a
    range whose offsets never come waiting forever."""
    topic = topic_factory(partitions=2)
    produce(topic, 40, partitions=2)  # 20 per partition
    stuck = OffsetRange(topic, 1, 0, 30, cluster.bootstrap_servers)  # offsets 20..29 do not exist
    busy = OffsetRange(topic, 0, 0, 10**6, cluster.bootstrap_servers)
    stop = threading.Event()

    def keep_producing() -> None:
        sent = 0
        while not stop.is_set():
            produce(topic, 20, partitions=1, start=40 + sent)  # all to partition 0
            sent += 20

    feeder = threading.Thread(target=keep_producing, name="busy-partition", daemon=True)
    feeder.start()
    try:
        began = time.monotonic()
        with pytest.raises(Exception, match=rf"{topic}-1: .*20"):
            list(read_task([stuck, busy], conf(), batch_size=50, fail_on_data_loss=True, poll_timeout_s=3.0))
        assert time.monotonic() - began < 30
    finally:
        stop.set()
        feeder.join(30)
