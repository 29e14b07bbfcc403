"""zkconsumer.coordination=broker against the ZooKeeper mode's commit promises (regressions of the w7 probe).

Each drives the production BrokerGroupMember's rebalance callbacks on its own poll-thread side with a
recording stand-in for the confluent-kafka Consumer (no thread, no broker): what is probed is what the
member asks the Consumer to commit, not librdkafka.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from zkconsumer.broker_coordination.member import BrokerGroupMember
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import StaticSubscription

TOPIC = "orders"


class RecordingConsumer:
    """The Consumer calls the member makes from its poll thread: commits are recorded and succeed."""

    def __init__(self) -> None:
        self.commits: list[dict[tuple[str, int], int]] = []

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition]:
        assert not asynchronous
        self.commits.append({(tp.topic, tp.partition): tp.offset for tp in offsets})
        return offsets

    def pause(self, partitions: list[TopicPartition]) -> None: ...

    def resume(self, partitions: list[TopicPartition]) -> None: ...


def member(auto_commit: bool) -> tuple[BrokerGroupMember, RecordingConsumer, StreamSet]:
    config = ConsumerConfig.from_mapping(
        {
            "zookeeper.connect": "localhost:2181",
            "group.id": "billing",
            "zkconsumer.coordination": "broker",
            "auto.commit.enable": "true" if auto_commit else "false",
        }
    )
    streams = StreamSet("billing_probe", static={TOPIC: 1}, clock=lambda: 0.0)
    broker = BrokerGroupMember(
        config,
        "billing_probe",
        StaticSubscription(((TOPIC, 1),)),
        streams,
        ConsumerRebalanceListener(),
        bootstrap_servers="localhost:9092",
        on_failure=lambda exc: None,
    )
    consumer = RecordingConsumer()
    broker._consumer = consumer  # the poll thread's Consumer: these probes play the poll thread
    return broker, consumer, streams


def consume_up_to(broker: BrokerGroupMember, key: tuple[str, int], offset: int) -> None:
    """The application finished everything before `offset` (what the iterator records per chunk)."""
    info: Any = broker._infos[key]
    info.fetched_offset = offset
    info.advance(offset)


def test_with_auto_commit_off_a_revocation_commits_nothing_the_application_did_not() -> None:
    # auto.commit.enable=false: the application commits when its own side is durable (commit_offsets
    # after its database write). The ZooKeeper mode never writes an offset for it, at a release
    # either (Commits.before_release returns at once), so a crash before its write re-delivers.
    broker, consumer, _ = member(auto_commit=False)
    broker._on_assign(None, [TopicPartition(TOPIC, 0)])
    consume_up_to(broker, (TOPIC, 0), 42)  # handed out and moved past, not yet written by the app
    broker._on_revoke(None, [TopicPartition(TOPIC, 0)])
    # The next owner starts at 42: the application's 42 messages are lost if it crashes before its write.
    assert consumer.commits == []


def test_with_auto_commit_on_a_revocation_commits_what_was_consumed() -> None:
    # The control: with auto-commit the revocation's commit is the promise (duplicates, never loss).
    broker, consumer, _ = member(auto_commit=True)
    broker._on_assign(None, [TopicPartition(TOPIC, 0)])
    consume_up_to(broker, (TOPIC, 0), 42)
    broker._on_revoke(None, [TopicPartition(TOPIC, 0)])
    assert consumer.commits == [{(TOPIC, 0): 42}]


def test_with_auto_commit_off_a_shutdown_commits_nothing() -> None:
    broker, consumer, _ = member(auto_commit=False)
    broker._on_assign(None, [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
    consume_up_to(broker, (TOPIC, 0), 7)

    def close() -> None:  # librdkafka's close() of a subscribed Consumer serves the revocation callback
        broker._on_revoke(None, [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])

    consumer.close = close  # type: ignore[attr-defined]
    released: list[dict[str, set[int]]] = []
    broker.listener.before_releasing_partitions = released.append  # type: ignore[method-assign]
    broker._leave()
    assert released == []  # as ZooKeeper mode's shutdown: no listener call
    assert broker.unwritten == {}  # nothing reported as unwritten: the application commits itself
    assert consumer.commits == []


def test_with_auto_commit_on_what_a_shutdown_reports_unwritten_is_not_written_inside_close() -> None:
    # _leave's commit fails, so the offsets are reported unwritten; the revocation inside close()
    # must not then write them after all (the report would lie, and the caller may act on it).
    broker, consumer, _ = member(auto_commit=True)
    broker._on_assign(None, [TopicPartition(TOPIC, 0)])
    consume_up_to(broker, (TOPIC, 0), 7)
    succeeding = consumer.commit

    def fail_once(*, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition]:
        consumer.commit = succeeding  # type: ignore[method-assign]
        raise KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT))

    def close() -> None:
        broker._on_revoke(None, [TopicPartition(TOPIC, 0)])

    consumer.commit = fail_once  # type: ignore[method-assign]
    consumer.close = close  # type: ignore[attr-defined]
    broker._leave()
    assert broker.unwritten == {(TOPIC, 0): 7}
    assert consumer.commits == []
