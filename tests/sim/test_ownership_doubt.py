"""Regressions for issue #42 findings 1 and 4: delivery stops the moment an owner node is not ours, and a
refused fenced write makes the member register and fence again."""

from __future__ import annotations

import pytest

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, committed, owner_nodes
from zkconsumer.errors import SessionLost
from zkconsumer.zookeeper import znodes

KEY = (TOPIC, 0)


def world(partitions: int = 4) -> Schedule:
    return Schedule(0, Options(members=0, partitions=partitions))


def rounds(s: Schedule, n: int = 12, *, commit: bool = True, accounted: bool = True) -> None:
    """Logical time passes with every live member stepping as in the settle phase (no watchdog).
    `accounted=False` while a node of no simulated member (the Scala claimant's) is in the group."""
    for i in range(n):
        s.model.advance(250)
        for m in s.live():
            s.model.deliver(m.client)
            m.renew_lease()
            m.rebalance()
            m.consume(50)
            if commit and i % 4 == 3:
                m.commit()
        if accounted:
            s.check_accounted()
        s.check_no_foreign_delivery()


def owners(s: Schedule) -> dict[int, str]:
    return {p: thread for p, (thread, _) in owner_nodes(s.model, GROUP, TOPIC).items()}


def settled_pair(s: Schedule) -> tuple[SimMember, SimMember]:
    m1, m2 = s.add_member(), s.add_member()
    rounds(s)
    assert owners(s) == s.expected_owners() and not s.result.violations
    return m1, m2


def holder_of(s: Schedule, members: tuple[SimMember, ...], key: tuple[str, int]) -> SimMember:
    return next(m for m in members if key in m.assignment.owned())


def deliveries_of(s: Schedule, member: SimMember, key: tuple[str, int], since: int) -> list[int]:
    return [d.offset for d in s.deliveries[since:] if d.member == member.name and d.key == key]


def scala_claimant(s: Schedule) -> object:
    """Another claimant's session (a Scala member whose view differs from ours)."""
    client = s.model.client("scala")
    client.start()
    return client


# ---- finding 1: someone else deletes or rewrites our owner node ----------------------------------


def test_1_a_stale_scala_member_deletes_our_owner_node_and_another_claims_it_delivery_stops_at_once() -> None:
    # Before: the data watch on our own owner node only dropped a cache entry: m1 went on delivering
    # t-0 while the other claimant's node held it, until some unrelated rebalance looked again.
    s = world()
    pair = settled_pair(s)
    holder = holder_of(s, pair, KEY)
    path = znodes.owner_path(GROUP, *KEY)
    scala = scala_claimant(s)
    s.admin.delete(path)  # blind: no data or version check (KAFKA-262/KAFKA-286)
    scala.create(path, znodes.encode_owner(f"{GROUP}_scala-0"), ephemeral=True)  # type: ignore[attr-defined]
    s.model.deliver(holder.client)  # the notification reaches the member
    assert holder.pending, "nothing triggered a rebalance"
    since = len(s.deliveries)
    s.log.produce(KEY, 20)
    holder.consume(50)
    s.check_no_foreign_delivery()
    assert deliveries_of(s, holder, KEY, since) == []
    assert not s.result.violations, s.result.violations
    rounds(s, 8, accounted=False)  # the rebalance finds the node foreign, forgets it, and waits for it
    assert deliveries_of(s, holder, KEY, since) == [] and not s.result.violations, s.result.violations
    scala.delete(path)  # type: ignore[attr-defined] # the Scala member lets go
    rounds(s, 12)
    assert owners(s) == s.expected_owners()
    assert deliveries_of(s, holder, KEY, since)[-1] == s.log.end(KEY) - 1  # taken back and delivered
    assert not s.result.violations, s.result.violations


def test_1_a_commit_that_finds_our_node_foreign_stops_delivery_before_the_watch_event_arrives() -> None:
    # Before: the commit skipped the write and nothing else happened.
    s = world()
    pair = settled_pair(s)
    holder = holder_of(s, pair, KEY)
    s.log.produce(KEY, 6)
    holder.consume(3)  # part of it, so the commit has something to write
    path = znodes.owner_path(GROUP, *KEY)
    s.admin.delete(path)
    scala_claimant(s).create(path, znodes.encode_owner(f"{GROUP}_scala-0"), ephemeral=True)  # type: ignore[attr-defined]
    holder.pending.clear()
    holder.commit()  # kazoo's event thread has not run the watch yet
    info = holder.assignment.get(KEY)
    assert info is not None and not info.active
    assert holder.pending, "nothing triggered a rebalance"
    since = len(s.deliveries)
    holder.consume(50)
    assert deliveries_of(s, holder, KEY, since) == []
    assert committed(s.model, GROUP, KEY) in (None, 0)  # and nothing was written for it


def test_1_an_owner_node_rewritten_by_hand_stops_delivery_and_is_deleted_and_claimed_again() -> None:
    # Before: the watch dropped a cache entry; the next attempt found the node "not ours" and forgot
    # it, though it was still our session's node: nobody would ever delete it, and the claim waited
    # for it forever.
    s = world()
    pair = settled_pair(s)
    holder = holder_of(s, pair, KEY)
    path = znodes.owner_path(GROUP, *KEY)
    s.admin.set(path, znodes.encode_owner("somebody-else-0"))
    s.model.deliver(holder.client)
    since = len(s.deliveries)
    s.log.produce(KEY, 5)
    holder.consume(50)
    assert deliveries_of(s, holder, KEY, since) == []
    rounds(s, 12)
    assert owners(s) == s.expected_owners()
    assert deliveries_of(s, holder, KEY, since)[-1] == s.log.end(KEY) - 1
    assert not s.result.violations, s.result.violations


# ---- finding 4: a refused fenced write triggers re-registration --------------------------------


def _fence_path(member: SimMember) -> str:
    fence = member.group.fence
    assert fence is not None
    return fence.path


def test_4_a_fence_node_deleted_by_hand_costs_one_attempt_not_every_commit_while_idle() -> None:
    # Before: every commit failed on the fence for as long as the group did not change.
    s = world()
    m1, m2 = settled_pair(s)
    s.admin.delete(_fence_path(m1))
    s.model.deliver()
    for key in [(TOPIC, p) for p in range(4)]:
        s.log.produce(key, 3)
    rounds(s, 16)
    ends = {p: s.log.end((TOPIC, p)) for p in range(4)}
    assert {p: committed(s.model, GROUP, (TOPIC, p)) for p in range(4)} == ends
    assert s.model.exists(_fence_path(m1))  # fenced again, in the same session
    assert not s.result.violations, s.result.violations


def test_4_a_fence_node_written_by_hand_is_reported_as_such_and_the_member_fences_again() -> None:
    # Before: the check is check(fence, 0) but is_registered() ignored the version: every claim,
    # release and commit failed forever, saying the fence node "is gone", and a joiner waited forever.
    s = world()
    m1 = s.add_member()
    rounds(s)
    s.admin.set(_fence_path(m1), b"edited")
    s.log.produce(KEY, 4)
    m1.consume(50)
    m1.streams.mark_consumed()
    with pytest.raises(SessionLost, match="written to"):
        m1.rebalancer.commit()
    m2 = s.add_member()
    rounds(s, 16)
    assert owners(s) == s.expected_owners()
    assert any(t.startswith(m2.consumer_id) for t in owners(s).values())
    assert committed(s.model, GROUP, KEY) == s.log.end(KEY)
    assert not s.result.violations, s.result.violations


def test_4_is_registered_and_the_fence_check_agree_on_what_ours_means() -> None:
    s = world()
    m1 = s.add_member()
    rounds(s, 4)
    assert m1.group.is_registered()
    s.admin.set(_fence_path(m1), b"")  # same data, version 1: the fence check fails on it
    assert not m1.group.is_registered()
