"""A batch replayed from the checkpoint against a topic deleted or created again since it was planned (issue 43, finding 4)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_spark_stream_reader import T0, T1, FakeMember, Reader

from zkconsumer.spark.offsets import DataLossError, ReadTask
from zkconsumer.spark.reconcile import split_stale
from zkconsumer.spark.stream_reader import ReadAllAvailable

U0 = ("u", 0)


class Topics:
    """The topic nodes' incarnations (czxids) ZooKeeper holds now; None: the topic is deleted."""

    def __init__(self, epochs: dict[str, int | None]) -> None:
        self.epochs = epochs
        self.asked: list[list[str]] = []

    def topic_epochs(self, topics: list[str]) -> dict[str, int | None]:
        self.asked.append(sorted(topics))
        return {t: self.epochs.get(t) for t in topics}


def planned_batch() -> tuple[dict[str, object], dict[str, object]]:
    """Batch 1 of a query on t (incarnation 100): [30, 50) of each of its two partitions."""
    member = FakeMember()
    member.claim(T0, 30, epoch=100)
    member.claim(T1, 30, epoch=100)
    reader = Reader(member, {T0: (0, 50), T1: (0, 50)})
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    end = reader.latestOffset(start, ReadAllAvailable())
    return start, end


def restarted(epochs: dict[str, int | None], **options: str) -> tuple[Reader, Topics]:
    """The query's new process: its member claimed the new incarnation 200 and has planned nothing."""
    member = FakeMember()
    member.claim(T0, -1, epoch=200)
    member.claim(T1, -1, epoch=200)
    topics = Topics(epochs)
    member.cluster = topics  # type: ignore[attr-defined]
    return Reader(member, {T0: (0, 45), T1: (0, 45)}, **{"bootstrap.servers": "b:9092", **options}), topics


def offsets_of(tasks: object) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.partition, r.start, r.end) for t in tasks for r in t.ranges]  # type: ignore[attr-defined]


def test_a_replayed_batch_of_a_re_created_topic_fails_the_query_naming_the_topic() -> None:
    """Before: the replay read offsets [30, 50) of the NEW topic (other messages, or ones the next
    trigger reads again from 0): rows in the sink twice under an exactly-once claim."""
    start, end = planned_batch()
    reader, _ = restarted({"t": 200})
    with pytest.raises(DataLossError, match=r"topic t was deleted and created again \(incarnation 200\).*100"):
        reader.partitions(start, end)


def test_a_replayed_batch_of_a_deleted_topic_fails_the_query() -> None:
    start, end = planned_batch()
    reader, _ = restarted({})
    with pytest.raises(DataLossError, match=r"topic t was deleted since"):
        reader.partitions(start, end)


def test_without_fail_on_data_loss_the_stale_ranges_are_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    start, end = planned_batch()
    reader, _ = restarted({"t": 200}, failOnDataLoss="false")
    with caplog.at_level(logging.WARNING, logger="zkconsumer.spark.source"):
        assert reader.partitions(start, end) == []
    assert "topic t was deleted and created again" in caplog.text and "skipping its ranges" in caplog.text
    # The next trigger then starts the new topic over from its start, once.
    nxt = reader.latestOffset(end, ReadAllAvailable())
    assert offsets_of(reader.partitions(end, nxt)) == [("t", 0, 0, 45), ("t", 1, 0, 45)]


def test_a_replay_in_the_same_incarnation_reads_its_ranges() -> None:
    start, end = planned_batch()
    reader, topics = restarted({"t": 100})
    tasks = reader.partitions(start, end)
    assert all(isinstance(t, ReadTask) for t in tasks)
    assert sorted(offsets_of(tasks)) == [("t", 0, 30, 50), ("t", 1, 30, 50)]
    assert topics.asked == [["t"]]


def test_a_batch_this_process_planned_is_not_looked_up_again() -> None:
    """The look-up costs a ZooKeeper round trip per batch: only replays pay it."""
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    topics = Topics({"t": 100})
    member.cluster = topics  # type: ignore[attr-defined]
    reader = Reader(member, {T0: (0, 50)}, **{"bootstrap.servers": "b:9092"})
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert offsets_of(reader.partitions(start, end)) == [("t", 0, 0, 50)]
    assert topics.asked == []


keys = st.tuples(st.sampled_from(["t", "u", "v"]), st.integers(0, 3))


@given(
    ranges=st.lists(st.tuples(keys, st.integers(0, 100), st.integers(101, 200)), unique_by=lambda r: r[0]),
    recorded=st.dictionaries(st.sampled_from(["t", "u", "v"]), st.integers(1, 5)),
    current=st.dictionaries(st.sampled_from(["t", "u", "v"]), st.one_of(st.none(), st.integers(1, 5))),
)
def test_split_stale_keeps_exactly_the_ranges_of_unchanged_or_unknown_incarnations(
    ranges: list[tuple[tuple[str, int], int, int]], recorded: dict[str, int], current: dict[str, int | None]
) -> None:
    kept, stale = split_stale(ranges, recorded, current)
    gone = {s.topic for s in stale}
    assert kept == [r for r in ranges if r[0][0] not in gone], "kept in order, nothing else dropped"
    for r in ranges:
        topic = r[0][0]
        changed = topic in recorded and topic in current and current[topic] != recorded[topic]
        assert (topic in gone) == changed
    assert all(s.recorded == recorded[s.topic] and s.current == current[s.topic] for s in stale)
    assert len(gone) == len(stale)


def test_a_second_topic_in_its_incarnation_is_still_read_when_another_is_skipped() -> None:
    kept, stale = split_stale([(T0, 0, 5), (U0, 3, 9)], {"t": 1, "u": 7}, {"t": 2, "u": 7})
    assert kept == [(U0, 3, 9)] and [s.topic for s in stale] == ["t"]
