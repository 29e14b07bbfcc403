"""The release linger's decision (pure): how long released owner nodes stay for a Scala joiner."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.config.compat import Compat
from zkconsumer.config.timing import LINGER_BUDGET_SHARE
from zkconsumer.coordinator.linger import (
    MARGIN,
    ROUND_TRIPS_PER_PARTITION,
    SAMPLES,
    ReleaseLinger,
    estimated_shares,
    linger_seconds,
)

shares_st = st.lists(st.integers(min_value=0, max_value=100_000), max_size=8)
seconds = st.floats(min_value=0.0, max_value=30.0, allow_nan=False)


@given(shares_st, seconds, seconds, seconds)
def test_no_scala_member_or_no_floor_means_no_linger_else_between_floor_and_max(
    shares: list[int], round_trip_s: float, floor_s: float, max_s: float
) -> None:
    got = linger_seconds(shares, round_trip_s, floor_s=floor_s, max_s=max_s)
    if not shares or floor_s <= 0:
        assert got == 0.0
    else:
        assert floor_s <= got <= max(floor_s, max_s)


@given(shares_st, seconds, seconds, seconds)
def test_the_linger_covers_the_largest_shares_read_to_claim_gap_unless_capped(
    shares: list[int], round_trip_s: float, floor_s: float, max_s: float
) -> None:
    got = linger_seconds(shares, round_trip_s, floor_s=floor_s, max_s=max_s)
    if shares and floor_s > 0:
        gap = ROUND_TRIPS_PER_PARTITION * max(shares) * round_trip_s  # its reads, then its creates
        # The same product in another order may round one ulp lower (found at 1e-128 s).
        assert got >= min(gap * MARGIN, max(floor_s, max_s)) * (1 - 1e-12)
        assert got >= min(gap, max(floor_s, max_s))


@given(shares_st, st.integers(min_value=0, max_value=1000), seconds, seconds, seconds, seconds)
def test_the_linger_never_shrinks_when_a_share_or_the_round_trip_grows(
    shares: list[int], more: int, round_trip_s: float, slower_s: float, floor_s: float, max_s: float
) -> None:
    base = linger_seconds(shares, round_trip_s, floor_s=floor_s, max_s=max_s)
    grown = [s + more for s in shares]
    assert linger_seconds(grown, round_trip_s, floor_s=floor_s, max_s=max_s) >= base
    assert linger_seconds(shares, round_trip_s + slower_s, floor_s=floor_s, max_s=max_s) >= base
    assert linger_seconds([*shares, more], round_trip_s, floor_s=floor_s, max_s=max_s) >= base


@given(
    st.dictionaries(st.integers(min_value=0, max_value=500), st.sampled_from(["g_a-0", "g_a-1", "g_b-0"])),
    st.integers(min_value=0, max_value=20),
)
def test_a_member_takes_its_share_in_our_assignment_or_an_even_split_if_it_joined_since(
    decided_by_partition: dict[int, str], registered: int
) -> None:
    decided = {("t", p): thread for p, thread in decided_by_partition.items()}
    shares = estimated_shares(["g_a", "g_b", "g_new"], decided, registered)
    even = math.ceil(len(decided) / max(1, registered))
    a = sum(1 for thread in decided.values() if thread.startswith("g_a-"))
    b = sum(1 for thread in decided.values() if thread.startswith("g_b-"))
    assert shares == {"g_a": a or even, "g_b": b or even, "g_new": even}


class TimedGroup:
    """What ReleaseLinger reads of GroupZk: each read costs `round_trips` seconds in turn on `clock`."""

    consumer_id = "g_ours"

    def __init__(self, members: list[str], marked: set[str], round_trips: list[float]) -> None:
        self.members, self.marked, self.round_trips = members, marked, round_trips
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def _read(self) -> None:
        self.now += self.round_trips.pop(0) if len(self.round_trips) > 1 else self.round_trips[0]

    def member_ids(self) -> list[str]:
        self._read()
        return list(self.members)

    def zkconsumer_members(self) -> set[str]:
        self._read()
        return set(self.marked)


def scala_handover(group: TimedGroup, share: int, **limits: float) -> ReleaseLinger:
    linger = ReleaseLinger(group, 1.0, threading.Event(), clock=group.clock, **limits)  # type: ignore[arg-type]
    decided = {("t", p): "g_scala-0" for p in range(share)}
    linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], decided)
    return linger


def test_the_linger_never_outlasts_half_the_oldest_scala_releases_retry_budget() -> None:
    """Issue 51, finding 1: share 600 at our 3 ms made a 10 s linger, past a Scala joiner's last
    attempt (4 attempts, 2 s apart): it gave up and its share sat unowned in an idle group."""
    budget = Compat.parse("0.8.2").scala_retry_budget_s
    assert budget == Compat.parse("1.1").scala_retry_budget_s == 6.0  # (4 - 1) x 2000 ms in every release
    group = TimedGroup(["g_ours", "g_scala"], {"g_ours"}, [0.003])
    linger = scala_handover(group, 600, max_s=10.0, budget_s=budget)
    assert linger.last_linger_s == LINGER_BUDGET_SHARE * budget == 3.0
    assert linger.remaining() == 3.0


def test_the_linger_is_sized_from_the_slowest_of_several_samples() -> None:
    """One fast sample on an idle server sized the linger alone before: a slow read a look earlier counts."""
    group = TimedGroup(["g_ours", "g_scala"], {"g_ours"}, [0.004, 0.0005])
    linger = scala_handover(group, 100, max_s=10.0, budget_s=6.0)
    assert linger.last_linger_s == pytest.approx(MARGIN * ROUND_TRIPS_PER_PARTITION * 100 * 0.004)
    linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], {("t", p): "g_scala-0" for p in range(100)})
    assert linger.last_linger_s == pytest.approx(2.4), "the 4 ms sample still counts"
    for _ in range(SAMPLES):
        linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], {("t", p): "g_scala-0" for p in range(100)})
    assert linger.last_linger_s == 1.0, "it ages out after SAMPLES reads (the floor: 0.3 s needed)"


def test_partitions_handed_over_after_a_linger_are_followed_for_one_retry_budget() -> None:
    group = TimedGroup(["g_ours", "g_scala"], {"g_ours", "g_scala"}, [0.001])
    linger = scala_handover(group, 10, max_s=10.0, budget_s=6.0)
    linger.released([("t", 0)])
    assert linger.stranded() == [], "no linger (every member marked): nothing to follow"

    group.marked = {"g_ours"}
    linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], {("t", 1): "g_scala-0"})
    linger.released([("t", 1)])
    group.now += 5.9
    assert linger.stranded() == []
    group.now += 0.2
    assert linger.stranded() == [("t", 1)]
    assert linger.stranded() == [], "given once"


def test_a_partition_still_unowned_a_retry_budget_after_the_hand_over_nudges_the_group_once() -> None:
    """The recovery when a Scala joiner gave up anyway: the member that handed the partition over
    sees it unowned past the budget and nudges ids/, as `groups rebalance` does."""
    group = TimedGroup(["g_ours", "g_scala"], {"g_ours"}, [0.001])
    owners: dict[tuple[str, int], str | None] = {("t", 0): None, ("t", 1): "g_scala-0"}
    nudged: list[str] = []
    group.reads = type("Reads", (), {"owner_threads": staticmethod(lambda keys: {k: owners[k] for k in keys})})()  # type: ignore[attr-defined]
    group.nudge_members = lambda: nudged.append("/consumers/g/ids/g_zkconsumer-rebalance-1-000001") or nudged[-1]  # type: ignore[attr-defined]
    linger = scala_handover(group, 2, max_s=10.0, budget_s=6.0)
    linger.released([("t", 0), ("t", 1)])
    linger.follow_up(owned=set())
    assert nudged == [], "within the budget the joiner may still claim"
    group.now += 6.5
    linger.follow_up(owned=set())
    assert len(nudged) == 1
    linger.follow_up(owned=set())
    assert len(nudged) == 1, "once per hand-over"

    linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], {("t", 1): "g_scala-0"})
    linger.released([("t", 1)])
    group.now += 6.5
    linger.follow_up(owned=set())
    assert len(nudged) == 1, "owned by the joiner: no nudge"
