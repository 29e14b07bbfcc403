"""The operator review's cases (issue 53) over the exporter's pure parts: what a messy real cluster's groups read as."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from zkconsumer.admin import LagStatus, Ownership, PartitionFacts, PartitionVerdict, group_status, partition_verdict
from zkconsumer.exporter.advice import what_to_do
from zkconsumer.exporter.families import render_view
from zkconsumer.exporter.group_watch import GroupNodes
from zkconsumer.exporter.sampling import GroupSample, Topic, group_sample
from zkconsumer.exporter.view import GroupState, ViewState
from zkconsumer.exporter.window import GroupWindow

GROUP = "g"
DAY_MS = 86_400_000
NOW_MS = 100 * DAY_MS


def registration(*topics: str) -> bytes:
    subscription = ",".join(f'"{t}":1' for t in topics)
    return f'{{"version":1,"subscription":{{{subscription}}},"pattern":"static","timestamp":"1"}}'.encode()


def state_of(samples: tuple[GroupSample, ...]) -> ViewState:
    verdict = group_status([s.sample for s in samples])
    return ViewState(
        samples[-1].sample.at_ms, {GROUP: GroupState(GROUP, GroupWindow.of(samples).snapshot(), verdict)}, 1.0
    )


def metrics(state: ViewState) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(b"".join(render_view(state)).decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def retired_topic_group(last_commit_ms: int) -> GroupNodes:
    """A member on "new" owns its partition; offsets are left on "old", which nobody subscribes to."""
    return GroupNodes(
        {f"{GROUP}_a": (registration("new"), 7)},
        {("new", 0): (b"10", 3, NOW_MS - 1_000), ("old", 0): (b"5", 2, last_commit_ms)},
        {("new", 0): (f"{GROUP}_a-0".encode(), 7)},
        frozenset(),
        frozenset({"new", "old"}),
    )


TOPICS = {"new": Topic((0,), 1), "old": Topic((0,), 1)}
ENDS = {("new", 0): 10, ("old", 0): 500}


def sample_retired(last_commit_ms: int, retired_after_ms: int | None, at_ms: int = NOW_MS) -> GroupSample:
    return group_sample(
        GROUP,
        retired_topic_group(last_commit_ms),
        TOPICS,
        {"new", "old"},
        ENDS,
        at_ms,
        subscribed={"new"},
        retired_after_ms=retired_after_ms,
    )


def test_a_retired_topic_is_not_unowned_nor_err_nor_lag() -> None:
    samples = (sample_retired(NOW_MS - DAY_MS, 7 * DAY_MS, NOW_MS - 1_000), sample_retired(NOW_MS - DAY_MS, 7 * DAY_MS))
    state = state_of(samples)
    verdict = state.groups[GROUP].verdict
    old = verdict.partitions[("old", 0)]
    assert old.ownership is Ownership.UNSUBSCRIBED and old.status is LagStatus.WARN
    assert "no registered member subscribes" in old.reason and "495 messages" in old.reason
    assert verdict.status is LagStatus.WARN and verdict.total_lag == 0  # the member on "new" is caught up
    exposed = metrics(state)
    assert exposed["zkconsumer_group_unowned_partitions"] == {(("group", GROUP),): 0.0}
    assert exposed["zkconsumer_group_lag"] == {(("group", GROUP),): 0.0}
    assert exposed["zkconsumer_partition_lag"][(("group", GROUP), ("partition", "0"), ("topic", "old"))] == 495.0
    steps = what_to_do(GROUP, verdict, ["g_a"], ())
    assert not any("rebalance" in step for step in steps), steps  # its plan would find nothing to do
    assert any("retired" in step for step in steps), steps


def test_a_retired_topic_is_forgotten_after_its_last_commit_is_old_enough() -> None:
    kept = sample_retired(NOW_MS - 6 * DAY_MS, 7 * DAY_MS).sample.partitions
    forgotten = sample_retired(NOW_MS - 8 * DAY_MS, 7 * DAY_MS).sample.partitions
    never = sample_retired(NOW_MS - 80 * DAY_MS, None).sample.partitions
    assert ("old", 0) in kept and ("old", 0) in never
    assert sorted(forgotten) == [("new", 0)]
    assert group_status([sample_retired(NOW_MS - 8 * DAY_MS, 7 * DAY_MS).sample]).status is LagStatus.OK


def test_a_memberless_group_keeps_its_partitions_unowned() -> None:
    """No member at all: the group stopped (GroupStopped's case), not a retired topic."""
    nodes = GroupNodes({}, {("old", 0): (b"5", 2, NOW_MS)}, {}, frozenset(), frozenset({"old"}))
    taken = group_sample(GROUP, nodes, TOPICS, {"old"}, ENDS, NOW_MS, subscribed=set(), retired_after_ms=0)
    assert taken.sample.partitions[("old", 0)].ownership is Ownership.UNOWNED


def lost_owners(parts: int, ends: int) -> ViewState:
    """A group of `parts` partitions whose member is registered but owns nothing (a rebalance gave up)."""
    nodes = GroupNodes(
        {f"{GROUP}_a": (registration("t"), 7)},
        {("t", p): (b"0", 2, NOW_MS) for p in range(parts)},
        {},
        frozenset(),
        frozenset({"t"}),
    )
    lag = {("t", p): ends + p % 3 for p in range(parts)}
    return state_of((group_sample(GROUP, nodes, {"t": Topic(tuple(range(parts)), 1)}, {"t"}, lag, NOW_MS),))


def test_label_values_are_bounded_and_do_not_change_with_the_flagged_partitions() -> None:
    """The review's 63,405-byte `reason` label of a 4,096-partition group: Prometheus with a
    label_value_length_limit rejects the whole scrape, and each change of the flagged set minted a series
    (1,024 partitions here: the reason label was 14,253 bytes)."""
    big, other = lost_owners(1024, 5), lost_owners(1024, 0)
    assert big.groups[GROUP].verdict.status is LagStatus.ERR
    exposed = metrics(big)
    longest = max(len(v) for family in exposed.values() for labels in family for _k, v in labels)
    assert longest <= 64, longest
    # the same series whatever is flagged: the label sets of the group families are the same
    others = metrics(other)
    assert {n: set(f) for n, f in exposed.items() if n.startswith("zkconsumer_group_status")} == {
        n: set(f) for n, f in others.items() if n.startswith("zkconsumer_group_status")
    }
    by_status = exposed["zkconsumer_group_partitions_by_status"]
    assert by_status[(("group", GROUP), ("status", "ERR"))] == 1024.0 and len(by_status) == 7


def memberless(parts: int, ends: dict[tuple[str, int], int], at_ms: int) -> GroupSample:
    """A group with no member, offsets at 0 on `parts` partitions of "t"."""
    nodes = GroupNodes({}, {("t", p): (b"0", 2, NOW_MS) for p in range(parts)}, {}, frozenset(), frozenset({"t"}))
    return group_sample(GROUP, nodes, {"t": Topic(tuple(range(parts)), 1)}, {"t"}, ends, at_ms)


def test_a_broker_gone_keeps_the_lag_it_last_saw_and_says_it_cannot_see() -> None:
    """The review's real cluster: 30 messages wait per partition, the leader dies; lag read 0, ERR went WARN."""
    before = memberless(2, {("t", 0): 30, ("t", 1): 30}, NOW_MS - 2_000)
    after = memberless(2, {}, NOW_MS)
    state = state_of((before, after))
    verdict = state.groups[GROUP].verdict
    assert verdict.status is LagStatus.ERR and verdict.total_lag == 60
    assert all(v.unseen and v.lag == 30 for v in verdict.partitions.values())
    exposed = metrics(state)
    assert exposed["zkconsumer_group_lag"] == {(("group", GROUP),): 60.0}
    assert exposed["zkconsumer_group_unseen_partitions"] == {(("group", GROUP),): 2.0}
    assert set(exposed["zkconsumer_partition_lag"].values()) == {30.0}


def test_most_of_a_group_unseen_is_never_ok() -> None:
    """The review's 99 NOTFOUND + 1 OK read OK."""
    owners = {("t", p): (f"{GROUP}_a-0".encode(), 7) for p in range(100)}
    nodes = GroupNodes(
        {f"{GROUP}_a": (registration("t"), 7)},
        {("t", p): (b"5", 2, NOW_MS) for p in range(100)},
        owners,
        frozenset(),
        frozenset({"t"}),
    )
    taken = group_sample(GROUP, nodes, {"t": Topic(tuple(range(100)), 1)}, {"t"}, {("t", 0): 5}, NOW_MS)
    verdict = group_status([taken.sample])
    assert verdict.status is LagStatus.WARN
    assert "99 of 100 partitions unseen" in verdict.reasons[0]


def test_an_unowned_partition_with_an_unknown_log_end_is_not_caught_up() -> None:
    verdict = group_status([memberless(1, {}, NOW_MS).sample]).partitions[("t", 0)]
    assert verdict.unseen and "caught up" not in verdict.reason and "unknown" in verdict.reason


def test_log_ends_are_asked_per_leader_and_never_of_a_partition_without_one() -> None:
    from types import SimpleNamespace

    from zkconsumer.exporter.log_ends import leaders_of

    def topic(*leaders: int) -> SimpleNamespace:
        return SimpleNamespace(error=None, partitions={p: SimpleNamespace(leader=b) for p, b in enumerate(leaders)})

    topics = {"a": topic(1, 2, 1), "b": topic(-1, 2), "gone": SimpleNamespace(error="UNKNOWN", partitions={})}
    wanted = [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("gone", 0), ("c", 0)]
    by_leader, failed = leaders_of(wanted, topics)
    assert by_leader == {1: [("a", 0), ("a", 2)], 2: [("a", 1), ("b", 1)]}
    assert failed[("b", 0)] == "it has no leader (offline)"
    assert sorted(failed) == [("b", 0), ("c", 0), ("gone", 0)]


def test_no_commit_ever_is_lag_unknown_not_caught_up_nor_err() -> None:
    """Owned, no offset node, 1,000,000 messages: was "caught up" with lag from 0; an empty expired
    log (start == end == 500) without offset node and owner: was "ERR, 500 messages wait"."""
    owned = GroupNodes(
        {f"{GROUP}_a": (registration("t"), 7)},
        {},
        {("t", 0): (f"{GROUP}_a-0".encode(), 7)},
        frozenset(),
        frozenset({"t"}),
    )
    samples = tuple(
        group_sample(GROUP, owned, {"t": Topic((0,), 1)}, {"t"}, {("t", 0): 1_000_000}, at)
        for at in (NOW_MS - 1_000, NOW_MS)
    )
    state = state_of(samples)
    verdict = state.groups[GROUP].verdict
    row = verdict.partitions[("t", 0)]
    assert row.lag is None and row.status is LagStatus.NOTFOUND and "no offset committed" in row.reason
    assert "zkconsumer_partition_lag" not in metrics(state)  # no series rather than a made-up number
    expired = GroupNodes({}, {}, {}, frozenset(), frozenset({"t"}))
    taken = group_sample(GROUP, expired, {"t": Topic((0,), 1)}, {"t"}, {("t", 0): 500}, NOW_MS)
    empty = group_status([taken.sample])
    assert empty.status is not LagStatus.ERR and empty.total_lag == 0, empty


def test_a_wait_longer_than_the_window_is_flagged_a_lower_bound() -> None:
    """The review's message seen waiting 1,990 s read 600 s (the window) with no at-least signal."""
    samples = tuple(memberless(1, {("t", 0): 30}, NOW_MS - 600_000 + i * 60_000) for i in range(11))
    state = state_of(samples)
    exposed = metrics(state)
    assert exposed["zkconsumer_group_max_lag_seconds"] == {(("group", GROUP),): 600.0}
    assert exposed["zkconsumer_group_max_lag_seconds_lower_bound"] == {(("group", GROUP),): 1.0}
    # caught up within the window: the wait is exact (to the interval), not a lower bound
    moving = (memberless(1, {("t", 0): 0}, NOW_MS - 120_000), memberless(1, {("t", 0): 30}, NOW_MS - 60_000))
    exact = metrics(state_of((*moving, memberless(1, {("t", 0): 30}, NOW_MS))))
    assert exact["zkconsumer_group_max_lag_seconds_lower_bound"] == {(("group", GROUP),): 0.0}


def owned_at(offset: int, end: int, start: int | None = None) -> PartitionVerdict:
    facts = PartitionFacts((), offset, end, ((NOW_MS, end),), f"{GROUP}_a-0", Ownership.OWNED, log_start=start)
    return partition_verdict(facts, NOW_MS)


def test_an_offset_out_of_the_log_is_flagged_not_caught_up() -> None:
    """Past the log end was OK "caught up" though describe/verify flag it; below the log start the lag
    counted deleted messages and said nothing of the reset to come."""
    past = owned_at(700, 500)
    assert past.status is LagStatus.WARN and "past the log end 500" in past.reason and past.lag == 0
    below = owned_at(100, 500, start=400)
    assert below.status is LagStatus.WARN and "below the log start 400" in below.reason
    assert below.lag == 100  # what is left to read, not the 400 counted from the deleted offset
    assert owned_at(450, 500, start=400).status is LagStatus.OK
