"""zkconsumer.admin.verdicts: Burrow's five rules, lag ages from log-end samples, ownership before lag."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.admin import Commit, LagStatus, Ownership, PartitionFacts, group_verdict, lag_status, partition_verdict
from zkconsumer.admin.verdicts import lag_age

NOW = 1_000_000


def window(*rows: tuple[int, int, int]) -> tuple[Commit, ...]:
    """(offset, at_ms, lag) rows, oldest first."""
    return tuple(Commit(o, t, lag) for o, t, lag in rows)


# ---- Burrow's rules, one scenario each ---------------------------------------------------------


def test_a_consumer_that_caught_up_once_in_the_window_is_ok_whatever_else() -> None:
    w = window((100, NOW - 40_000, 5), (90, NOW - 30_000, 0), (90, NOW - 20_000, 9))
    assert lag_status(w, 9, NOW) is LagStatus.OK  # a rewind too, but rule 1 comes first


def test_rules_in_order_rewind_stop_stall_warn() -> None:
    rewind = window((100, NOW - 40_000, 5), (90, NOW - 30_000, 15))
    assert lag_status(rewind, 15, NOW) is LagStatus.REWIND
    stopped = window((100, NOW - 60_000, 5), (110, NOW - 50_000, 5))  # silent 50 s > the window's 10 s
    assert lag_status(stopped, 5, NOW) is LagStatus.STOP
    stalled = window((100, NOW - 30_000, 5), (100, NOW - 20_000, 8), (100, NOW - 10_000, 12))
    assert lag_status(stalled, 12, NOW) is LagStatus.STALL
    slow = window((100, NOW - 30_000, 5), (110, NOW - 20_000, 8), (120, NOW - 10_000, 12))
    assert lag_status(slow, 12, NOW) is LagStatus.WARN
    catching_up = window((100, NOW - 30_000, 12), (130, NOW - 20_000, 8), (150, NOW - 10_000, 9))
    assert lag_status(catching_up, 9, NOW) is LagStatus.OK


commits = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(0, 500), st.integers(0, 50)), min_size=1, max_size=12
).map(lambda rows: tuple(Commit(o, NOW - 100_000 + i * 1000 + d, lag) for i, (o, d, lag) in enumerate(rows)))


@given(commits, st.integers(0, 100), st.integers(-50_000, 50_000))
def test_the_status_depends_on_time_only_through_differences(w: tuple[Commit, ...], lag: int, shift: int) -> None:
    moved = tuple(Commit(c.offset, c.at_ms + shift, c.lag) for c in w)
    assert lag_status(moved, lag, NOW + shift) is lag_status(w, lag, NOW)


@given(commits, st.integers(0, 100))
def test_zero_lag_anywhere_or_now_is_ok_and_a_rewind_with_lag_always_is_rewind(w: tuple[Commit, ...], lag: int) -> None:
    status = lag_status(w, lag, NOW)
    if lag == 0 or any(c.lag == 0 for c in w):
        assert status is LagStatus.OK
    elif any(b.offset < a.offset for a, b in zip(w, w[1:])):
        assert status is LagStatus.REWIND
    else:
        assert status is not LagStatus.REWIND


# ---- lag ages --------------------------------------------------------------------------------------


def test_a_lag_age_counts_from_the_first_sample_past_the_committed_offset() -> None:
    samples = [(NOW - 30_000, 100), (NOW - 20_000, 105), (NOW - 10_000, 120)]
    assert lag_age(120, samples, NOW).seconds == 0.0
    age = lag_age(102, samples, NOW)
    assert (age.seconds, age.at_least, age.within_s) == (20.0, False, 10.0)
    oldest = lag_age(50, samples, NOW)  # already waiting when sampling began
    assert (oldest.seconds, oldest.at_least) == (30.0, True)


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=20),
    st.integers(0, 600),
    st.integers(0, 600),
)
def test_a_larger_committed_offset_never_waited_longer(steps: list[int], a: int, b: int) -> None:
    ends, total = [], 0
    for i, step in enumerate(steps):
        total += step
        ends.append((NOW - 100_000 + i * 1000, total))
    low, high = sorted((a, b))
    assert lag_age(high, ends, NOW).seconds <= lag_age(low, ends, NOW).seconds
    assert (lag_age(low, ends, NOW).seconds == 0.0) == (low >= total)


# ---- ownership first, and the group -----------------------------------------------------------------


def facts(ownership: Ownership, *, committed: int = 100, log_end: int | None = 110) -> PartitionFacts:
    return PartitionFacts(
        window=window((committed, NOW - 1000, 10)),
        committed=committed,
        log_end=log_end,
        log_ends=((NOW - 1000, log_end or 0),),
        owner=None if ownership is Ownership.UNOWNED else "g_a-0",
        ownership=ownership,
    )


def test_ownership_decides_before_the_lag() -> None:
    assert partition_verdict(facts(Ownership.UNOWNED), NOW).status is LagStatus.ERR
    assert partition_verdict(facts(Ownership.UNOWNED, log_end=100), NOW).status is LagStatus.WARN
    gone = partition_verdict(facts(Ownership.OWNER_GONE), NOW)
    assert gone.status is LagStatus.ERR and "g_a-0" in gone.reason
    assert partition_verdict(facts(Ownership.FOREIGN_SESSION), NOW).status is LagStatus.ERR
    assert partition_verdict(facts(Ownership.OWNED, log_end=None), NOW).status is LagStatus.NOTFOUND
    assert partition_verdict(facts(Ownership.UNSUBSCRIBED), NOW).status is LagStatus.WARN


@given(st.lists(st.sampled_from(list(Ownership)), min_size=1, max_size=6), st.integers(0, 30))
def test_a_group_takes_its_worst_partition_capped_at_err(ownerships: list[Ownership], lag: int) -> None:
    verdicts = {("t", i): partition_verdict(facts(o, log_end=100 + lag), NOW) for i, o in enumerate(ownerships)}
    group = group_verdict(verdicts, members=["g_a"], owning=["g_a"])
    assert group.status == min(max(v.status for v in verdicts.values()), LagStatus.ERR)
    # a retired topic's messages (no member subscribes to it) wait for nobody: not the group's lag
    assert group.total_lag == lag * sum(1 for o in ownerships if o is not Ownership.UNSUBSCRIBED)


def test_members_owning_nothing_beside_unowned_partitions_is_a_rebalance_that_gave_up() -> None:
    verdicts = {
        ("t", 0): partition_verdict(facts(Ownership.OWNED, log_end=100), NOW),
        ("t", 1): partition_verdict(facts(Ownership.UNOWNED, log_end=100), NOW),
    }
    group = group_verdict(verdicts, members=["g_a", "g_b"], owning=["g_a"])
    assert group.status is LagStatus.ERR
    assert group.reasons[0].startswith("1 registered members own nothing (g_b) while t-1 have no owner")


def test_reasons_built_when_asked_read_as_stored_ones() -> None:
    waiting = partition_verdict(facts(Ownership.UNOWNED), NOW)
    assert waiting.why is None and waiting.reason == "nobody owns it and 10 messages wait"
    gone = partition_verdict(facts(Ownership.OWNER_GONE), NOW)
    group = group_verdict({("t", 1): gone, ("t", 0): waiting}, members=["g_a"], owning=["g_a"])
    assert group.group_reasons == ()
    assert group.reasons == (
        "t-0: ERR nobody owns it and 10 messages wait",
        f"t-1: ERR {gone.reason}",
    )
