"""A host suspended longer than the session: the member wakes and must deliver nothing a successor owns (issue #42, finding 2).

The lease is stamped and checked on one clock (zkconsumer.clock). On CLOCK_MONOTONIC, which Linux
stops while the host is suspended, a member waking from a suspend longer than its session still
held the lease it went to sleep with, and delivered partitions its successor had claimed until
kazoo reported the session lost (the SUSPENDED that comes first leaves delivery to the lease).
ZooKeeper's session clock runs on the servers and never stops; CLOCK_BOOTTIME counts the suspend.
"""

from __future__ import annotations

import time

import pytest

from harness import sim_lease_world as lease_world
from harness.sim_host import SimHost
from harness.sim_schedule import TOPIC, Schedule
from harness.simulation import SimMember
from zkconsumer.coordinator.membership import State

T_MS = 4000
PARTITIONS = 4


def world() -> Schedule:
    return lease_world.world(T_MS, PARTITIONS)


def join(s: Schedule, name: str, host: SimHost | None = None, *, old_clock: bool = False) -> SimMember:
    return lease_world.join(
        s,
        name,
        T_MS,
        # old_clock: the clock the lease read before issue #42 (CLOCK_MONOTONIC); else zkconsumer's own
        clock=host.monotonic if host is not None and old_clock else None,
        production_clock=host is not None and not old_clock,
    )


def suspended_past_its_session(monkeypatch: pytest.MonkeyPatch, *, old_clock: bool) -> tuple[Schedule, list[str]]:
    """m1 owns every partition; its host sleeps 1.5 sessions; m2 takes over; m1 wakes. What m1
    delivers after waking, and the invariant's violations."""
    s = world()
    host = SimHost(s.model)
    monkeypatch.setattr(time, "clock_gettime", host.clock_gettime(time.clock_gettime))
    m1 = join(s, "m1", host, old_clock=old_clock)
    lease_world.run(s, [m1], 6)
    assert len(m1.assignment.owned()) == PARTITIONS
    for p in range(PARTITIONS):
        s.log.produce((TOPIC, p), 200)
    m1.renew_lease()
    m1.consume(5)
    host.suspend(m1, T_MS * 3 // 2)
    assert m1.group.session not in s.model.live_sessions()
    m2 = join(s, "m2")
    lease_world.run(s, [m2], 6)
    assert len(m2.assignment.owned()) == PARTITIONS
    woke = len(s.deliveries)
    host.wake(m1)
    m1.consume(20)  # the iterators run before kazoo's thread reads the EOF...
    host.eof(m1)
    assert m1.membership.state is State.SUSPENDED
    for _ in range(4):  # ... which leaves delivery to the lease while kazoo cannot reconnect
        s.model.advance(100)
        m1.consume(20)
        lease_world.run(s, [m2], 1)
    s.model.reconnect(m1.client)  # the handshake says the session expired: LOST
    s.model.deliver(m1.client)
    assert m1.membership.state is State.EXPIRED
    after = [f"{d.key[0]}-{d.key[1]}@{d.offset}" for d in s.deliveries[woke:] if d.member == "m1"]
    return s, after


def test_a_member_waking_from_a_host_suspend_delivers_nothing_its_successor_owns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s, delivered = suspended_past_its_session(monkeypatch, old_clock=False)
    assert delivered == []
    assert s.result.violations == []


def test_on_the_monotonic_clock_the_same_suspend_overlaps_the_successor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding itself, kept reproducible: the actor is what shows the clock matters."""
    s, delivered = suspended_past_its_session(monkeypatch, old_clock=True)
    assert len(delivered) > 0
    assert s.result.violations and all("without owning it" in v for v in s.result.violations)
