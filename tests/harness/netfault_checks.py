"""The netfaults checker: per fault and per group, overlap time, delivery after a cut, convergence, leader-change moves."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness import fault_metrics as fm
from harness.chaos import Report
from harness.chaos_history import History
from harness.netfault_driver import FaultRecord


@dataclass
class FaultFigures:
    """What one group did around one fault (seconds; None where the fault does not apply)."""

    overlap_s: float = 0.0  # the longest any one partition was delivered by two members at once
    overlaps: int = 0
    deliver_after_cut_s: float | None = None
    takeover_s: float | None = None  # first delivery of the cut member's partitions by another member
    converge_s: float | None = None
    leader_moves: int | None = None  # owner nodes created or ended around a leader change with nobody cut
    lost_sessions: int | None = None  # member nodes created or ended then (a session lost: 2, old and new)


@dataclass
class GroupVerdict:
    name: str
    report: Report
    faults: list[FaultFigures] = field(default_factory=list)

    @property
    def max_overlap_s(self) -> float:
        return max((f.overlap_s for f in self.faults), default=0.0)

    @property
    def max_after_cut_s(self) -> float:
        return max((f.deliver_after_cut_s for f in self.faults if f.deliver_after_cut_s is not None), default=0.0)

    @property
    def max_converge_s(self) -> float:
        values = [f.converge_s for f in self.faults if f.converge_s is not None]
        return max(values, default=0.0)

    @property
    def leader_moves(self) -> int:
        return sum(f.leader_moves or 0 for f in self.faults)

    @property
    def unconverged(self) -> int:
        return sum(1 for f in self.faults if f.converge_s is None)


def judge(name: str, h: History, report: Report, records: list[FaultRecord]) -> GroupVerdict:
    """Figures of every fault for group `name`; a fault's window runs until the next fault begins."""
    verdict = GroupVerdict(name, report)
    for i, record in enumerate(records):
        end = records[i + 1].began if i + 1 < len(records) else h.until
        figures = FaultFigures(converge_s=record.converge.get(name))
        overlaps = fm.overlap_times(h, record.began - 0.5, end)
        figures.overlaps = len(overlaps)
        per_partition: dict[tuple[str, int], float] = {}
        for o in overlaps:
            per_partition[(o.topic, o.partition)] = per_partition.get((o.topic, o.partition), 0.0) + o.seconds
        figures.overlap_s = max(per_partition.values(), default=0.0)
        victim = record.cut.get(name)
        if victim is not None:
            figures.deliver_after_cut_s = fm.delivered_after(h, victim, record.began, record.healed)
            held = fm.partitions_owned(h, victim, record.began) | fm.partitions_delivered(
                h, victim, record.began - 2.0, record.began
            )
            taken = fm.delivered_by_others(h, victim, held, record.began, end)
            if taken:
                figures.takeover_s = min(d.at for d in taken) - record.began
        if record.leader_change and not record.cut:
            figures.leader_moves = len(fm.moved_spans(h, record.began, end))
            figures.lost_sessions = len(fm.new_registrations(h, record.began, end))
        verdict.faults.append(figures)
    return verdict


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def fault_lines(records: list[FaultRecord], verdicts: list[GroupVerdict]) -> list[str]:
    """One line per fault: what was done, then each group's figures."""
    lines = []
    for i, record in enumerate(records):
        parts = [f"#{record.index} {record.kind}: {record.description}"]
        for verdict in verdicts:
            f = verdict.faults[i]
            text = f"{verdict.name}: overlap {f.overlap_s:.3f}s ({f.overlaps})"
            if f.deliver_after_cut_s is not None:
                text += (
                    f", delivered {f.deliver_after_cut_s:.2f}s after the cut, taken over at {_seconds(f.takeover_s)}"
                )
            if f.leader_moves is not None:
                text += (
                    f", leader change: {f.leader_moves} owner nodes moved, "
                    f"{f.lost_sessions} member nodes created or ended"
                )
            text += f", converged {'never' if f.converge_s is None else f'{f.converge_s:.2f}s'}"
            parts.append(text)
        lines.append(" | ".join(parts))
    return lines


def group_line(verdict: GroupVerdict) -> str:
    r = verdict.report
    return (
        f"{verdict.name}: lost={len(r.lost)} overlaps={len(r.overlaps)} duplicates={len(r.bad_duplicates)} "
        f"allowed_duplicates={r.allowed_duplicates} overlap_s={verdict.max_overlap_s:.3f} "
        f"deliver_after_cut_s={verdict.max_after_cut_s:.3f} max_converge_s={verdict.max_converge_s:.2f} "
        f"unconverged={verdict.unconverged} leader_change_moves={verdict.leader_moves}"
    )


def summary_line(events: int, ours: GroupVerdict, scala: GroupVerdict | None) -> str:
    """The last line: `ours_overlap_s` and `scala_overlap_s` are the largest overlap time of any one fault."""
    r = ours.report
    return (
        f"events={events} lost={len(r.lost)} overlaps={len(r.overlaps)} duplicates={len(r.bad_duplicates)} "
        f"ours_overlap_s={ours.max_overlap_s:.3f} "
        f"scala_overlap_s={'-' if scala is None else f'{scala.max_overlap_s:.3f}'} "
        f"ours_deliver_after_cut_s={ours.max_after_cut_s:.3f} max_converge_s={ours.max_converge_s:.2f}"
    )


def failures(ours: GroupVerdict, lease_s: float) -> list[str]:
    """What makes the run fail: zkconsumer's invariants, its overlap time, its delivery past the lease."""
    out = list(ours.report.failures())
    if ours.max_overlap_s > 0 or any(f.overlaps for f in ours.faults):
        out.append(f"zkconsumer members delivered one partition at once ({ours.max_overlap_s:.3f}s)")
    if ours.max_after_cut_s > lease_s:
        out.append(
            f"a cut zkconsumer member delivered {ours.max_after_cut_s:.3f}s after its cut (lease {lease_s:.2f}s)"
        )
    # The goal is no rebalance while sessions survive: moves that went with a lost session are
    # reported (fault_lines), not failed; a leader change that moved partitions of live sessions is.
    moves = [f.leader_moves for f in ours.faults if f.leader_moves and not f.lost_sessions]
    if moves:
        out.append(f"an ensemble leader change moved owner nodes while every session survived ({sum(moves)})")
    return out
