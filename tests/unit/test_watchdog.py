"""Watchdog: which ownership states count as problems, and that only persistent ones trigger."""
from __future__ import annotations

from zkconsumer.watchdog import Watchdog, find_problems


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
        "t-0 is owned by g_a-1-0, which is not a group member (zombie)"]


def test_only_problems_seen_twice_in_a_row_trigger() -> None:
    reports = iter([["t-1 has no owner"], ["t-1 has no owner"], [], ["t-2 has no owner"]])
    triggered: list[str] = []
    dog = Watchdog("g_a", interval_s=60, check=lambda: next(reports), trigger=triggered.append)
    assert dog.run_once() == []                      # first sighting: maybe a rebalance in flight
    assert dog.run_once() == ["t-1 has no owner"]    # persisted: act
    assert dog.run_once() == []
    assert dog.run_once() == []
    assert triggered == ["watchdog: t-1 has no owner"] and dog.alerts == 1
