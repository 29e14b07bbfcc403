"""OffsetStore bookkeeping: what is written where (dual commit: ZooKeeper, then Kafka), what the checkpoint keeps."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.fetcher import CurrentFetcher, FetchSettings, NoFetcher
from zkconsumer.errors import BrokersUnavailable
from zkconsumer.offsets import store as store_module
from zkconsumer.offsets.broker_group_lookup import BrokerGroupView, BrokerMember
from zkconsumer.offsets.store import KafkaSideFailed, OffsetStore
from zkconsumer.zookeeper.deadline import Deadline
from zkconsumer.zookeeper.signals import OwnershipSignals


class RecordingGroup:
    """Stands in for GroupZk's commit_offsets and ClusterMetadata's topic_epochs; `during_write` runs while the write is in flight."""

    def __init__(self, during_write=None, fenced=(), epochs=None, events=None) -> None:  # type: ignore[no-untyped-def]
        self.group_id = "billing"
        self.io = self  # GroupZk.io.deadline
        self.deadline = Deadline(None)
        self.events: list[str] = events if events is not None else []
        self.writes: list[dict] = []  # type: ignore[type-arg]
        self.during_write = during_write
        self.fenced = set(fenced)
        self.epochs = epochs or {}
        self.owner_nodes = self  # OwnerNodes.stats_if_ours: a Kafka-only commit's fresh read
        self.signals = OwnershipSignals()

    def stats_if_ours(self, owners):  # type: ignore[no-untyped-def]
        return {k: None if k in self.fenced else object() for k in owners}

    def topic_epochs(self, topics):  # type: ignore[no-untyped-def]
        return {t: self.epochs.get(t) for t in topics}

    def commit_offsets(self, offsets, owners):  # type: ignore[no-untyped-def]
        self.writes.append(dict(offsets))
        self.events.append("zookeeper")
        if self.during_write:
            self.during_write()
        return {k: k not in self.fenced for k in offsets}


def info(partition: int, offset: int, epoch: int | None = None) -> PartitionTopicInfo:
    return PartitionTopicInfo("t", partition, f"g_c-{partition}", StreamQueue(2), offset, epoch)


def store(group) -> OffsetStore:  # type: ignore[no-untyped-def]
    return OffsetStore(
        group,
        cluster=group,
        storage="zookeeper",
        dual_commit=False,
        fetcher=CurrentFetcher(lambda _bootstrap: NoFetcher()),
        backoff_ms=1,
        timeout_ms=1000,
    )


def test_writes_only_changed_partitions() -> None:
    a, b = info(0, 5), info(1, 7)
    a.consumed_offset = 9
    group = RecordingGroup()
    assert store(group).commit([a, b]) == 1
    assert group.writes == [{("t", 0): 9}]
    assert (a.committed_offset, b.committed_offset) == (9, 7)
    assert store(group).commit([a, b]) == 0  # nothing changed since


def test_checkpoint_is_the_value_written_not_a_later_one() -> None:
    # The iterator advances while the write is in flight (the race the demo exposed):
    # the checkpoint must say 166, so the next commit still writes 417.
    a = info(5, 0)
    a.consumed_offset = 166
    group = RecordingGroup(during_write=lambda: setattr(a, "consumed_offset", 417))
    offsets = store(group)
    offsets.commit([a])
    assert a.committed_offset == 166
    group.during_write = None
    offsets.commit([a])
    assert group.writes[-1] == {("t", 5): 417}


def test_fenced_partition_keeps_old_checkpoint() -> None:
    a = info(0, 3)
    a.consumed_offset = 8
    assert store(RecordingGroup(fenced=[("t", 0)])).commit([a]) == 0
    assert a.committed_offset == 3


def test_unknown_position_is_never_written() -> None:
    a = info(0, -1)  # no committed offset and not yet resolved by the fetcher
    group = RecordingGroup()
    assert store(group).commit([a]) == 0
    assert group.writes == []


def test_positions_of_an_older_topic_incarnation_are_never_written() -> None:
    # Claimed when /brokers/topics/t had czxid 100; the topic was since re-created (czxid 250).
    # Writing 9 now would give the offset node an mzxid newer than the new topic, and the next
    # owner would resume the new topic at 9, skipping its first messages.
    old, current = info(0, 5, epoch=100), info(1, 5, epoch=250)
    old.consumed_offset = current.consumed_offset = 9
    group = RecordingGroup(epochs={"t": 250})
    assert store(group).commit([old, current]) == 1
    assert group.writes == [{("t", 1): 9}]
    assert old.committed_offset == 5


def test_positions_of_a_deleted_topic_are_never_written() -> None:
    gone = info(0, 5, epoch=100)
    gone.consumed_offset = 9
    group = RecordingGroup(epochs={})
    assert store(group).commit([gone]) == 0
    assert group.writes == []


class FakeKafka:
    """Stands in for the fetcher's Consumer: commit() records the full map, or raises what `fail` holds."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.commits: list[dict] = []  # type: ignore[type-arg]
        self.fail: list[BaseException | None] = []  # one per call, then success

    def commit(self, offsets, asynchronous):  # type: ignore[no-untyped-def]
        assert asynchronous is False
        self.events.append("kafka")
        error = self.fail.pop(0) if self.fail else None
        if error is not None:
            raise error
        self.commits.append({(tp.topic, tp.partition): tp.offset for tp in offsets})
        return offsets


def unknown_member() -> KafkaException:
    return KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID, "Commit failed: Broker: Unknown member"))


class KafkaFetcher(NoFetcher):
    """A fetcher as the offset store sees it: its Consumer (FakeKafka) and how it reaches the brokers."""

    def __init__(self, kafka: FakeKafka | None, settings: FetchSettings | None) -> None:
        self.consumer = kafka  # type: ignore[assignment]
        self.settings = settings  # type: ignore[assignment]


def current(fetcher: NoFetcher) -> CurrentFetcher:
    fetchers = CurrentFetcher(lambda _bootstrap: fetcher)
    fetchers.make("broker:9092")
    return fetchers


class DualStore(OffsetStore):
    """offsets.storage=kafka over the fakes; `asked` lists the timeouts the broker group was described with."""

    def __init__(
        self,
        group: RecordingGroup,
        kafka: FakeKafka,
        *,
        dual_commit: bool = True,
        described: BrokerGroupView | None = None,
    ) -> None:
        self.asked: list[float] = []
        self.described = described
        super().__init__(
            group,  # type: ignore[arg-type]
            cluster=group,  # type: ignore[arg-type]
            storage="kafka",
            dual_commit=dual_commit,  # type: ignore[arg-type]
            fetcher=current(KafkaFetcher(kafka, FetchSettings("broker:9092", "billing", "billing"))),
            backoff_ms=1,
            timeout_ms=30000,
        )

    def _describe_broker_group(self, timeout_s: float) -> BrokerGroupView | None:
        self.asked.append(timeout_s)
        return self.described


def test_the_broker_group_is_described_through_the_fetchers_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[dict[str, object], str, float]] = []
    view = BrokerGroupView("Stable", ())

    def describe(config: dict[str, object], group: str, timeout_s: float) -> BrokerGroupView:
        asked.append((dict(config), group, timeout_s))
        return view

    monkeypatch.setattr(store_module, "describe_broker_group", describe)
    group = RecordingGroup()
    settings = FetchSettings("broker:9092", "billing", "billing", overrides={"security.protocol": "SSL"})
    offsets = OffsetStore(
        group,  # type: ignore[arg-type]
        cluster=group,  # type: ignore[arg-type]
        storage="kafka",
        dual_commit=True,
        fetcher=current(KafkaFetcher(None, settings)),
        backoff_ms=1,
        timeout_ms=30000,
    )
    assert offsets._describe_broker_group(2.0) is view
    [(config, group_id, timeout_s)] = asked
    assert (group_id, timeout_s) == ("billing", 2.0)
    assert config["bootstrap.servers"] == "broker:9092" and config["security.protocol"] == "SSL"
    assert "group.id" not in config  # an admin client's settings, not the Consumer's

    no_reader = OffsetStore(
        group,  # type: ignore[arg-type]
        cluster=group,  # type: ignore[arg-type]
        storage="zookeeper",
        dual_commit=True,
        fetcher=current(NoFetcher()),
        backoff_ms=1,
        timeout_ms=30000,
    )
    assert no_reader._describe_broker_group(2.0) is None and len(asked) == 1  # fetch=False: no brokers to ask


def test_dual_commit_writes_zookeeper_first_then_the_full_map_to_kafka() -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    a, b = info(0, 5), info(1, 7)
    a.consumed_offset = 9
    assert DualStore(group, kafka).commit([a, b]) == 1
    assert events == ["zookeeper", "kafka"]
    assert group.writes == [{("t", 0): 9}]
    assert kafka.commits == [{("t", 0): 9, ("t", 1): 7}]  # full map (KAFKA-1510), unchanged ones too


def test_a_partition_zookeeper_fenced_off_is_not_written_to_kafka_either() -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(fenced=[("t", 0)], events=events), FakeKafka(events)
    a, b = info(0, 5), info(1, 7)
    a.consumed_offset = 9
    DualStore(group, kafka).commit([a, b])
    assert kafka.commits == [{("t", 1): 7}]
    assert a.committed_offset == 5


def test_a_live_broker_group_never_stops_zookeeper_commits_and_is_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    view = BrokerGroupView("Stable", (BrokerMember("billing-new", "/10.0.0.7", "billing-new-1f2e"),))
    offsets = DualStore(group, kafka, described=view)
    a = info(0, 0)
    kafka.fail = [unknown_member(), unknown_member(), unknown_member()]
    caplog.set_level(logging.DEBUG, logger="zkconsumer.offsets.store")
    for offset in (10, 20, 30):
        a.consumed_offset = offset
        assert offsets.commit([a], attempts=3) == 1  # no retry of the Kafka side, no raise
    assert group.writes == [{("t", 0): 10}, {("t", 0): 20}, {("t", 0): 30}]
    assert a.committed_offset == 30
    assert (offsets.kafka_rejected, offsets.kafka_failed, offsets.kafka_writes, offsets.failures) == (3, 0, 0, 0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "group billing" in warnings[0] and "UNKNOWN_MEMBER_ID" in warnings[0]
    assert "client.id=billing-new host=/10.0.0.7" in warnings[0]
    assert len(offsets.asked) == 1 and 0 < offsets.asked[0] <= 5.0  # looked up once, bounded

    a.consumed_offset = 40
    offsets.commit([a])
    assert kafka.commits == [{("t", 0): 40}]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == [
        "group billing: Kafka-side offset commits succeed again after 3 failed (3 rejected); "
        "ZooKeeper commits were written throughout"
    ]


def test_transient_kafka_failures_with_dual_commit_are_retried_at_the_next_commit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    offsets = DualStore(group, kafka)
    a, b = info(0, 0), info(1, 4)
    a.consumed_offset = 10
    kafka.fail = [
        KafkaException(KafkaError(KafkaError._ALL_BROKERS_DOWN, "all brokers down")),
        BrokersUnavailable("no broker connection yet"),
    ]
    assert offsets.commit([a, b], attempts=3) == 1
    assert events == ["zookeeper", "kafka"]  # one Kafka try per commit: the next commit is the retry
    assert offsets.commit([a, b]) == 0  # nothing changed for ZooKeeper; Kafka still behind
    assert offsets.commit([a, b]) == 0
    assert kafka.commits == [{("t", 0): 10, ("t", 1): 4}]
    assert offsets.kafka_failed == 2 and offsets.asked == []
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_a_bug_on_the_kafka_side_is_raised_after_zookeeper_was_written() -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    offsets = DualStore(group, kafka)
    a = info(0, 0)
    a.consumed_offset = 10
    kafka.fail = [AttributeError("no attribute 'commit'")]
    with pytest.raises(KafkaSideFailed, match="group billing: ZooKeeper offsets were written"):
        offsets.commit([a], attempts=3)
    assert group.writes == [{("t", 0): 10}] and a.committed_offset == 10
    assert offsets.failures == 1


def test_kafka_as_the_only_store_still_raises_and_keeps_the_checkpoint() -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    offsets = DualStore(group, kafka, dual_commit=False)
    a = info(0, 5)
    a.consumed_offset = 10
    kafka.fail = [unknown_member(), unknown_member()]
    with pytest.raises(KafkaException):
        offsets.commit([a], attempts=2)
    assert group.writes == [] and a.committed_offset == 5 and offsets.failures == 1
    assert offsets.commit([a]) == 1
    assert kafka.commits == [{("t", 0): 10}] and a.committed_offset == 10


def test_kafka_as_the_only_store_writes_only_what_a_fresh_read_says_is_ours() -> None:
    """No owner node fences a Kafka-only write: the commit reads the owner nodes first, leaves out
    what is not ours (another member may have committed past us) and reports it as doubted."""
    events: list[str] = []
    group, kafka = RecordingGroup(fenced=[("t", 0)], events=events), FakeKafka(events)
    doubted: list[list[tuple[str, int]]] = []
    group.signals.subscribe(doubt=lambda keys, _why: doubted.append(keys))
    a, b = info(0, 5), info(1, 7)
    a.consumed_offset, b.consumed_offset = 9, 8
    assert DualStore(group, kafka, dual_commit=False).commit([a, b]) == 1
    assert kafka.commits == [{("t", 1): 8}]
    assert (a.committed_offset, b.committed_offset) == (5, 8)
    assert doubted == [[("t", 0)]]


def test_dual_commit_sends_kafka_only_what_moved_and_nothing_without_a_lease() -> None:
    """Issue 51, finding 3: an idle member whose lease ran out resent its unchanged position to Kafka
    after one ZooKeeper request a cut-off follower could answer alone, rewinding its successor."""
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    offsets = DualStore(group, kafka)
    lease: list[str | None] = [None]
    a, b = info(0, 0), info(1, 4)
    a.consumed_offset = 10
    assert offsets.commit([a, b], vouch=lambda: lease[0]) == 1
    assert kafka.commits == [{("t", 0): 10, ("t", 1): 4}]  # the first write of this ownership: all of it

    assert offsets.commit([a, b], vouch=lambda: lease[0]) == 0
    assert kafka.commits == [{("t", 0): 10, ("t", 1): 4}], "nothing moved: nothing resent"

    lease[0] = "the session lease ran out"
    assert offsets.commit([a, b], vouch=lambda: lease[0]) == 0
    a.consumed_offset = 12  # ZooKeeper's fenced transaction decides that one; Kafka waits for a lease
    assert offsets.commit([a, b], vouch=lambda: lease[0]) == 1
    assert group.writes[-1] == {("t", 0): 12}
    assert kafka.commits == [{("t", 0): 10, ("t", 1): 4}] and offsets.kafka_failed == 1

    lease[0] = None
    assert offsets.commit([a, b], vouch=lambda: lease[0]) == 0
    assert kafka.commits[-1] == {("t", 0): 12}, "sent once the lease holds again, and only what moved"


def test_dual_commit_sends_kafka_a_partition_zookeeper_did_not_just_write_only_if_its_owner_node_is_ours() -> None:
    events: list[str] = []
    group, kafka = RecordingGroup(events=events), FakeKafka(events)
    doubted: list[list[tuple[str, int]]] = []
    group.signals.subscribe(doubt=lambda keys, _why: doubted.append(keys))
    offsets = DualStore(group, kafka)
    a, b = info(0, 5), info(1, 7)
    a.consumed_offset = 9
    group.fenced = {("t", 1)}  # b's position is unchanged for ZooKeeper, and its node is someone else's now
    assert offsets.commit([a, b]) == 1
    assert kafka.commits == [{("t", 0): 9}]
    assert doubted == [[("t", 1)]]
