"""Regression (issue #54, the rolling restart at `broker`): a leaving member carries ZooKeeper's offsets to Kafka before its owner nodes go.

The last step off ZooKeeper restarts the members one at a time with zkconsumer.coordination=broker;
the restarted member takes its partitions from the brokers alone and starts at Kafka's committed
offset. A ZooKeeper-mode member's final commit went to ZooKeeper, and to Kafka through its seat
once, best effort: refused while the brokers' group rebalanced (the previous restart's own
rebalance: REBALANCE_IN_PROGRESS), Kafka stayed behind, the owner nodes went with the session, and
the newcomer delivered committed messages again (tests/harness/switch_model_restart.py found it).
Now the member's stop, after the final commit and before the session closes, carries ZooKeeper's
offsets to Kafka and reads them back, trying a refused commit again within the shutdown's deadline.

The member is the simulation's (the production GroupMember over the in-memory ZooKeeper); the seat
is a stand-in whose coordinator refuses commits while a rebalance is in progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import pytest

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, committed, owner_nodes
from zkconsumer.errors import CommitFailed
from zkconsumer.migration import encode_switch_node
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.deadline import Deadline

Key = tuple[str, int]
KEYS = frozenset({(TOPIC, 0), (TOPIC, 1)})


class RebalancingSeat:
    """A seat whose coordinator refuses `refusals` commits (a rebalance in progress), then takes them;
    it records whether our owner nodes still existed at each commit it took."""

    member_id = "rdkafka-seat-1"

    def __init__(self, refusals: int, nodes_held: Callable[[], bool]) -> None:
        self.refusals = refusals
        self.kafka: dict[Key, int] = {}
        self.tries = 0
        self.taken_with_nodes: list[bool] = []
        self._nodes_held = nodes_held
        self.left = False

    def start(self) -> None:
        pass

    def assigned(self) -> frozenset[Key] | None:
        return KEYS

    @property
    def topics(self) -> list[str]:
        return [TOPIC]

    def commit(self, offsets: Mapping[Key, int], timeout: float) -> dict[Key, int]:
        self.tries += 1
        if self.refusals != 0:
            self.refusals -= 1
            raise CommitFailed("Kafka refused the commit as a group member: REBALANCE_IN_PROGRESS", sorted(offsets))
        self.kafka.update(offsets)
        self.taken_with_nodes.append(self._nodes_held())
        return {k: self.kafka.get(k, -1) for k in offsets}

    def leave(self) -> None:
        self.left = True

    def wait_left(self, timeout: float) -> bool:
        return self.left


def _member_at_broker(refusals: int) -> tuple[Schedule, SimMember, RebalancingSeat]:
    """One member at step `broker` with its seat, 5 messages per partition consumed and committed (to
    ZooKeeper: its seat was not made yet), then 4 more consumed and not yet committed: the final commit
    writes 9."""
    s = Schedule(0, Options(members=0, partitions=2))
    m = s.add_member()
    seat = RebalancingSeat(refusals, lambda: set(owner_nodes(s.model, GROUP, TOPIC)) == {0, 1})

    def make_seat(topics: list[str], on_change: Callable[[str], None], holding: object) -> RebalancingSeat:
        return seat

    m.member.switch._make_seat = make_seat  # type: ignore[assignment]
    s.log.produce((TOPIC, 0), 5)
    s.log.produce((TOPIC, 1), 5)
    s.calm_rounds([m], 6)
    m.commit()
    s.admin.create(znodes.switch_path(GROUP), encode_switch_node("broker", "test", 0), makepath=True)
    s.calm_rounds([m], 2)  # reads `broker`: its seat sits in the brokers' group
    assert m.member.switch.seat is seat
    s.log.produce((TOPIC, 0), 4)
    s.log.produce((TOPIC, 1), 4)
    s.calm_rounds([m], 3)
    assert set(m.assignment.owned()) == KEYS
    seat.tries = 0
    return s, m, seat


def test_a_leaving_member_carries_its_final_offsets_to_kafka_through_a_rebalance() -> None:
    s, m, seat = _member_at_broker(refusals=2)
    m.member.stop(Deadline(10.0), 10.0)
    zookeeper = {k: committed(s.model, GROUP, k) for k in KEYS}
    assert zookeeper == {(TOPIC, 0): 9, (TOPIC, 1): 9}  # the final commit
    assert seat.kafka == zookeeper, f"Kafka {seat.kafka} behind ZooKeeper {zookeeper} after the shutdown"
    assert seat.tries == 3  # two refused while the brokers' group rebalanced, then taken
    assert seat.taken_with_nodes == [True]  # before the owner nodes go (with the session, after stop)
    assert seat.left


def test_a_refusing_coordinator_does_not_hold_the_shutdown_past_its_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s, m, seat = _member_at_broker(refusals=-1)  # refuses every commit
    began = time.monotonic()
    with caplog.at_level(logging.WARNING):
        m.member.stop(Deadline(1.0), 1.0)
    took = time.monotonic() - began
    assert took < 2.0, f"the shutdown took {took:.1f} s past its 1 s deadline"
    assert seat.tries >= 2  # tried again within the deadline
    assert seat.left  # the seat still leaves
    warned = [r.getMessage() for r in caplog.records if m.consumer_id in r.getMessage()]
    assert any("t-0" in w and "t-1" in w and "behind ZooKeeper" in w for w in warned), warned


def test_a_leaving_member_whose_lease_ran_out_writes_nothing_to_kafka(caplog: pytest.LogCaptureFixture) -> None:
    """ZooKeeper has not confirmed the session recently enough: it may have expired, and a successor may
    own the partitions and have committed since; copying ZooKeeper's offsets now could rewind Kafka."""
    s, m, seat = _member_at_broker(refusals=0)
    lease_s = m.streams.gate.lease_until - s.model.now_ms / 1000.0
    s.model.advance(int((lease_s + 1.0) * 1000))  # no renewal meanwhile
    assert not m.streams.gate.lease_holds()
    with caplog.at_level(logging.WARNING):
        m.member.stop(Deadline(5.0), 5.0)
    assert seat.tries == 0 and seat.kafka == {}
    warned = [r.getMessage() for r in caplog.records if m.consumer_id in r.getMessage()]
    assert any("behind ZooKeeper" in w and "lease ran out" in w for w in warned), warned
