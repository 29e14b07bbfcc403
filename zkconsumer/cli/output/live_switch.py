"""`migrate switch`'s report: where a run of the live switch started and stopped, what it wrote, and what blocks it (text and JSON)."""

from __future__ import annotations

from typing import Any

from zkconsumer.admin import SwitchRun

WHO = {"broker": "the brokers coordinate the group", "zookeeper": "ZooKeeper coordinates the group; no switch node"}


def switch_run_lines(run: SwitchRun) -> list[str]:
    """The report's lines: a head line, a line per step written (and one taken back), a BLOCKER line
    per blocker of the step it stopped before, naming the members or partitions (the first ten)."""
    moved = run.step if run.step == run.start else f"{run.start} -> {run.step}"
    if run.outcome == "complete":
        head = f"step {moved}, complete ({WHO[run.target]})"
    elif run.outcome == "refused":
        head = f"step {moved}, refused" + ("" if run.written else " (nothing written)")
    else:
        head = f"step {moved}, still blocked before step {run.plan.next} when --timeout ran out"
    lines = [f"Live switch of group {run.group} --to {run.target}: {head}"]
    lines += [f"  wrote step {step}" for step in run.written]
    if run.undone:
        lines.append(f"  took step {run.undone} back: a member that cannot switch registered meanwhile")
    for b in run.plan.blockers:
        shown = ", ".join(f"{t}-{p}" for t, p in b.partitions[:10])
        more = f" and {len(b.partitions) - 10} more" if len(b.partitions) > 10 else ""
        lines.append(f"  BLOCKER {b.code}: {b.message}" + (f": {shown}{more}" if shown else ""))
    return lines


def switch_run_document(run: SwitchRun) -> dict[str, Any]:
    """`migrate switch --json`: the same facts as the lines."""
    return {
        "group": run.group,
        "to": run.target,
        "from": run.start,
        "step": run.step,
        "outcome": run.outcome,
        "written": list(run.written),
        "undone": run.undone,
        "next": run.plan.next if run.outcome != "complete" else None,
        "blockers": [b.as_dict() for b in run.plan.blockers],
    }


def switch_run_error(run: SwitchRun, timeout_s: float) -> str | None:
    """The one error line of a run that did not arrive (exit status 3), None when it did."""
    codes = ", ".join(b.code for b in run.plan.blockers)
    if run.outcome == "complete":
        return None
    if run.outcome == "refused":
        where = "nothing written" if not run.written else f"stopped at step {run.step}"
        return (
            f"refusing to switch group {run.group} to {run.target} coordination, {where}: {codes} (see BLOCKER lines)"
        )
    return (
        f"group {run.group}'s switch to {run.target} stopped at step {run.step} after --timeout {timeout_s:g} s, "
        f"still blocked by {codes} (see BLOCKER lines); run it again to continue, or --to zookeeper to go back"
    )
