"""One problem analysis: the watchdog's findings are zkconsumer.group_problems' kinds, worded as before."""

from __future__ import annotations

from zkconsumer.coordinator.watchdog import find_problems
from zkconsumer.group_problems import (
    BAD_OWNER,
    FETCHED_NOT_OWNED,
    NOT_ASSIGNED,
    OWNED_NOT_FETCHED,
    REBALANCE_PROBLEMS,
    UNOWNED,
    ZOMBIE,
    ownership_problems,
)

ME = "g_host-1-aaaa"
GONE = "g_host-2-bbbb"


def test_each_ownership_case_has_its_kind_and_the_watchdog_words_it_the_same() -> None:
    args = (
        {"t": [0, 1, 2, 3]},
        {"t": {1: f"{GONE}-0", 2: "garbage", 3: f"{ME}-1"}},
        {ME},
        {("t", 3), ("t", 4)},
        {("t", 3), ("t", 5)},
        {"t": {3: f"{ME}-0"}},
    )
    found = ownership_problems(*args)
    assert [(p.kind, p.topic, p.partition) for p in found] == [
        (UNOWNED, "t", 0),
        (ZOMBIE, "t", 1),
        (BAD_OWNER, "t", 2),
        (NOT_ASSIGNED, "t", 3),
        (OWNED_NOT_FETCHED, "t", 4),
        (FETCHED_NOT_OWNED, "t", 5),
    ]
    assert find_problems(*args) == [
        "t-0 has no owner",
        f"t-1 is owned by {GONE}-0, which is not a group member (zombie)",
        "t-2 is owned by 'garbage', which is not a thread id",
        f"t-3 is held by {ME}-1 but assigned to {ME}-0",
        "t-4 is owned here but not fetched",
        "t-5 is fetched here but not owned",
    ]


def test_member_local_kinds_do_not_change_what_verify_counts_as_a_rebalance_problem() -> None:
    assert not {NOT_ASSIGNED, OWNED_NOT_FETCHED, FETCHED_NOT_OWNED} & REBALANCE_PROBLEMS
    assert {UNOWNED, ZOMBIE, BAD_OWNER} <= REBALANCE_PROBLEMS
