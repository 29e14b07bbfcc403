"""Smoke of scripts/bench/live_switch.py's audit harness: the rolling path, 2 members, 4 partitions, a few seconds.

On the session cluster (the script starts its own): members run as processes, the rolling path
runs the CLI as docs/migration.md says, the audit finds nothing lost and no overlap on a clean
run, and an overlap planted in the run's own delivery log is found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.switch_audit import Delivery, audit
from harness.switch_paths import Settings, rolling
from harness.switch_run import AuditRun, has_command

pytestmark = pytest.mark.cluster


def test_the_audit_harness_judges_the_rolling_path(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = AuditRun(cluster, tmp_path, name="smoke", partitions=4, rate=200)
    try:
        points = rolling(run, Settings(members=2, warm=2.0, hold=2.0))
        run.end(drain_timeout=30)
    finally:
        run.close()
    figures = run.figures()
    assert figures.acked > 500, figures
    assert figures.lost == 0, figures
    assert figures.overlap == 0 and not figures.overlap_spans, figures
    assert figures.duplicates == 0, figures  # clean stops commit exactly what was delivered
    assert figures.silence_s > 0.5, figures  # the rolling path stops the group: the audit must see it
    assert [p.differ for p in points] == [{}], [p.describe() for p in points]
    assert len(run.sampler.samples) > 10 and run.sampler.errors < len(run.sampler.samples)
    # every member's log is in: the ZooKeeper members, their dual-commit successors, the broker members
    members = {d.member for d in run.deliveries()}
    assert {"zk0", "zk1", "dual0", "dual1"} <= members and members & {"broker0", "broker1"}, members

    # plant an overlap in the run's own log: another member delivering what a member delivered, while it did
    deliveries = run.deliveries()
    victim = next(d for d in deliveries if d.member == "dual0")
    copied = [
        Delivery("planted", d.partition, d.offset, d.at + 0.001)
        for d in deliveries
        if d.member == victim.member and d.partition == victim.partition
    ][:20]
    with_overlap = audit(deliveries + copied, {d.key for d in deliveries}, start=run.start_at, end=run.end_at)
    assert with_overlap.overlap == len(copied) > 0, with_overlap
    assert any({a.member, b.member} == {"dual0", "planted"} for a, b in with_overlap.overlap_spans)


def test_the_live_path_knows_whether_the_switch_command_exists() -> None:
    """The live path runs only where `zkconsumer migrate switch` exists (else: no figures, exit 3)."""
    assert has_command("migrate", "plan")
    assert not has_command("migrate", "no-such-verb")
