"""Watchdog: which ownership states count as problems, that only ones outliving a rebalance
round trigger, and that a check under way never holds up a leave."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss

from zkconsumer.coordinator.assignors import GroupAssignment
from zkconsumer.coordinator.periodic import PeriodicTask
from zkconsumer.coordinator.watchdog import Watchdog, find_problems, partitions_to_check


def test_healthy_group_has_no_problems() -> None:
    owners = {"t": {0: "g_a-0", 1: "g_b-0"}}
    assert find_problems({"t": [0, 1]}, owners, {"g_a", "g_b"}, {("t", 0)}, {("t", 0)}) == []


def test_unowned_zombie_and_drift_are_reported() -> None:
    owners = {"t": {0: "g_gone-0", 2: "g_a-0"}}
    problems = find_problems({"t": [0, 1, 2]}, owners, {"g_a"}, {("t", 2)}, {("t", 3)})
    assert problems == [
        "t-0 is owned by g_gone-0, which is not a group member (zombie)",
        "t-1 has no owner",
        "t-2 is owned here but not fetched",
        "t-3 is fetched here but not owned",
    ]


def test_thread_ids_of_similar_consumer_ids_are_not_confused() -> None:
    # g_a-1 is a thread of member "g_a", not of a member called "g_a-1"
    assert find_problems({"t": [0]}, {"t": {0: "g_a-1-0"}}, {"g_a"}, set(), None) == [
        "t-0 is owned by g_a-1-0, which is not a group member (zombie)"
    ]


def test_only_problems_seen_twice_in_a_row_trigger() -> None:
    reports = iter([["t-1 has no owner"], ["t-1 has no owner"], [], ["t-2 has no owner"]])
    triggered: list[str] = []
    dog = Watchdog("g_a", interval_s=60, check=lambda: next(reports), trigger=triggered.append)
    assert dog.run_once() == []  # first sighting: maybe a rebalance in flight
    assert dog.run_once() == ["t-1 has no owner"]  # persisted: act
    assert dog.run_once() == []
    assert dog.run_once() == []
    assert triggered == ["watchdog: t-1 has no owner"] and dog.alerts == 1


def test_a_problem_seen_across_rebalance_activity_is_a_change_in_flight() -> None:
    reports = iter([["t-1 has no owner"]] * 6)
    activity = [0]
    triggered: list[str] = []
    dog = Watchdog(
        "g_a", interval_s=60, check=lambda: next(reports), trigger=triggered.append, activity=lambda: activity[0]
    )
    assert dog.run_once() == []
    activity[0] += 2  # a group change: triggered, then a rebalance ran
    assert dog.run_once() == []  # the change may not have reached every member yet
    assert dog.run_once() == ["t-1 has no owner"]  # it outlived that round: act
    assert triggered == ["watchdog: t-1 has no owner"]


def test_a_check_during_a_rebalance_proves_nothing() -> None:
    activity = [0]

    def check_while_a_rebalance_runs() -> list[str]:
        activity[0] += 1
        return ["t-1 has no owner"]

    dog = Watchdog(
        "g_a", interval_s=60, check=check_while_a_rebalance_runs, trigger=lambda _r: None, activity=lambda: activity[0]
    )
    assert [dog.run_once() for _ in range(4)] == [[], [], [], []] and dog.alerts == 0


def test_checks_while_one_long_rebalance_runs_do_not_alarm() -> None:
    reports = iter([["t-1 has no owner"]] * 4)
    running: list[int | None] = [None]  # RebalanceWorker.activity() while a run is under way
    dog = Watchdog(
        "g_a", interval_s=60, check=lambda: next(reports), trigger=lambda _r: None, activity=lambda: running[0]
    )
    assert dog.run_once() == [] and dog.run_once() == []  # both inside one long run
    running[0] = 7  # it ended; the problem is still there
    assert dog.run_once() == []
    assert dog.run_once() == ["t-1 has no owner"]


def test_a_stopped_task_ends_quietly_when_its_run_fails_after_the_stop(caplog) -> None:  # type: ignore[no-untyped-def]
    started, closed = threading.Event(), threading.Event()

    def slow_read() -> None:
        started.set()
        closed.wait(5)
        raise ConnectionLoss()  # the session was closed under it

    task = PeriodicTask("g_a-watchdog", 0.01, slow_read, on_error=lambda exc: pytest.fail(f"surfaced {exc!r}"))
    task.start()
    assert started.wait(5)
    began = time.monotonic()
    task.stop(timeout=0.2)  # not waited for beyond its timeout
    assert time.monotonic() - began < 1.0
    closed.set()
    task.thread.join(5)
    assert not task.thread.is_alive()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_no_check_is_read_while_a_rebalance_is_under_way_or_pending() -> None:
    checks: list[int] = []
    running: list[int | None] = [None]
    dog = Watchdog(
        "g_a",
        interval_s=60,
        check=lambda: checks.append(1) or ["t-1 has no owner"],  # type: ignore[func-returns-value]
        trigger=lambda _r: None,
        activity=lambda: running[0],
    )
    assert dog.run_once() == [] and checks == []  # mid-change: nothing read from ZooKeeper
    running[0] = 3
    assert dog.run_once() == [] and dog.run_once() == ["t-1 has no owner"] and len(checks) == 2


@pytest.mark.parametrize("form", [dict, GroupAssignment.from_pairs])
def test_each_partition_is_checked_by_its_zkconsumer_owner_or_the_designated_member(form: Any) -> None:
    threads = {0: "g_a-0", 1: "g_a-0", 2: "g_b-0", 3: "g_scala-0", 4: "not a thread"}
    expected = form({("t", p): thread for p, thread in threads.items()})

    members, marked = {"g_a", "g_b", "g_scala"}, {"g_a", "g_b"}
    a = partitions_to_check(expected, "g_a", members, marked, accounted=())
    b = partitions_to_check(expected, "g_b", members, marked, accounted=[("t", 0)])
    assert a == {("t", 0), ("t", 1), ("t", 3), ("t", 4)}  # g_a has the lowest id: Scala's share too
    assert b == {("t", 2), ("t", 0)}  # its own share, and a claim of its own that may be an orphan
    assert a | b == {("t", p) for p in range(5)}
    # before its marker is read, a member still counts itself among the zkconsumer members
    # no marker read yet: a member counts itself as a zkconsumer member; the lowest such checks the rest
    alone = partitions_to_check(expected, "g_b", members, set(), accounted=())
    assert alone == {("t", p) for p in range(5)}
    assert partitions_to_check(expected, "g_b", members, marked, accounted=[("u", 1)], topics={"u"}) == {("u", 1)}


def test_a_member_builds_only_the_shares_it_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = [f"g_m{i}-0" for i in range(6)]
    group = GroupAssignment.from_pairs({("t", p): threads[p // 10] for p in range(60)})
    asked: list[str] = []
    share = GroupAssignment.share
    monkeypatch.setattr(GroupAssignment, "share", lambda self, thread: asked.append(thread) or share(self, thread))
    members = {t[:-2] for t in threads}
    assert partitions_to_check(group, "g_m3", members, members, accounted=()) == {("t", p) for p in range(30, 40)}
    assert asked == ["g_m3-0"]  # not the other five shares: only what it checks
