"""Dual commit from the stream reader's member: ZooKeeper and the brokers get what changed, through the connector's offset store."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest
from confluent_kafka import KafkaError, KafkaException
from test_offsets import FakeKafka, RecordingGroup
from test_spark_stream_reader import T0, T1, FakeMember, Key, Reader

from zkconsumer.cluster.broker_nodes import BrokerInfo
from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.fetcher import CurrentFetcher, FetchSettings, NoFetcher
from zkconsumer.coordinator.rebalancer import fetcher_bootstrap
from zkconsumer.offsets.store import KafkaSideFailed, OffsetStore
from zkconsumer.spark.offsets import decode_offsets
from zkconsumer.spark.options import parse_options
from zkconsumer.spark.stream_member import full_map
from zkconsumer.spark.stream_reader import ReadAllAvailable
from zkconsumer.zookeeper.deadline import Deadline

DUAL = {"offsets.storage": "kafka"}  # dual.commit.enabled follows it (true), as in the connector


class IdleFetcher:
    """The started fetcher a fetch=False member commits through (it is given no partition)."""

    def __init__(self, kafka: FakeKafka) -> None:
        self.consumer = kafka
        self.settings = FetchSettings("broker:9092", "g", "g")
        self.closed_with: float | None = None
        self.deadline: Deadline | None = None

    def close(self, timeout: float = 10.0) -> None:
        self.closed_with = timeout

    def set_deadline(self, deadline: Deadline) -> None:
        self.deadline = deadline


class DualMember(FakeMember):
    """FakeMember whose commits go as Commits.commit_positions sends them: positions recorded, then the
    real OffsetStore (offsets.storage=kafka, dual commit) over a NoFetcher that commits through an idle fetcher."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []
        self.zookeeper = RecordingGroup(epochs={"t": 100}, events=self.events)
        self.kafka = FakeKafka(self.events)
        fetchers = CurrentFetcher(lambda _bootstrap: NoFetcher(IdleFetcher(self.kafka)))  # type: ignore[arg-type]
        fetchers.make("broker:9092")
        self.store = OffsetStore(
            self.zookeeper,  # type: ignore[arg-type]
            cluster=self.zookeeper,  # type: ignore[arg-type]
            storage="kafka",
            dual_commit=True,
            fetcher=fetchers,
            backoff_ms=1,
            timeout_ms=1000,
        )

    def commit_positions(
        self, positions: Mapping[Key, int], *, epochs: Mapping[str, int | None] | None = None
    ) -> dict[Key, bool]:
        infos = self.assignment.record_positions(positions, epochs)
        self.store.commit(infos)
        mine = {i.key: i for i in infos}
        return {k: k in mine and mine[k].committed_offset == o for k, o in positions.items()}


def two_batches(member: DualMember) -> tuple[Reader, dict]:  # type: ignore[type-arg]
    """Batch 0 reads both partitions and is committed; batch 1 has new data in t-0 only."""
    member.claim(T0, 0, epoch=100)
    member.claim(T1, 0, epoch=100)
    reader = Reader(member, {T0: (0, 30), T1: (0, 20)}, startingOffsets="earliest", **DUAL)
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    reader.commit(first)
    reader.logs[T0] = (0, 45)
    second = reader.latestOffset(first, ReadAllAvailable())
    assert decode_offsets(second) == {T0: 45, T1: 20}
    return reader, second


def test_zookeeper_and_the_brokers_get_what_changed_zookeeper_first() -> None:
    member = DualMember()
    reader, second = two_batches(member)
    reader.commit(second)
    assert member.zookeeper.writes == [{T0: 30, T1: 20}, {T0: 45}]
    assert member.kafka.commits == [{T0: 30, T1: 20}, {T0: 45}], "what moved since the last Kafka write"
    assert member.events == ["zookeeper", "kafka", "zookeeper", "kafka"]


def test_a_failed_kafka_side_keeps_the_zookeeper_commit_and_the_next_commit_catches_the_brokers_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    member = DualMember()
    member.kafka.fail = [KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))]
    with caplog.at_level(logging.INFO, logger="zkconsumer.offsets.store"):
        reader, second = two_batches(member)
        assert member.zookeeper.writes == [{T0: 30, T1: 20}] and member.kafka.commits == []
        assert member.store.kafka_failed == 1
        reader.commit(second)  # only t-0 moved; the brokers still get t-1 again
    assert member.zookeeper.writes == [{T0: 30, T1: 20}, {T0: 45}]
    assert member.kafka.commits == [{T0: 45, T1: 20}]
    messages = [r.getMessage() for r in caplog.records]
    assert any(
        "Kafka-side offset commit failed with _TRANSPORT" in m and "ZooKeeper commits continue" in m for m in messages
    )
    assert any("Kafka-side offset commits succeed again after 1 failed (1 transient)" in m for m in messages)


def test_a_fatal_kafka_side_failure_ends_the_query_after_zookeeper_was_written() -> None:
    member = DualMember()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest", **DUAL)
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    member.kafka.fail = [KafkaException(KafkaError(KafkaError._FATAL, "fenced", fatal=True))]
    with pytest.raises(KafkaSideFailed, match="ZooKeeper offsets were written"):
        reader.commit(first)
    assert member.zookeeper.writes == [{T0: 30}]


def test_without_dual_commit_the_member_gets_only_what_moved() -> None:
    member = FakeMember()
    sent: list[dict[Key, int]] = []
    commit = member.commit_positions

    def recording(positions: Mapping[Key, int], *, epochs: Mapping[str, int | None] | None = None) -> dict[Key, bool]:
        sent.append(dict(positions))
        return commit(positions, epochs=epochs)

    member.commit_positions = recording  # type: ignore[method-assign]
    member.claim(T0, 0, epoch=100)
    member.claim(T1, 0, epoch=100)
    reader = Reader(member, {T0: (0, 30), T1: (0, 20)}, startingOffsets="earliest")
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    reader.commit(first)
    reader.logs[T0] = (0, 45)
    reader.commit(reader.latestOffset(first, ReadAllAvailable()))
    assert sent == [{T0: 30, T1: 20}, {T0: 45}]


def test_the_full_map_leaves_out_unknown_positions_released_partitions_and_other_incarnations() -> None:
    def claim(partition: int, offset: int, epoch: int, active: bool = True) -> PartitionTopicInfo:
        info = PartitionTopicInfo("t" if partition < 3 else "u", partition, "q-0", StreamQueue(2), offset, epoch)
        info.active = active
        return info

    infos = {
        ("t", 0): claim(0, 7, 100),
        ("t", 1): claim(1, -1, 100),  # nothing committed, nothing read yet
        ("t", 2): claim(2, 9, 100, active=False),  # released by a rebalance
        ("u", 3): claim(3, 4, 300),
    }
    epochs: dict[str, int | None] = {"t": 100}
    assert full_map(infos, epochs) == {("t", 0): 7, ("u", 3): 4}
    assert epochs == {"t": 100, "u": 300}
    assert full_map({("t", 0): claim(0, 7, 100)}, {"t": 200}) == {}, "a position of another incarnation"


def test_a_fetch_false_member_commits_through_its_idle_fetcher_or_has_no_broker_connection() -> None:
    kafka = FakeKafka([])
    idle = IdleFetcher(kafka)
    fetcher = NoFetcher(idle)  # type: ignore[arg-type]
    assert fetcher.consumer is kafka and fetcher.settings is idle.settings
    assert fetcher.assigned() is None
    deadline = Deadline(5.0)
    fetcher.set_deadline(deadline)
    fetcher.close(3.0)
    assert idle.deadline is deadline and idle.closed_with == 3.0
    plain = NoFetcher()
    assert plain.consumer is None and plain.settings is None
    plain.close()
    plain.set_deadline(deadline)


def test_a_fetch_false_member_may_dual_commit_but_not_keep_offsets_in_kafka_only() -> None:
    from zkconsumer import ConsumerConnector
    from zkconsumer.config.checks import ConfigError

    props = {"zookeeper.connect": "127.0.0.1:1", "group.id": "g", "offsets.storage": "kafka"}
    with pytest.raises(ConfigError, match="dual.commit.enabled=false needs fetch=True"):
        ConsumerConnector({**props, "dual.commit.enabled": "false"}, fetch=False)


def test_the_members_kafka_side_commits_go_to_the_bootstrap_servers_option() -> None:
    """Issue 52, finding 8: with bootstrap.servers given, the stream's member still committed its Kafka
    side through the brokers registered in ZooKeeper (addresses the driver may not reach)."""
    opts = parse_options(
        {
            "zookeeper.connect": "zk:2181",
            "group.id": "g",
            "topics": "t",
            "offsets.storage": "kafka",
            "bootstrap.servers": "proxy:19092",
        },
        streaming=True,
    )
    registered = [BrokerInfo(1, None, None, ("PLAINTEXT://10.9.9.9:9092",), None, 4)]
    config = opts.config
    settings = FetchSettings.from_config(config, fetcher_bootstrap(config, registered), config.librdkafka_overrides)
    assert settings.consumer_config()["bootstrap.servers"] == "proxy:19092"
    assert fetcher_bootstrap(config, []) == "proxy:19092", "no registered endpoint needed"

    plain = parse_options(
        {k: v for k, v in opts.consumer_props.items() if not k.startswith("librdkafka.")} | {"topics": "t"},
        streaming=True,
    )
    assert fetcher_bootstrap(plain.config, registered) == "10.9.9.9:9092"
