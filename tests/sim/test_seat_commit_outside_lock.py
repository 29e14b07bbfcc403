"""Regression (issue #54, the group coordinator restarted during `handover`): a release's Kafka commit holds no lock.

From `joining` on, an owner node is deleted only once ZooKeeper's offset, committed to Kafka through
the member's seat as a group member, reads back equal. That commit waits on the group coordinator:
it was made inside the attempt's second step, under the rebalance lock (and the commit before the
release mirrored to Kafka under it too). With the coordinator restarting, each attempt held the lock
for the commit's wait (the session timeout, 6 s), and auto-commit gave up meanwhile ("a rebalance
step held the rebalance lock over 6.0s; not committing now", seen on a real cluster). Now the
attempt carries the offsets to Kafka between its two steps, holding no lock, and deletes a node in
its second step only if ZooKeeper still holds the offset Kafka read back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, committed, owner_nodes
from zkconsumer.migration import encode_switch_node
from zkconsumer.zookeeper import znodes

Key = tuple[str, int]
KEYS = frozenset({(TOPIC, 0), (TOPIC, 1)})


class SlowCoordinatorSeat:
    """A seat whose commits as a group member wait until the test lets the coordinator answer."""

    member_id = "rdkafka-seat-1"

    def __init__(self) -> None:
        self.brokers_assign = KEYS
        self.kafka: dict[Key, int] = {}
        self.coordinator_answers = threading.Event()
        self.coordinator_answers.set()
        self.waiting = threading.Event()  # a commit is waiting for the coordinator

    def start(self) -> None:
        pass

    def assigned(self) -> frozenset[Key] | None:
        return self.brokers_assign

    def commit(self, offsets: Mapping[Key, int], timeout: float) -> dict[Key, int]:
        if not self.coordinator_answers.is_set():
            self.waiting.set()
            self.coordinator_answers.wait(30)
        self.kafka.update(offsets)
        return {k: self.kafka.get(k, -1) for k in offsets}

    def leave(self) -> None:
        pass

    def wait_left(self, timeout: float) -> bool:
        return True


def _attempt(m: SimMember) -> None:
    reasons = ", ".join(m.pending) or "test"
    m.pending.clear()
    m.member._rebalance(reasons)  # the worker's run: the attempt, then the marker


def test_a_release_carries_its_offset_to_kafka_holding_no_lock() -> None:
    s = Schedule(0, Options(members=0, partitions=2))
    m = s.add_member()
    seat = SlowCoordinatorSeat()

    def make_seat(topics: list[str], on_change: Callable[[str], None], holding: object) -> SlowCoordinatorSeat:
        return seat

    m.member.switch._make_seat = make_seat  # type: ignore[assignment]
    s.log.produce((TOPIC, 0), 5)
    s.log.produce((TOPIC, 1), 5)
    s.calm_rounds([m], 6)
    m.commit()
    assert set(m.assignment.owned()) == KEYS and committed(s.model, GROUP, (TOPIC, 1)) == 5
    s.admin.create(znodes.switch_path(GROUP), encode_switch_node("handover", "test", 0), makepath=True)
    s.model.deliver(m.client)
    # The brokers assign t-1 elsewhere; the coordinator is restarting: commits wait.
    seat.brokers_assign = frozenset({(TOPIC, 0)})
    seat.coordinator_answers.clear()
    attempt = threading.Thread(target=_attempt, args=(m,), name="test-rebalance", daemon=True)
    attempt.start()
    try:
        assert seat.waiting.wait(10), "the release never committed to Kafka"
        free = m.rebalancer._lock.acquire(timeout=1.0)  # what auto-commit, a claim, a shutdown need
        if free:
            m.rebalancer._lock.release()
        assert free, "the release's Kafka commit holds the rebalance lock while the coordinator does not answer"
        assert (TOPIC, 1) not in m.assignment.owned()  # delivery of the moving partition stopped first
        assert 1 in owner_nodes(s.model, GROUP, TOPIC)  # its node stays meanwhile
    finally:
        seat.coordinator_answers.set()
    attempt.join(10)
    assert not attempt.is_alive()
    assert set(owner_nodes(s.model, GROUP, TOPIC)) == {0}  # released once Kafka read back ZooKeeper's offset
    assert seat.kafka[(TOPIC, 1)] == committed(s.model, GROUP, (TOPIC, 1)) == 5
