"""The release linger's decision (pure): how long released owner nodes stay for a Scala joiner."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.coordinator.linger import MARGIN, ROUND_TRIPS_PER_PARTITION, estimated_shares, linger_seconds

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
