"""Pure task planning of the zkconsumer source: ranges packed into tasks (rowsPerTask) after minPartitions splits."""

from __future__ import annotations

import math
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.spark.offsets import OffsetRange, ReadTask, pack, split

Ranges = list[tuple[tuple[str, int], int, int]]

ranges_strategy = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 30)),
    st.tuples(st.integers(0, 10**6), st.integers(1, 60_000)).map(lambda s: (s[0], s[0] + s[1])),
    min_size=1,
    max_size=40,
).map(lambda d: [(k, lo, hi) for k, (lo, hi) in sorted(d.items())])


@settings(max_examples=400, deadline=None)
@given(
    ranges=ranges_strategy,
    rows_per_task=st.sampled_from([0, 1, 500, 20_000, 10**9]),
    min_partitions=st.one_of(st.none(), st.integers(1, 64)),
)
def test_every_offset_is_read_once_by_a_task_of_distinct_partitions(
    ranges: Ranges, rows_per_task: int, min_partitions: int | None
) -> None:
    parts = split(ranges, "b:9092", min_partitions)
    tasks = pack(parts, rows_per_task, min_partitions)
    read = sorted((r.key, r.start, r.end) for t in tasks for r in t.ranges)
    assert read == sorted((p.key, p.start, p.end) for p in parts)  # each range in exactly one task
    for task in tasks:
        assert task.ranges and len({r.key for r in task.ranges}) == len(task.ranges)  # one consumer can read it
    small = sum(p.size for p in parts if p.size < rows_per_task)
    large = sum(1 for p in parts if p.size >= rows_per_task)
    wanted = len(parts) if rows_per_task == 0 else large + math.ceil(small / rows_per_task)
    assert len(tasks) == min(len(parts), max(wanted, min_partitions or 1))
    if min_partitions and len(parts) >= min_partitions:
        assert len(tasks) >= min_partitions  # packing never undoes what minPartitions asked for
    # largest first to the lightest task: no task exceeds the lightest by more than one range's rows
    sizes = [t.size for t in tasks]
    assert max(sizes) - min(sizes) <= max(p.size for p in parts)


def test_small_ranges_share_a_task_and_large_ones_keep_their_own() -> None:
    parts = split([(("t", p), 0, 400) for p in range(8)], "b:9092", None)
    (only,) = pack(parts, 20_000)  # a 3,200-row micro-batch: one Python task, not eight
    assert [r.partition for r in only.ranges] == list(range(8))
    big = split([(("t", p), 0, 250_000) for p in range(8)], "b:9092", None)
    assert [len(t.ranges) for t in pack(big, 20_000)] == [1] * 8  # a bulk read keeps a task per partition
    assert [len(t.ranges) for t in pack(parts, 0)] == [1] * 8  # rowsPerTask=0: as Spark's Kafka source


def test_one_large_range_does_not_spread_the_small_ones_over_many_tasks() -> None:
    parts = split([(("t", 0), 0, 1_000_000)] + [(("u", p), 0, 50) for p in range(100)], "b:9092", None)
    tasks = pack(parts, 20_000)
    assert sorted(len(t.ranges) for t in tasks) == [1, 100]  # the large range alone, the 5,000 small rows together


def test_a_task_pickles_as_spark_ships_it() -> None:
    task = ReadTask((OffsetRange("t", 0, 5, 9, "b:9092", 17), OffsetRange("t", 1, 0, 3, "b:9092", 17)))
    assert pickle.loads(pickle.dumps(task)) == task and task.size == 7
    assert pack([], 20_000) == []
