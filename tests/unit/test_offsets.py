"""OffsetStore bookkeeping: what gets written, and what the checkpoint remembers."""
from __future__ import annotations

from zkconsumer.offsets import OffsetStore
from zkconsumer.stream import PartitionTopicInfo, StreamQueue


class RecordingGroup:
    """Stands in for GroupZk's commit_offsets and topic_epochs; `during_write` runs while the write is in flight."""

    def __init__(self, during_write=None, fenced=(), epochs=None) -> None:  # type: ignore[no-untyped-def]
        self.writes: list[dict] = []  # type: ignore[type-arg]
        self.during_write = during_write
        self.fenced = set(fenced)
        self.epochs = epochs or {}
        self.cluster = self  # GroupZk.cluster.topic_epochs

    def topic_epochs(self, topics):  # type: ignore[no-untyped-def]
        return {t: self.epochs.get(t) for t in topics}

    def commit_offsets(self, offsets, owners):  # type: ignore[no-untyped-def]
        self.writes.append(dict(offsets))
        if self.during_write:
            self.during_write()
        return {k: k not in self.fenced for k in offsets}


def info(partition: int, offset: int, epoch: int | None = None) -> PartitionTopicInfo:
    return PartitionTopicInfo("t", partition, f"g_c-{partition}", StreamQueue(2), offset, epoch)


def store(group) -> OffsetStore:  # type: ignore[no-untyped-def]
    return OffsetStore(group, storage="zookeeper", dual_commit=False, kafka_consumer=lambda: None,
                       backoff_ms=1, timeout_ms=1000)


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
