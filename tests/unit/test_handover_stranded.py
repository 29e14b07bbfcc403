"""The mixed hand-over benchmark's counts (scripts/bench/handover.py): stranded Scala joiners and the lingers, on planted logs and histories."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from harness.chaos_history import History, Incarnation, Note, Span

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "handover.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("handover_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["handover_bench"] = module
    spec.loader.exec_module(module)
    return module


bench = load()
KINDS = {"g_zk1": "zk", "g_zk2": "zk", "g_sc1": "scala", "g_sc2": "scala", "g_sc3": "scala"}


def history(*spans: Span) -> History:
    return History(spans=list(spans), since=0.0, until=100.0)


def test_a_give_up_after_a_hand_over_from_ours_is_a_stranded_joiner() -> None:
    h = history(
        Span("t", 0, "g_zk1-0", 1, 1.0, 10.0, "delete"),  # ours released at 10
        Span("t", 1, "g_zk2-0", 2, 1.0, 45.0, "expiry"),  # a kill: the server ended it, no hand-over of ours
        Span("t", 2, "g_sc2-0", 3, 1.0, 60.0, "delete"),  # a Scala member's release
    )
    give_ups = {
        "g_sc1": [15.0, 50.0, 200.0],  # 5 s after ours; 5 s after an expiry only; outside the window
        "g_sc2": [21.9, 62.0],  # 11.9 s after ours (within 2 x 6 s); after a Scala release only
    }
    assert bench.stranded_joiners(h, KINDS, give_ups, 6.0) == (2, 4)
    # A shorter budget leaves 21.9 - 10 > 2 x 5 s: no longer ours to answer for.
    assert bench.stranded_joiners(h, KINDS, give_ups, 5.0) == (1, 4)
    assert bench.stranded_joiners(h, KINDS, {}, 6.0) == (0, 0)


def test_give_ups_are_read_from_a_scala_log_and_stamped_by_the_line_before_the_stack_trace() -> None:
    lines = [
        "[2026-12-07 22:10:01,000] INFO [g_sc1], begin rebalancing consumer g_sc1 try #0 (kafka.consumer.ZookeeperConsumerConnector)",
        "[2026-12-07 22:10:07,500] ERROR [g_sc1], error during syncedRebalance (kafka.consumer.ZookeeperConsumerConnector)",
        "kafka.common.ConsumerRebalanceFailedException: g_sc1 can't rebalance after 4 retries",
        "\tat kafka.consumer.ZookeeperConsumerConnector$ZKRebalancerListener.syncedRebalance(...)",
    ]
    (at,) = bench.give_ups_in(lines)
    assert abs(at - bench.stamp(lines[0]) - 6.5) < 1e-3
    assert bench.give_ups_in(lines[:2]) == []


def test_lingers_are_read_from_a_member_log() -> None:
    lines = [
        "2026-12-07 22:10:01,250 INFO rebalance zkconsumer.coordinator.linger g_zk1: keeping released owner nodes "
        "1.7s after the commit (round trip 2.1 ms, largest share 4): g_sc1 may be a Scala member",
        "2026-12-07 22:10:03,000 INFO MainThread zkconsumer.coordinator.linger g_zk1: leaving 3.0s after the final "
        "commit: g_sc1 may be a Scala member",
        "2026-12-07 22:10:04,000 INFO rebalance zkconsumer.coordinator.rebalancer g_zk1: claimed 4 partitions",
    ]
    found = bench.lingers_in(lines)
    assert [(what, seconds) for _, what, seconds in found] == [("hand-over", 1.7), ("leave", 3.0)]
    assert abs(found[1][0] - found[0][0] - 1.75) < 1e-3


def test_each_hand_over_to_a_scala_member_is_paired_with_its_old_owners_linger() -> None:
    h = history(
        Span("t", 0, "g_zk1-0", 1, 1.0, 10.0, "delete"),
        Span("t", 0, "g_sc1-0", 2, 10.2, None),  # zk -> scala after a linger logged at 9.0
        Span("t", 1, "g_zk2-0", 3, 1.0, 30.0, "delete"),
        Span("t", 1, "g_sc2-0", 4, 30.1, None),  # zk -> scala, its owner's linger 20 s before: none
        Span("t", 2, "g_zk1-1", 5, 1.0, 50.0, "delete"),
        Span("t", 2, "g_zk2-1", 6, 50.1, None),  # zk -> zk: not counted
    )
    lingers = {"g_zk1": [7.0, 9.0, 49.5], "g_zk2": [10.0]}  # the last linger before the node went counts
    assert bench.handover_lingers(h, KINDS, lingers, 6.0) == [1.0, None]


def joins() -> History:
    """g_sc2 stands in the group; g_sc1 joins at 20 and takes a partition from ours; g_sc3 joins at
    40 and never owns one (its give-up at 47 is 7 s after ours released at 40.5)."""
    h = history(
        Span("t", 0, "g_zk1-0", 1, 1.0, 22.0, "delete"),
        Span("t", 0, "g_sc1-0", 2, 22.1, 39.0, "close"),  # zk -> the joiner
        Span("t", 1, "g_zk2-0", 3, 1.0, 22.0, "delete"),
        Span("t", 1, "g_sc2-0", 4, 22.2, None),  # zk -> a Scala member already in the group
        Span("t", 2, "g_sc2-0", 5, 1.0, 22.0, "delete"),
        Span("t", 2, "g_sc1-0", 6, 22.3, 39.0, "close"),  # scala -> the joiner: not from ours
        Span("t", 3, "g_zk1-0", 7, 1.0, 40.5, "delete"),
        Span("t", 3, "g_zk2-0", 8, 50.0, None),  # the stranded joiner's partition, re-claimed by ours
    )
    h.incarnations = [
        Incarnation("g_zk1", 1, 0.5),
        Incarnation("g_zk2", 2, 0.5),
        Incarnation("g_sc2", 3, 0.6),
        Incarnation("g_sc1", 4, 20.5, 39.0, "close"),
        Incarnation("g_sc3", 5, 40.2),
    ]
    h.notes = [Note("fault", None, 20.0, "1 join"), Note("fault", None, 40.0, "1 join")]
    return h


def test_a_hand_over_from_ours_to_a_member_registered_at_its_event_is_a_joiner_hand_over() -> None:
    h = joins()
    assert bench.joiner_handovers(h, KINDS) == 1
    # Registered before the event: a member already in the group, not a joiner.
    h.incarnations[3] = Incarnation("g_sc1", 4, 19.5, 39.0, "close")
    assert bench.joiner_handovers(h, KINDS) == 0


def test_a_scala_joiner_that_never_owned_a_partition_is_stranded_once() -> None:
    h = joins()
    assert bench.owned_nothing(h, KINDS) == {"g_sc3"}
    assert bench.stranded_joiners(h, KINDS, {}, 6.0) == (1, 0)
    # Its give-up after ours released is the same stranded joiner, not a second one.
    assert bench.stranded_joiners(h, KINDS, {"g_sc3": [47.0]}, 6.0) == (1, 1)
    # Once it owns a partition it is no longer stranded (and its give-up is too late to be ours).
    h.spans.append(Span("t", 3, "g_sc3-0", 9, 41.0, None))
    assert bench.stranded_joiners(h, KINDS, {"g_sc3": [60.0]}, 6.0) == (0, 1)
