"""A member behind a leader cut from the majority: sync renewals lease past the session where timing.py says they are unsafe; the auto rule does not (issue 51, finding 4).

The old leader answers syncs for one tickTime (2 s) after the majority's new leader started
counting the 4 s session; a sync-confirmed renewal then leases until 2 - 1 + 3.6 = 4.6 s after
the election, 0.6 s past the expiry (config/timing.py, `sync_renewal_safe`: T > 0.35 S). The
auto rule renews with a quorum write at this session and tick, which the old leader cannot answer.
"""

from __future__ import annotations

from harness.sim_leader import IsolatedLeader
from harness.sim_lease_world import owner_behind_a_cut
from zkconsumer.config.timing import DEFAULT_TICK_MS, renewal_for

S_MS = 4000
PARTITIONS = 4


def behind_an_isolated_leader(renewal: str | None) -> tuple[list[str], list[str]]:
    """m1's leader is cut from the majority, which counts m1's session from then; it answers syncs
    for one tick. What m1 delivers after the expiry, and the invariant's violations."""
    s, _, late = owner_behind_a_cut(S_MS, PARTITIONS, renewal, IsolatedLeader, DEFAULT_TICK_MS)
    return late, s.result.violations


def test_the_auto_rule_renews_with_a_quorum_write_here_and_delivers_nothing_after_expiry() -> None:
    assert renewal_for(S_MS / 1000, DEFAULT_TICK_MS / 1000) == "check"
    late, violations = behind_an_isolated_leader(None)
    assert late == [] and violations == []


def test_sync_renewals_where_they_are_unsafe_deliver_after_expiry() -> None:
    """The planted bug: sync renewals at T > 0.35 S. The actor must find deliveries after expiry."""
    late, violations = behind_an_isolated_leader("sync")
    assert late != []
    assert violations and all("without owning it" in v for v in violations)
