"""The fault-window figures and the netfaults verdict on hand-made histories (no cluster)."""

from __future__ import annotations

import pytest

from harness import fault_metrics as fm
from harness import netfault_checks as checks
from harness.chaos import Report
from harness.chaos_history import Delivery, History, Incarnation, Span
from harness.netfault_driver import FaultRecord, schedule

pytestmark = [pytest.mark.chaos]

T = "t"


def run(member: str, partition: int, start: float, end: float, step: float = 0.1) -> list[Delivery]:
    """`member` delivering `partition` every `step` from start to end (offsets from start * 10)."""
    count = int(round((end - start) / step)) + 1
    return [Delivery(member, T, 0, partition, int(start * 10) + i, start + i * step) for i in range(count)]


def cut_history(victim_until: float, successor_from: float) -> History:
    """A owns t-0 and is cut at 10.0; it delivers until `victim_until`, B from `successor_from`."""
    h = History(since=0.0, until=30.0)
    h.deliveries = run("A", 0, 5.0, victim_until) + run("B", 0, successor_from, 20.0) + run("B", 1, 5.0, 20.0)
    h.spans = [Span(T, 0, "A-0", 1, 4.0, 14.0), Span(T, 0, "B-0", 2, 14.1, None), Span(T, 1, "B-0", 3, 4.0, None)]
    h.incarnations = [Incarnation("A", 11, 3.0, 14.0), Incarnation("B", 12, 3.0)]
    return h


def report() -> Report:
    return Report(0, 0, 0, [], [], [], 0, {}, [])


def test_a_cut_member_that_stops_before_the_takeover_overlaps_nobody() -> None:
    h = cut_history(victim_until=12.5, successor_from=14.2)
    assert fm.delivered_after(h, "A", 10.0, 18.0) == pytest.approx(2.5)
    assert fm.overlap_times(h, 9.5, 30.0) == []
    assert fm.partitions_delivered(h, "A", 8.0, 10.0) == {(T, 0)}
    gap_tp, gap = fm.delivery_gap(h, 10.0, 20.0)
    assert gap_tp == (T, 0) and gap == pytest.approx(1.7)
    assert [s.czxid for s in fm.moved_spans(h, 10.0, 20.0)] == [1, 2]
    assert len(fm.new_registrations(h, 10.0, 20.0)) == 1


def test_a_cut_member_delivering_past_the_takeover_overlaps_for_as_long() -> None:
    h = cut_history(victim_until=18.0, successor_from=14.2)
    (overlap,) = fm.overlap_times(h, 9.5, 30.0)
    assert overlap.members == ("A", "B") and overlap.seconds == pytest.approx(3.8)
    record = FaultRecord(1, "zk-cut", "A cut", began=10.0, healed=18.5, cut={"ours": "A"}, converge={"ours": 1.0})
    verdict = checks.judge("ours", h, report(), [record])
    assert verdict.max_overlap_s == pytest.approx(3.8) and verdict.faults[0].takeover_s == pytest.approx(4.2)
    assert verdict.max_after_cut_s == pytest.approx(8.0)
    failed = checks.failures(verdict, lease_s=3.2)
    assert any("at once" in f for f in failed) and any("after its cut" in f for f in failed)
    assert "ours_overlap_s=3.800" in checks.summary_line(1, verdict, None)


def test_a_leader_change_fails_only_for_moves_while_every_session_survived() -> None:
    h = cut_history(victim_until=12.5, successor_from=14.2)
    moved = FaultRecord(1, "leader", "isolated", began=10.0, healed=18.0, leader_change=True)
    lost = checks.judge("ours", h, report(), [moved])
    assert lost.faults[0].leader_moves == 2 and lost.faults[0].lost_sessions == 1
    assert checks.failures(lost, lease_s=3.2) == []  # the moves went with A's lost session
    h.incarnations = [Incarnation("A", 11, 3.0), Incarnation("B", 12, 3.0)]
    kept = checks.judge("ours", h, report(), [moved])
    assert any("every session survived" in f for f in checks.failures(kept, lease_s=3.2))


def test_the_schedule_has_every_kind_once_per_round() -> None:
    import random

    kinds = schedule(10, random.Random(3))
    assert sorted(kinds[:5]) == sorted(kinds[5:]) == sorted(set(kinds)) and len(set(kinds)) == 5
    assert kinds == schedule(10, random.Random(3))
