"""Regression (review of issue #42, finding T1): a leader-confirmed renewal is not a touch the leader recorded.

The renewal is a sync, then the exists, through the server the member is connected to. Behind a
follower, the sync proves the follower reached its leader; it does not tell the leader that our
session is alive. In ZooKeeper a follower reports the sessions its clients touched only in its
answer to the leader's next PING (Learner.ping: the touch table; the leader pings every tickTime/2),
and a forwarded request touches nothing at the leader (LearnerHandler: REQUEST goes straight to
submitLearnerRequest). So when the follower's link to its leader breaks after a renewal's sync was
answered and before the follower's next ping answer, the leader last heard of the session through
the renewal before it: the session expires a session timeout after that one, which is T/4 (the
renewal interval, `session_timeout_s() / 4`) earlier than the lease of 9a44e14 (0.8 × T from the last renewal)
assumed: the lease outlives the session by up to 0.05 × T (200 ms at T = 4 s, 1.5 s at T = 30 s).
ZooKeeper's expiry buckets round the deadline up by less than one tick, which narrows that window
for some phases and closes it for none; the lease tests' world expires exactly (sim_lease_world).
"""

from __future__ import annotations

from harness import sim_lease_world as lease_world
from harness.sim_follower import LostFollower
from harness.sim_schedule import TOPIC

T_MS = 4000
RENEWAL_MS = T_MS // 4  # the session-lease task's interval (SessionLease.renewal_interval_s: session_timeout_s() / 4)


def test_the_lease_ends_before_the_leader_expires_a_session_whose_last_touch_it_never_heard() -> None:
    """Failed on 9a44e14 (finding T1); the lease now counts from the renewal before the last one."""
    s = lease_world.world(T_MS, 2)
    m1 = lease_world.join(s, "m1", T_MS)
    lease_world.run(s, [m1], 6)
    assert len(m1.assignment.owned()) == 2
    for p in range(2):
        s.log.produce((TOPIC, p), 2000)
    m1.renew_lease()  # R0: reported to the leader in the follower's next ping answer (here at once)
    r0 = s.model.now_ms
    s.model.advance(RENEWAL_MS)
    m1.renew_lease()  # R1: its sync went through the leader, so the lease is extended from here...
    session = m1.group.session
    follower = LostFollower(s.model, m1.client)
    follower.cut()  # ...but the link breaks before the follower's next ping answer:
    m1.client._session.last_heard = r0  # the leader's last word of the session is R0's touch
    expired_at = None
    while expired_at is None:
        s.model.advance(10)
        m1.consume(5)  # the application keeps iterating, on the lease
        if session not in s.model.live_sessions():
            expired_at = s.model.now_ms
    m1.consume(5)
    late = [d.offset for d in s.deliveries if d.member == "m1" and d.at_ms >= expired_at]
    assert not m1.streams.gate.usable() and late == [], (
        f"the leader expired the session at {expired_at} ms; m1's lease runs to "
        f"{m1.streams.gate.lease_until * 1000:.0f} ms and it delivered {len(late)} messages after the expiry"
    )
