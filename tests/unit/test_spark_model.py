"""The real stream reader inside a model of Spark's micro-batch loop (harness/spark_model.py): no loss, no offset twice in the sink, ZooKeeper never ahead, over seeds."""

from __future__ import annotations

import logging

import pytest

from harness import spark_model

SEEDS = range(60)  # ~2 s; scripts/bench/spark_model.py runs thousands


def test_the_model_finds_nothing_over_the_suite_s_seeds(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)  # the reader's warnings (blips, broker trouble) are expected here
    found = {}
    seen: dict[str, int] = {}
    for seed in SEEDS:
        world = spark_model.run(seed)
        if world.violations:
            found[seed] = world.violations[:3]
        for what, n in world.counts.items():
            seen[what] = seen.get(what, 0) + (1 if n else 0)
    assert not found, f"violations (seed: first ones): {found}"
    # Every kind of event ran in some seed: the model is not idling.
    for what in (
        *(f"crash {p}" for p in spark_model.CRASH_POINTS),
        "replays",
        "scala hand-overs",
        "failing-commit",
        "blip",
        "trouble",
        "maxOffsetsPerTrigger",
        "held by Scala at the start",
        "trouble at a restart",
    ):
        assert seen.get(what, 0) >= 3, f"{what} ran in only {seen.get(what, 0)} seeds"


def test_the_model_catches_a_reader_that_commits_what_it_has_not_delivered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks can fail: a member committing each planned end at once (before the sink has it)
    puts ZooKeeper ahead of the deliveries, and the model says so."""
    from zkconsumer.spark.stream_member import StreamMember

    real = StreamMember.commit

    def eager(self: StreamMember, positions: dict[tuple[str, int], int], member: object = None) -> None:
        logs = self.world.logs  # type: ignore[attr-defined]
        real(self, {k: logs[k] for k in self.owned()}, member)

    monkeypatch.setattr(StreamMember, "commit", eager)
    logging.disable(logging.WARNING)
    try:
        assert any("ahead of the deliveries" in v for s in range(10) for v in spark_model.run(s).violations)
    finally:
        logging.disable(logging.NOTSET)


def test_the_long_run_script_runs_and_ends_with_its_machine_readable_line() -> None:
    """A smoke of scripts/bench/spark_model.py (the long run is a script, not a test)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts/bench/spark_model.py"
    done = subprocess.run(
        [sys.executable, str(script), "--seeds", "3", "--first", "1000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("seeds=3 first=1000 steps=60 violations=0 ")
