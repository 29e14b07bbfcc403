"""The stream planner's own trouble: a failed commit retried, late claims by the start rules, AvailableNow runs that cannot plan yet."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss
from test_spark_checkpoint import write_batch
from test_spark_stream_reader import T0, T1, FakeMember, Key, Reader

from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark.offsets import batch_ranges, decode_offsets
from zkconsumer.spark.stream_reader import ReadAllAvailable


# ---- a failed planning commit is retried ---------------------------------------------------------
class FlakyZooKeeper(FakeMember):
    failing = 0

    def commit_positions(self, positions, *, epochs=None):  # type: ignore[no-untyped-def]
        if self.failing:
            self.failing -= 1
            # The real member records the positions before its write fails (Commits.commit_positions).
            self.assignment.record_positions(positions, epochs)
            raise ConnectionLoss()
        return super().commit_positions(positions, epochs=epochs)


@pytest.mark.parametrize("retried_by", ["next trigger", "Spark's commit", "stop"])
def test_a_planning_commit_that_failed_is_written_at_the_next_chance(retried_by: str, tmp_path: Path) -> None:
    member = FlakyZooKeeper()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest", checkpointLocation=str(tmp_path))
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())  # batch [0, 30)
    write_batch(tmp_path, 0, first)  # the sink committed it
    member.failing = 1
    assert reader.latestOffset(first, ReadAllAvailable()) is first  # the write of 30 fails; nothing new
    assert member.nodes.get(T0, (0, 100))[0] == 0
    if retried_by == "next trigger":
        reader.latestOffset(first, ReadAllAvailable())
    elif retried_by == "Spark's commit":
        reader.commit(first)
    else:
        reader.stop()
    assert member.nodes[T0] == (30, 100)


# ---- startingOffsets and ignoreCommittedOffsets for partitions claimed later ---------------------
def test_a_new_query_that_owns_nothing_at_first_starts_late_claims_at_latest_not_earliest() -> None:
    member = FakeMember()  # a crashed predecessor still holds the partitions: nothing owned yet
    reader = Reader(member, {T0: (0, 1_000_000), T1: (0, 20)})  # startingOffsets latest (default)
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadAllAvailable()) is start
    member.claim(T0, -1, epoch=100)  # its owner nodes expired: ours now, no committed offset
    member.claim(T1, 7, epoch=100)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert decode_offsets(end) == {T0: 1_000_000, T1: 20} and batch_ranges(start, end) == [(T1, 7, 20)]


def test_starting_options_apply_once_a_later_claim_starts_at_the_group_s_offset() -> None:
    """Finding 4 (issue 52): ignoreCommittedOffsets=true + latest at a later claim skipped what
    nobody in the group had read; Spark applies its starting options once, at the query's start."""
    member = FakeMember()
    member.claim(T0, 4, epoch=100)
    reader = Reader(member, {T0: (0, 10), T1: (0, 50)}, startingOffsets="latest", ignoreCommittedOffsets="true")
    start = reader.initialOffset()
    assert decode_offsets(start) == {T0: 10}, "at the start: the option applies"
    end = reader.latestOffset(start, ReadAllAvailable())
    member.claim(T1, 12, epoch=100)  # another member had it and committed 12
    later = reader.latestOffset(end, ReadAllAvailable())
    assert batch_ranges(end, later) == [(T1, 12, 50)], "a later claim resumes where the group left it"


@pytest.mark.parametrize(
    "options",
    [
        {"startingOffsets": '{"t": {"0": 0, "1": 0}}'},
        {"startingTimestamp": "1000"},
        {"startingTimestamp": "1000", "startingOffsetsByTimestampStrategy": "error"},
    ],
)
def test_a_hand_over_from_a_live_member_later_is_not_restarted_by_the_starting_options(options: dict[str, str]) -> None:
    """Finding 4: an explicit start re-read the 1,000,000 offsets a Scala member had committed, and
    the `error` strategy on an idle partition failed a healthy query hours in."""
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 10), T1: (0, 1_000_100)}, **options)
    reader.member.at_time = {T0: 0}  # type: ignore[attr-defined]  # T1: no message that late (-1)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    member.claim(T1, 1_000_000, epoch=100)  # the Scala member hands it over, having read 1,000,000
    later = reader.latestOffset(end, ReadAllAvailable())
    assert batch_ranges(end, later) == [(T1, 1_000_000, 1_000_100)]


def test_a_restarted_query_does_not_apply_the_starting_options_to_a_partition_it_claims() -> None:
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 10), T1: (0, 90)}, startingTimestamp="1000")
    reader.member.at_time = {T0: 0}  # type: ignore[attr-defined]
    start = reader.initialOffset()
    checkpoint = reader.latestOffset(start, ReadAllAvailable())
    restarted_member = FakeMember()
    restarted_member.claim(T0, 10, epoch=100)
    restarted_member.claim(T1, 60, epoch=100)
    restarted = Reader(restarted_member, {T0: (0, 10), T1: (0, 90)}, startingTimestamp="1000")
    end = restarted.latestOffset(checkpoint, ReadAllAvailable())
    assert batch_ranges(checkpoint, end) == [(T1, 60, 90)], "the group's offset, not the time's lookup"
    assert restarted.member.times_asked == []  # type: ignore[attr-defined]


# ---- Trigger.AvailableNow reads every target, or fails saying why ---------------------------------
class Waits:
    """time.sleep replaced: counts the waits and runs `then(n)` at the n-th (what changes meanwhile)."""

    def __init__(self) -> None:
        self.count = 0
        self.then: Callable[[int], None] = lambda _n: None

    def __call__(self, seconds: float) -> None:
        self.count += 1
        self.then(self.count)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    sleeper = Waits()
    monkeypatch.setattr(time, "sleep", sleeper)
    return sleeper


def available_now(member: FakeMember, logs: dict[Key, tuple[int, int]]) -> tuple[Reader, dict[str, Any]]:
    reader = Reader(member, logs, startingOffsets="earliest")
    reader.prepareForTriggerAvailableNow()
    return reader, reader.initialOffset()


def run_to_end(reader: Reader, start: dict[str, Any]) -> dict[Key, int]:
    """Spark's AvailableNow loop: plan until latestOffset answers its start; the last end."""
    for _ in range(20):
        end = reader.latestOffset(start, ReadAllAvailable())
        if end == start:
            return decode_offsets(end)
        reader.commit(end)
        start = end
    raise AssertionError("the run never ended")


def test_available_now_waits_out_a_lease_unconfirmed_for_a_trigger(waits: Waits) -> None:
    class Unconfirmed(FakeMember):
        doubts = 0

        def ownership_confirmed(self) -> bool:
            self.doubts -= 1
            return self.doubts < 0

    member = Unconfirmed()
    member.claim(T0, 0, epoch=100)
    reader, start = available_now(member, {T0: (0, 100)})
    member.doubts = 1  # the first trigger finds the lease unconfirmed
    assert run_to_end(reader, start) == {T0: 100}
    assert waits.count == 1, "it waited for the lease instead of ending the run"


def test_available_now_waits_for_a_partition_released_while_planning(waits: Waits) -> None:
    class Rebalancing(FakeMember):
        during_commit: Iterable[Key] = ()

        def commit_positions(self, positions, *, epochs=None):  # type: ignore[no-untyped-def]
            self.release(self.during_commit)  # the rebalance ran first, then the commit took the lock
            self.during_commit = ()
            return super().commit_positions(positions, epochs=epochs)

    member = Rebalancing()
    member.claim(T0, -1, epoch=100)
    member.claim(T1, -1, epoch=100)
    reader, start = available_now(member, {T0: (0, 30), T1: (0, 60)})
    member.during_commit = [T1]
    waits.then = lambda _n: member.claim(T1, 0, epoch=100)  # the next rebalance hands it back
    assert run_to_end(reader, start) == {T0: 30, T1: 60}
    assert waits.count == 1


def test_available_now_waits_for_ownership_a_dead_predecessor_still_holds(waits: Waits) -> None:
    member = FakeMember()
    reader, start = available_now(member, {T0: (0, 100)})  # owns nothing yet

    def expire(n: int) -> None:  # the predecessor's session expires during the second wait
        if n == 2:
            member.claim(T0, -1, epoch=100)

    waits.then = expire
    assert run_to_end(reader, start) == {T0: 100}
    assert waits.count == 2


def test_available_now_fails_naming_the_partitions_and_their_owner_when_ownership_never_comes(waits: Waits) -> None:
    member = FakeMember()
    member.owner_nodes = {T0: "g_deadhost-1-0"}
    reader, start = available_now(member, {T0: (0, 100)})
    run: Any = getattr(reader, "_run", None)
    if run is not None:
        run.wait_s = 0.0  # the documented bound (60 s here) cut short
    with pytest.raises(
        ZkConsumerError, match=r"owns none of the subscription's partitions yet: t-0 \(owner g_deadhost"
    ):
        reader.latestOffset(start, ReadAllAvailable())


def test_available_now_fails_naming_a_target_left_unread_when_its_partition_does_not_come_back(waits: Waits) -> None:
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    member.claim(T1, 0, epoch=100)
    reader, start = available_now(member, {T0: (0, 30), T1: (0, 60)})
    member.release([T1])
    member.owner_nodes = {T1: "g_other-7-0"}
    first = reader.latestOffset(start, ReadAllAvailable())
    run: Any = getattr(reader, "_run", None)
    if run is not None:
        run.wait_s = 0.0
    with pytest.raises(ZkConsumerError, match=r"targets not read: t-1 at 0 of 60 \(owner g_other-7-0\)"):
        reader.latestOffset(first, ReadAllAvailable())
