"""Unit tests of Assignment.doubt: an owner node that may not be ours stops delivery at once and is forgotten only by the rebalance thread."""

from __future__ import annotations

from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.coordinator.assignment import Assignment


def make_info(partition: int = 0) -> PartitionTopicInfo:
    return PartitionTopicInfo("t", partition, "c-0", StreamQueue(2), 0, 1)


def test_a_doubted_partition_stops_delivering_but_stays_installed_until_resolved() -> None:
    a = Assignment()
    info = make_info()
    a.install([info])
    assert a.doubt([("t", 0)]) == [("t", 0)]
    assert not info.active and a.owned() == {("t", 0): "c-0"}  # nothing forgotten: the node may be ours
    assert a.doubt([("t", 0)]) == []  # already in doubt: no second rebalance
    assert a.doubted() == [("t", 0)]
    a.drop([("t", 0)])
    assert a.doubted() == [] and a.owned() == {}


def test_a_doubt_heard_between_claim_and_install_installs_the_partition_stopped() -> None:
    a = Assignment()
    assert a.doubt([("t", 1)]) == [("t", 1)]  # the claim's own watch fired before the install
    info = make_info(1)
    assert a.install([info])
    assert not info.active and a.doubted() == [("t", 1)]


def test_releasing_and_orphan_partitions_are_not_put_in_doubt() -> None:
    a = Assignment()
    a.install([make_info(0)])
    a.begin_release([("t", 0)])
    a.adopt_orphans({("t", 2): "c-0"})
    assert a.doubt([("t", 0), ("t", 2)]) == []  # delivery stopped already; the release reads afresh


def test_a_stale_doubt_is_forgotten_before_the_next_claim_and_a_lost_session_clears_all() -> None:
    a = Assignment()
    a.doubt([("t", 3)])  # a late event about a node we no longer hold
    a.forget_stale_doubts()
    info = make_info(3)
    a.install([info])
    assert info.active
    a.doubt([("t", 3)])
    a.lose_all()
    assert a.doubted() == []
    fresh = make_info(3)
    a.install([fresh])
    assert fresh.active


def test_a_doubted_partition_is_not_committable_until_the_doubt_is_resolved() -> None:
    a = Assignment()
    zero, one = make_info(0), make_info(1)
    a.install([zero, one])
    a.doubt([("t", 0)])
    assert a.committable() == [one]  # its owner node may be another member's: our position would rewind it
    a.begin_release([("t", 0)])  # resolved: still ours, released
    assert {i.key for i in a.committable()} == {("t", 0), ("t", 1)}
