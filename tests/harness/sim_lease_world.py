"""The small world of the lease tests: one topic on one broker, exact session expiry, members joined one by one."""

from __future__ import annotations

from typing import Any

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember
from harness.zkmodel import ZkModel
from zkconsumer.cluster import broker_nodes
from zkconsumer.zookeeper import znodes


def world(session_timeout_ms: int, partitions: int) -> Schedule:
    """No members yet; session expiry exact (no tick rounding to hide a lease that runs too long)."""
    s = Schedule(0, Options(members=0, partitions=partitions, session_timeout_ms=session_timeout_ms))
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
