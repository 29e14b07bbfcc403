"""A member behind a leader cut from the majority: sync renewals lease past the session where timing.py says they are unsafe; the auto rule does not (issue 51, finding 4).

The old leader answers syncs for one tickTime (2 s) after the majority's new leader started
counting the 4 s session; a sync-confirmed renewal then leases until 2 - 1 + 3.6 = 4.6 s after
the election, 0.6 s past the expiry (config/timing.py, `sync_renewal_safe`: T > 0.35 S). The
auto rule renews with a quorum write at this session and tick, which the old leader cannot answer.
"""

from __future__ import annotations

from harness import sim_lease_world as lease_world
from harness.sim_leader import IsolatedLeader
from harness.sim_schedule import TOPIC, Schedule
from harness.simulation import SimMember
from zkconsumer.config.timing import DEFAULT_TICK_MS, renewal_for

S_MS = 4000
PARTITIONS = 4


def step(s: Schedule, m: SimMember) -> None:
    s.model.deliver(m.client)
    m.renew_lease()
    m.rebalance()
    m.consume(10)


def behind_an_isolated_leader(renewal: str | None) -> tuple[Schedule, list[str]]:
    """m1 owns every partition; its leader is cut from the majority, which counts m1's session from
    then; m2 joins through the majority once it expired. What m1 delivers after the expiry."""
    s = lease_world.world(S_MS, PARTITIONS)
    m1 = lease_world.join(s, "m1", S_MS)
    if renewal is not None:
        m1.membership._renewal = renewal
    for _ in range(6):
        s.model.advance(250)
        step(s, m1)
    assert len(m1.assignment.owned()) == PARTITIONS
    for p in range(PARTITIONS):
        s.log.produce((TOPIC, p), 400)
    session = m1.group.session
    leader = IsolatedLeader(s.model, m1.client)
    leader.cut()
    cut = s.model.now_ms
    m2: SimMember | None = None
    expired_at: int | None = None
    while s.model.now_ms < cut + 2 * S_MS:
        s.model.advance(100)
        if s.model.now_ms == cut + DEFAULT_TICK_MS:
            leader.give_up()
        if expired_at is None and session not in s.model.live_sessions():
            expired_at = s.model.now_ms
            m2 = lease_world.join(s, "m2", S_MS)
        if m2 is not None:
            step(s, m2)
        step(s, m1)
    assert expired_at is not None
    late = [f"{d.key[0]}-{d.key[1]}@{d.offset}" for d in s.deliveries if d.member == "m1" and d.at_ms >= expired_at]
    return s, late


def test_the_auto_rule_renews_with_a_quorum_write_here_and_delivers_nothing_after_expiry() -> None:
    assert renewal_for(S_MS / 1000, DEFAULT_TICK_MS / 1000) == "check"
    s, late = behind_an_isolated_leader(None)
    assert late == [] and s.result.violations == []


def test_sync_renewals_where_they_are_unsafe_deliver_after_expiry() -> None:
    """The planted bug: sync renewals at T > 0.35 S. The actor must find deliveries after expiry."""
    s, late = behind_an_isolated_leader("sync")
    assert late != []
    assert s.result.violations and all("without owning it" in v for v in s.result.violations)
