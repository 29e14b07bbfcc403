"""A member whose server lost its leader but keeps answering: the lease must end before the leader expires the session (issue #42, finding 3).

The follower answers reads from its own copy for syncLimit × tickTime (3 s here) after it lost
its leader; the leader expires the session after 4 s. A renewal the follower can answer alone
(an `exists`) goes on extending the lease until the follower gives up, so the lease outlives the
session by more than a second. The default renewal is confirmed by the leader (a sync before the
read; "check", a check-only transaction, is a write): neither can be answered behind the cut, so
the lease ends a lease's length after the last renewal before the cut — before the session can.
"""

from __future__ import annotations

from harness import sim_lease_world as lease_world
from harness.sim_follower import LostFollower
from harness.sim_schedule import TOPIC, Schedule
from harness.simulation import SimMember
from zkconsumer.coordinator.membership import State

T_MS = 4000
SYNC_LIMIT_MS = 3000  # syncLimit × tickTime: how long the follower answers without its leader
PARTITIONS = 4


def world() -> Schedule:
    return lease_world.world(T_MS, PARTITIONS)


def join(s: Schedule, name: str) -> SimMember:
    return lease_world.join(s, name, T_MS)


def step(s: Schedule, m: SimMember) -> None:
    s.model.deliver(m.client)
    m.renew_lease()
    m.rebalance()
    m.consume(10)


def behind_a_lost_follower(renewal: str | None) -> tuple[Schedule, list[str]]:
    """m1 owns every partition; its server loses its leader; m2 joins through the leader. What m1
    delivers once the leader expired its session, and the invariant's violations."""
    s = world()
    m1 = join(s, "m1")
    if renewal is not None:
        m1.membership._renewal = renewal  # the renewal before issue #42, side by side
    for _ in range(6):
        s.model.advance(250)
        step(s, m1)
    assert len(m1.assignment.owned()) == PARTITIONS
    for p in range(PARTITIONS):
        s.log.produce((TOPIC, p), 400)
    session = m1.group.session
    follower = LostFollower(s.model, m1.client)
    follower.cut()
    cut = s.model.now_ms
    m2: SimMember | None = None
    expired_at: int | None = None
    while s.model.now_ms < cut + 2 * T_MS:
        s.model.advance(100)
        if s.model.now_ms == cut + SYNC_LIMIT_MS:
            follower.give_up()
        if expired_at is None and session not in s.model.live_sessions():
            expired_at = s.model.now_ms
            m2 = join(s, "m2")
        if m2 is not None:
            step(s, m2)
        step(s, m1)
    assert expired_at is not None
    s.model.reconnect(m1.client)
    s.model.deliver(m1.client)
    assert m1.membership.state is State.EXPIRED
    late = [f"{d.key[0]}-{d.key[1]}@{d.offset}" for d in s.deliveries if d.member == "m1" and d.at_ms >= expired_at]
    return s, late


def test_the_default_renewal_ends_the_lease_before_the_leader_expires_the_session() -> None:
    s, late = behind_a_lost_follower(None)
    assert late == []
    assert s.result.violations == []


def test_a_check_only_transaction_renewal_does_too() -> None:
    s, late = behind_a_lost_follower("check")
    assert late == [] and s.result.violations == []


def test_a_renewal_the_follower_answers_alone_outlives_the_session() -> None:
    """The finding, kept reproducible: what the actor shows."""
    s, late = behind_a_lost_follower("read")
    assert late != []
    assert s.result.violations and all("without owning it" in v for v in s.result.violations)
