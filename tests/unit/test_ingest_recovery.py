"""Ingest recovery across topic incarnations and groups, and the batch option that pins a read's partitions."""
from __future__ import annotations

import pytest

from spark_jobs.ingest import Run, recover, same_incarnation
from spark_jobs.options import OptionError, parse_options

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}


def test_only_runs_of_this_group_and_incarnation_are_chained() -> None:
    ours = Run("run=t-a", {0: (0, 100)}, "g", 7)
    old_topic = Run("run=t-b", {0: (100, 2500)}, "g", 3)
    other_group = Run("run=t-c", {0: (100, 200)}, "h", 7)
    unmarked = Run("run=t-d", {0: (100, 150)})  # a marker from before incarnations were recorded
    usable, others = same_incarnation([ours, old_topic, other_group, unmarked], "g", 7)
    assert usable == [ours] and others == [old_topic, other_group, unmarked]
    assert recover({("t", 0): 0}, usable) == {("t", 0): 100}
    assert same_incarnation([ours], "g", None) == ([], [ours]), "a topic that does not exist has no runs"


def test_partitions_pins_a_batch_read() -> None:
    opts = parse_options({**BASE, "partitions": "t/0, t/3,my/topic/2"}, streaming=False)
    assert opts.partitions == {("t", 0), ("t", 3), ("my/topic", 2)}
    assert parse_options(BASE, streaming=False).partitions is None


@pytest.mark.parametrize(("value", "streaming", "message"), [
    ("t/0", True, "applies to batch reads"),
    ("t", False, "is not topic/partition"),
    ("t/x", False, "is not topic/partition"),
    (" , ", False, "names no partition"),
])
def test_bad_partitions_name_the_option(value: str, streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options({**BASE, "partitions": value}, streaming=streaming)
