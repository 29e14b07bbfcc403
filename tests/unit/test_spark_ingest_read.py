"""The ingest job's read is exactly its run's pinned plan, whatever `--property` options it was given (issue 52, finding 7)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.spark.ingest import pinned_read
from zkconsumer.spark.options import parse_options

TIME_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "startingTimestamp": st.just("0"),
        "startingOffsetsByTimestamp": st.just('{"t": {"0": 0}}'),
        "startingOffsetsByTimestampStrategy": st.sampled_from(["error", "latest"]),
        "endingTimestamp": st.just("99"),
        "EndingOffsetsByTimestamp": st.just('{"t": {"0": 99}}'),
        "ignoreCommittedOffsets": st.just("true"),
    },
)


@given(props=TIME_OPTIONS, start=st.integers(0, 5000), size=st.integers(1, 5000))
def test_the_runs_read_reads_exactly_its_pinned_offsets_whatever_the_time_options(
    props: dict[str, str], start: int, size: int
) -> None:
    """Before: `--property startingTimestamp=...` reached the read, where a time outranks the
    pinned startingOffsets entry: the marker said [1000, 2000) while the read started at 0, so a
    rerun wrote the previous run's rows again."""
    options = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t", **props}
    read = parse_options(pinned_read(options, {("t", 0): start}, {("t", 0): start + size}), streaming=False)
    assert read.starting_time is None and not read.starting_by_time and read.ending_time is None
    assert not read.ending_by_time and not read.ignore_committed
    assert read.starting_explicit == {("t", 0): start} and read.ending_explicit == {("t", 0): start + size}
    assert read.partitions == frozenset({("t", 0)})
