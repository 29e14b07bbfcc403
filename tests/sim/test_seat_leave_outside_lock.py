"""Regressions (issue #54): the live switch's seat leaves the brokers' group off the rebalance lock, and on every path.

At the switch back to `zookeeper` the member's seat leaves the brokers' group: a LeaveGroup and the
Consumer's close, I/O that waits on the group coordinator. The seat was stopped (its poll thread
joined, up to 10 s) inside the attempt, under the rebalance lock, so every commit, claim and release
waited for the brokers. Now the attempt only asks the seat to leave; its poll thread makes the I/O,
the marker says `zookeeper` only once the seat has left (its leaving triggers the attempt that says
so), and the member's shutdown waits for a seat still leaving within its deadline.

The members are the simulation's (the production GroupMember over the in-memory ZooKeeper); the seat
is a stand-in with the real seat's threading (`leave` returns at once, its own thread closes when
the test lets the coordinator answer). `test_the_real_seat_...` runs the real ShadowGroupMember.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping

import pytest

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember
from zkconsumer.broker_coordination.shadow import ShadowGroupMember
from zkconsumer.errors import BrokersUnavailable
from zkconsumer.migration import encode_switch_node
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.deadline import Deadline

Key = tuple[str, int]
KEYS = frozenset({(TOPIC, 0), (TOPIC, 1)})


class SlowLeavingSeat:
    """A seat in the brokers' group whose LeaveGroup is answered when the test says (`coordinator_answers`)."""

    member_id = "rdkafka-seat-1"

    def __init__(self, on_change: Callable[[str], None]) -> None:
        self.on_change = on_change
        self.kafka: dict[Key, int] = {}
        self.asked = threading.Event()  # leave() was called
        self.coordinator_answers = threading.Event()
        self.left = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="test-seat-poll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def assigned(self) -> frozenset[Key] | None:
        return None if self.asked.is_set() else KEYS

    def commit(self, offsets: Mapping[Key, int], timeout: float) -> dict[Key, int]:
        self.kafka.update(offsets)
        return {k: self.kafka.get(k, -1) for k in offsets}

    def leave(self) -> None:
        self.asked.set()

    def wait_left(self, timeout: float) -> bool:
        return self.left.wait(timeout)

    def _poll(self) -> None:  # the seat's poll thread: it makes the LeaveGroup once asked
        self.asked.wait()
        self.coordinator_answers.wait(60)
        self.left.set()
        self.on_change("the seat left the brokers' group")


def _member_at_joining() -> tuple[Schedule, SimMember, list[SlowLeavingSeat]]:
    """One member (two partitions) whose seat sits in the brokers' group, its marker saying `joining`."""
    s = Schedule(0, Options(members=0, partitions=2))
    m = s.add_member()
    seats: list[SlowLeavingSeat] = []

    def make_seat(
        topics: list[str], on_change: Callable[[str], None], holding: Callable[[], set[Key]]
    ) -> SlowLeavingSeat:
        seats.append(SlowLeavingSeat(on_change))
        return seats[-1]

    m.member.switch._make_seat = make_seat  # type: ignore[assignment]
    s.calm_rounds([m], 4)
    s.admin.create(znodes.switch_path(GROUP), encode_switch_node("joining", "test", 0), makepath=True)
    s.model.deliver(m.client)  # the switch node's watch: a rebalance is triggered
    assert m.pending, "the switch node's creation triggered no attempt"
    _run_attempt(m)
    assert len(seats) == 1 and _seen(s, m) == ("joining", SlowLeavingSeat.member_id)
    return s, m, seats


def _run_attempt(m: SimMember) -> None:
    reasons = ", ".join(m.pending)
    m.pending.clear()
    assert m.member._rebalance(reasons)  # the worker's run: the attempt, then the marker


def _seen(s: Schedule, m: SimMember) -> tuple[str, str | None]:
    switch = json.loads(s.admin.get(f"{znodes.zkconsumer_members_path(GROUP)}/{m.consumer_id}")[0])["switch"]
    return switch["seen"], switch["broker_member_id"]


def _switch_back(s: Schedule, m: SimMember) -> threading.Thread:
    """The switch node deleted (`zookeeper`); the member's attempt runs on a thread of its own, as on the worker."""
    s.admin.delete(znodes.switch_path(GROUP))
    s.model.deliver(m.client)
    assert m.pending
    attempt = threading.Thread(target=_run_attempt, args=(m,), name="test-rebalance", daemon=True)
    attempt.start()
    return attempt


def test_the_switch_back_attempt_does_not_wait_for_the_seat_to_leave_the_brokers_group() -> None:
    s, m, seats = _member_at_joining()
    seat = seats[0]
    attempt = _switch_back(s, m)
    try:
        attempt.join(5.0)
        assert seat.asked.is_set(), "the seat was not asked to leave at `zookeeper`"
        # Before the fix the attempt joined the seat's poll thread under the rebalance lock until
        # the coordinator answered the LeaveGroup (up to 10 s): every commit waited behind it.
        assert not attempt.is_alive(), "the attempt waits for the seat's LeaveGroup (under the rebalance lock)"
        assert not seat.left.is_set()
        m.streams.mark_consumed()
        m.rebalancer.commit()  # the lock is free: no CommitFailed after the lock's wait
        # The marker says `zookeeper` only once the seat has left the brokers' group.
        assert _seen(s, m) == ("joining", None)
        assert m.assignment.owned().keys() == KEYS  # delivery went on throughout
    finally:
        seat.coordinator_answers.set()
    assert seat.left.wait(5.0)
    assert m.pending, "the seat's leaving triggered no attempt"
    _run_attempt(m)
    assert _seen(s, m) == ("zookeeper", None)


def test_a_shutdown_during_the_seats_leave_waits_for_it_within_its_deadline() -> None:
    s, m, seats = _member_at_joining()
    seat = seats[0]
    _switch_back(s, m).join(5.0)
    assert seat.asked.is_set() and not seat.left.is_set()
    answer = threading.Timer(0.5, seat.coordinator_answers.set)
    answer.start()
    began = time.monotonic()
    m.member.stop(Deadline(10.0), 10.0)
    took = time.monotonic() - began
    assert seat.left.is_set(), "the shutdown did not wait for the seat still leaving the brokers' group"
    assert took < 5.0, f"the shutdown took {took:.1f} s"


def test_a_seat_that_never_leaves_does_not_hold_the_shutdown_past_its_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s, m, seats = _member_at_joining()
    seat = seats[0]
    try:
        began = time.monotonic()
        with caplog.at_level(logging.WARNING):
            m.member.stop(Deadline(1.0), 1.0)  # the seat is asked to leave here, by the shutdown
        took = time.monotonic() - began
        assert seat.asked.is_set()
        assert took < 3.0, f"the shutdown took {took:.1f} s past its 1 s deadline"
        assert any(
            m.consumer_id in r.getMessage() and "did not leave the brokers' group" in r.getMessage()
            for r in caplog.records
        ), [r.getMessage() for r in caplog.records]
        # No new seat after the shutdown, whatever a late attempt reads.
        m.member.switch.read_step({TOPIC})
        assert len(seats) == 1
    finally:
        seat.coordinator_answers.set()


def test_the_real_seat_leaves_at_once_on_its_own_thread_and_refuses_commits_after() -> None:
    """The real ShadowGroupMember (librdkafka), its brokers unreachable: `leave` returns at once, its poll
    thread closes the Consumer and says so; a commit asked afterwards is refused, naming the member."""
    changes: list[str] = []
    failures: list[BaseException] = []
    seat = ShadowGroupMember(
        "g_probe",
        [TOPIC],
        {"bootstrap.servers": "127.0.0.1:1", "group.id": "g-probe", "log_level": 0},
        on_change=changes.append,
        on_failure=failures.append,
        holding=set,
    )
    seat.start()
    time.sleep(0.2)
    began = time.monotonic()
    seat.leave()
    assert time.monotonic() - began < 0.1
    assert seat.wait_left(10.0)
    assert changes[-1] == "the seat left the brokers' group" and failures == []
    with pytest.raises(BrokersUnavailable, match="g_probe"):
        seat.commit({(TOPIC, 0): 1}, 1.0)
