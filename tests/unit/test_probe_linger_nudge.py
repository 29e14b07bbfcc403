"""The linger's follow-up nudge (ReleaseLinger.follow_up) against a Scala joiner's give-up (regression of the w7 probe).

The follow-up used to look once, a retry budget after the hand-over, and forget the partitions it looked
at. A Scala attempt that will fail still creates owner nodes before it finds one it cannot take, and
deletes them again when it rolls back (ZookeeperConsumerConnector.reflectPartitionOwnershipDecision):
a look that lands inside that attempt sees the partition owned.
"""

from __future__ import annotations

import threading

from zkconsumer.coordinator.linger import ReleaseLinger

KEY = ("t", 0)
OTHER = ("t", 1)  # still held elsewhere (a slow member's linger): the joiner's attempt fails on it


class Group:
    """What ReleaseLinger reads of GroupZk, on a clock the test moves; the owners its watch cache gives."""

    consumer_id = "g_ours"

    def __init__(self) -> None:
        self.now = 0.0
        self.owners: dict[tuple[str, int], str | None] = {KEY: None}
        self.nudges: list[str] = []
        self.reads = self

    def clock(self) -> float:
        return self.now

    def member_ids(self) -> list[str]:
        self.now += 0.001
        return ["g_ours", "g_scala"]

    def zkconsumer_members(self) -> set[str]:
        self.now += 0.001
        return {"g_ours"}

    def owner_threads(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
        return {k: self.owners.get(k) for k in keys}

    def nudge_members(self) -> str:
        self.nudges.append(f"/consumers/g/ids/g_zkconsumer-rebalance-{len(self.nudges)}")
        return self.nudges[-1]


def test_a_joiner_that_gives_up_after_the_one_look_is_still_nudged() -> None:
    group = Group()
    linger = ReleaseLinger(group, 1.0, threading.Event(), max_s=3.0, budget_s=6.0, clock=group.clock)  # type: ignore[arg-type]
    linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], {KEY: "g_scala-0", OTHER: "g_scala-0"})
    linger.released([KEY])
    group.now += 6.1  # the retry budget is over: the watchdog's check looks
    group.owners[KEY] = "g_scala-0"  # ...during the joiner's last attempt, which fails on OTHER
    linger.follow_up(owned=set())
    assert group.nudges == []  # owned right now: no nudge yet (right)
    group.owners[KEY] = None  # the attempt rolled back; the joiner gave up (ConsumerRebalanceFailedException)
    for _ in range(6):  # a minute of watchdog checks, 10 s apart
        group.now += 10.0
        linger.follow_up(owned=set())
    # Unowned in an idle group until /ids changes, with the member that could tell already looking away.
    assert len(group.nudges) == 1


def test_a_partition_seen_owned_at_two_looks_a_budget_apart_is_followed_no_more() -> None:
    group = Group()
    linger = ReleaseLinger(group, 1.0, threading.Event(), max_s=3.0, budget_s=6.0, clock=group.clock)  # type: ignore[arg-type]
    linger.handing_over(["g_scala-0"], ["g_ours", "g_scala"], {KEY: "g_scala-0"})
    linger.released([KEY])
    group.owners[KEY] = "g_scala-0"
    group.now += 6.1
    linger.follow_up(owned=set())
    group.now += 3.0  # within a budget of the first look: not looked at again yet
    assert linger.stranded() == []
    group.now += 3.1
    linger.follow_up(owned=set())  # owned again, a budget later: claimed for good
    group.owners[KEY] = None  # a later move is the ordinary rebalance's and the watchdog's, not this follow-up's
    group.now += 60.0
    linger.follow_up(owned=set())
    assert group.nudges == []
