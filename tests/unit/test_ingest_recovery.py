"""Ingest recovery chains only through runs of the same group and topic incarnation."""
from __future__ import annotations

from spark_jobs.ingest import Run, recover, same_incarnation


def test_only_runs_of_this_group_and_incarnation_are_chained() -> None:
    ours = Run("run=t-a", {0: (0, 100)}, "g", 7)
    old_topic = Run("run=t-b", {0: (100, 2500)}, "g", 3)
    other_group = Run("run=t-c", {0: (100, 200)}, "h", 7)
    unmarked = Run("run=t-d", {0: (100, 150)})  # a marker from before incarnations were recorded
    usable, others = same_incarnation([ours, old_topic, other_group, unmarked], "g", 7)
    assert usable == [ours] and others == [old_topic, other_group, unmarked]
    assert recover({("t", 0): 0}, usable) == {("t", 0): 100}
    assert same_incarnation([ours], "g", None) == ([], [ours]), "a topic that does not exist has no runs"
