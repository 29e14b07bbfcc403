"""Ingest recovery chains only through runs of the same group and topic incarnation."""

from __future__ import annotations

from zkconsumer.spark.ingest import IngestRun, recover, same_incarnation


def test_only_runs_of_this_group_and_incarnation_are_chained() -> None:
    ours = IngestRun("run=t-a", {0: (0, 100)}, "g", 7)
    old_topic = IngestRun("run=t-b", {0: (100, 2500)}, "g", 3)
    other_group = IngestRun("run=t-c", {0: (100, 200)}, "h", 7)
    unmarked = IngestRun("run=t-d", {0: (100, 150)})  # a marker from before incarnations were recorded
    usable, others = same_incarnation([ours, old_topic, other_group, unmarked], "g", 7)
    assert usable == [ours] and others == [old_topic, other_group, unmarked]
    assert recover({("t", 0): 0}, usable) == {("t", 0): 100}
    assert same_incarnation([ours], "g", None) == ([], [ours]), "a topic that does not exist has no runs"


def test_a_marker_without_an_epoch_counts_when_written_after_the_topic_was_created() -> None:
    before = IngestRun("run=t-a", {0: (0, 100)}, "g", None, written_at=1_000)
    after = IngestRun("run=t-b", {0: (0, 100)}, "g", None, written_at=5_000)
    usable, others = same_incarnation([before, after], "g", 7, created_ms=2_000)
    assert usable == [after] and others == [before]
    assert same_incarnation([after], "g", 7) == ([], [after]), "no creation time: not trusted"


def test_a_position_inside_a_written_run_resumes_past_it() -> None:
    # The run wrote [0, 100) but its commit was refused: a member committed 50 meanwhile. Its
    # messages 50..99 are in the output already; the rerun must not write them again.
    run = IngestRun("run=t-a", {0: (0, 100), 1: (0, 40)}, "g", 7)
    assert recover({("t", 0): 50, ("t", 1): 40, ("t", 2): 0}, [run]) == {("t", 0): 100, ("t", 1): 40, ("t", 2): 0}
