"""A member whose server lost its leader but keeps answering: the lease must end before the leader expires the session (issue #42, finding 3).

The follower answers reads from its own copy for syncLimit × tickTime (3 s here) after it lost
its leader; the leader expires the session after 4 s. A renewal the follower can answer alone
(an `exists`) goes on extending the lease until the follower gives up, so the lease outlives the
session by more than a second. The default renewal is confirmed by the leader (a sync before the
read; "check", a check-only transaction, is a write): neither can be answered behind the cut, so
the lease ends a lease's length after the last renewal before the cut — before the session can.
"""

from __future__ import annotations

from harness.sim_follower import LostFollower
from harness.sim_lease_world import owner_behind_a_cut
from zkconsumer.coordinator.membership import State

T_MS = 4000
SYNC_LIMIT_MS = 3000  # syncLimit × tickTime: how long the follower answers without its leader
PARTITIONS = 4


def behind_a_lost_follower(renewal: str | None) -> tuple[list[str], list[str]]:
    """m1's server loses its leader; m2 joins through the leader. What m1 delivers once the leader
    expired its session, and the invariant's violations."""
    s, m1, late = owner_behind_a_cut(T_MS, PARTITIONS, renewal, LostFollower, SYNC_LIMIT_MS)
    s.model.reconnect(m1.client)
    s.model.deliver(m1.client)
    assert m1.membership.state is State.EXPIRED
    return late, s.result.violations


def test_the_default_renewal_ends_the_lease_before_the_leader_expires_the_session() -> None:
    late, violations = behind_a_lost_follower(None)
    assert late == [] and violations == []


def test_a_check_only_transaction_renewal_does_too() -> None:
    late, violations = behind_a_lost_follower("check")
    assert late == [] and violations == []


def test_a_renewal_the_follower_answers_alone_outlives_the_session() -> None:
    """The finding, kept reproducible: what the actor shows."""
    late, violations = behind_a_lost_follower("read")
    assert late != []
    assert violations and all("without owning it" in v for v in violations)
