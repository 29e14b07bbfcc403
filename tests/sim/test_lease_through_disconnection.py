"""A member whose link drops keeps delivering under its lease, and only under it (in-memory ZooKeeper).

SUSPENDED leaves delivery to the lease (it ends before the server can expire the session). These
schedules check that the lease, not the link, is what stops a cut-off member, that it stops before
another member can own its partitions, and that a reconnect's lease counts from the handshake: a
process stalled between kazoo reading the handshake and running its CONNECTED listener must not
deliver on a session that expired meanwhile (a fresh-eyes review found that case).
"""

from __future__ import annotations

from kazoo.protocol.states import KazooState

from harness import sim_lease_world as lease_world
from harness.sim_schedule import TOPIC, Schedule
from harness.simulation import SimMember
from zkconsumer.coordinator.membership import State

T_MS = 4000  # session timeout; the lease is 0.9 of it, from the renewal before the last
PARTITIONS = 4


def world() -> Schedule:
    return lease_world.world(T_MS, PARTITIONS)


def join(s: Schedule, name: str) -> SimMember:
    return lease_world.join(s, name, T_MS)


def produce(s: Schedule, n: int) -> None:
    for p in range(PARTITIONS):
        s.log.produce((TOPIC, p), n)


def test_a_cut_off_owner_delivers_until_its_lease_ends_and_its_successor_starts_after_the_expiry() -> None:
    s = world()
    m1 = join(s, "m1")
    lease_world.run(s, [m1], 6)
    assert len(m1.assignment.owned()) == PARTITIONS
    produce(s, 200)
    m1.renew_lease()
    lease_end_ms = m1.streams.gate.lease_until * 1000
    cut = s.model.now_ms
    s.model.disconnect(m1.client)
    s.model.deliver(m1.client)
    assert m1.membership.state is State.SUSPENDED
    session = m1.group.session
    m2: SimMember | None = None
    m1_times: list[int] = []
    expired_at = None
    while s.model.now_ms < cut + 2 * T_MS:
        s.model.advance(100)
        if expired_at is None and session not in s.model.live_sessions():
            expired_at = s.model.now_ms
        if m2 is None and s.model.now_ms >= cut + T_MS - 300:
            m2 = join(s, "m2")
        if m2 is not None:
            lease_world.run(s, [m2], 1)
        before = len(s.deliveries)
        m1.consume(1)
        if len(s.deliveries) > before:
            m1_times.append(s.model.now_ms)
    m2_first = min(d.at_ms for d in s.deliveries if d.member == "m2")
    assert s.result.violations == []
    assert m1_times and m1_times[0] < cut + 1000, "the link dropping did not stop delivery by itself"
    assert max(m1_times) <= lease_end_ms, "delivered past its lease"
    assert expired_at is not None and max(m1_times) < expired_at <= m2_first


def test_a_stall_between_the_handshake_and_the_listener_delivers_nothing_on_the_expired_session() -> None:
    s = world()
    m1 = join(s, "m1")
    lease_world.run(s, [m1], 6)
    produce(s, 200)
    m1.renew_lease()
    s.model.disconnect(m1.client)
    s.model.deliver_listeners(m1.client)  # SUSPENDED
    s.model.advance(1000)
    s.model.reconnect(m1.client)  # the server hears the handshake now, in the same session
    handshake_ms = s.model.now_ms
    s.model.freeze(m1.client)  # ... and the process stalls before kazoo runs the CONNECTED listener
    m1.frozen = True
    s.model.advance(T_MS + 600)
    assert m1.group.session not in s.model.live_sessions()
    m2 = join(s, "m2")
    lease_world.run(s, [m2], 6)
    assert len(m2.assignment.owned()) == PARTITIONS
    # The process wakes where it stalled: kazoo runs the listener (its client id still names the old
    # session), then reads the EOF the server sent on expiry (SUSPENDED) and cannot reconnect yet.
    m1.client._frozen = False  # not model.thaw(): that would replay the EOF and LOST at once
    m1.frozen = False
    s.model._queue = type(s.model._queue)(i for i in s.model._queue if not (i.client is m1.client and i.listener))
    m1.membership.on_connection_state(KazooState.CONNECTED)
    assert m1.streams.gate.lease_until * 1000 <= handshake_ms + T_MS  # counted from the handshake
    m1.client._link = False
    m1.client._suspend()
    s.model.deliver_listeners(m1.client)
    before = len(s.deliveries)
    for _ in range(5):
        s.model.advance(100)
        m1.consume(2)
        lease_world.run(s, [m2], 1)
    assert [d for d in s.deliveries[before:] if d.member == "m1"] == []
    assert s.result.violations == []
