"""The small world of the lease tests: one topic on one broker, exact session expiry, members joined one by one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember
from harness.zkfake import FakeKazooClient
from harness.zkmodel import ZkModel
from zkconsumer.cluster import broker_nodes
from zkconsumer.zookeeper import znodes


def world(session_timeout_ms: int, partitions: int, kind: type[Schedule] = Schedule) -> Schedule:
    """No members yet; session expiry exact (no tick rounding to hide a lease that runs too long);
    `kind`: the schedule class whose actors the test uses."""
    s = kind(0, Options(members=0, partitions=partitions, session_timeout_ms=session_timeout_ms))
    s.model = ZkModel(tick_ms=500, max_session_timeout_ms=session_timeout_ms, round_expiry_to_tick=False)
    s.admin = s.model.client("admin")
    s.admin.start()
    broker = broker_nodes.BrokerInfo(1, "localhost", 9092, ("PLAINTEXT://localhost:9092",), None, 4, timestamp="1")
    s.admin.create(znodes.broker_path(1), broker_nodes.encode_broker(broker), makepath=True)
    s.admin.create(znodes.topic_path(TOPIC), s._topic_data(), makepath=True)
    return s


def join(s: Schedule, name: str, session_timeout_ms: int, **member: Any) -> SimMember:
    """A member with one stream whose deliveries the schedule checks; `member`: SimMember's keywords."""
    m = SimMember(
        name,
        s.model,
        GROUP,
        TOPIC,
        1,
        s.log,
        session_timeout_ms,
        lambda who, d: s.check_delivery(who, d),
        on_bug=lambda what, exc: s.violation(f"bug in {what}: {exc!r}"),
        **member,
    )
    s.members.append(m)
    return m


def run(s: Schedule, members: list[SimMember], rounds: int) -> None:
    """`rounds` steps of 250 ms: each member hears its events, renews its lease, rebalances and consumes."""
    for _ in range(rounds):
        s.model.advance(250)
        for m in members:
            s.model.deliver(m.client)
            m.renew_lease()
            m.rebalance()
            m.consume(50)


class Cutter(Protocol):
    """A member's server cut from the rest of the ensemble (sim_follower.LostFollower, sim_leader.IsolatedLeader)."""

    def cut(self) -> None: ...

    def give_up(self) -> None: ...


def step(s: Schedule, m: SimMember) -> None:
    """One turn of one member: hear its events, renew its lease, rebalance, consume a little."""
    s.model.deliver(m.client)
    m.renew_lease()
    m.rebalance()
    m.consume(10)


def owner_behind_a_cut(
    session_timeout_ms: int,
    partitions: int,
    renewal: str | None,
    cutter: Callable[[ZkModel, FakeKazooClient], Cutter],
    give_up_after_ms: int,
) -> tuple[Schedule, SimMember, list[str]]:
    """m1 owns every partition (renewing with `renewal`, None: as configured) when `cutter` cuts its
    server off; the server gives up `give_up_after_ms` later; m2 joins through the majority once m1's
    session expired. Returns the schedule, m1, and what m1 delivered from the expiry on."""
    s = world(session_timeout_ms, partitions)
    m1 = join(s, "m1", session_timeout_ms)
    if renewal is not None:
        m1.membership.lease.renewal = renewal  # a renewal other than the configured one, side by side
    for _ in range(6):
        s.model.advance(250)
        step(s, m1)
    assert len(m1.assignment.owned()) == partitions
    for p in range(partitions):
        s.log.produce((TOPIC, p), 400)
    session = m1.group.session
    server = cutter(s.model, m1.client)
    server.cut()
    cut = s.model.now_ms
    m2: SimMember | None = None
    expired_at: int | None = None
    while s.model.now_ms < cut + 2 * session_timeout_ms:
        s.model.advance(100)
        if s.model.now_ms == cut + give_up_after_ms:
            server.give_up()
        if expired_at is None and session not in s.model.live_sessions():
            expired_at = s.model.now_ms
            m2 = join(s, "m2", session_timeout_ms)
        if m2 is not None:
            step(s, m2)
        step(s, m1)
    assert expired_at is not None, "the session never expired behind the cut"
    late = [f"{d.key[0]}-{d.key[1]}@{d.offset}" for d in s.deliveries if d.member == "m1" and d.at_ms >= expired_at]
    return s, m1, late
