"""Pure offset logic of the zkconsumer stream: maxOffsetsPerTrigger never starves a partition, past-end positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.spark.offsets import (
    EARLIEST,
    DataLossError,
    decode_epochs,
    decode_offsets,
    encode_offsets,
    is_initial,
    rate_limit,
    settle,
)

Spans = dict[tuple[str, int], tuple[int, int]]

spans_strategy = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 40)),
    st.tuples(st.integers(0, 10**12), st.integers(0, 10**9)).map(lambda s: (s[0], s[0] + s[1])),
    max_size=70,
)


@settings(max_examples=400, deadline=None)
@given(spans=spans_strategy, limit=st.integers(1, 10**7))
def test_every_partition_with_a_backlog_advances_under_any_limit(spans: Spans, limit: int) -> None:
    ends = rate_limit(spans, limit)
    assert ends.keys() == spans.keys()
    backlogged = [k for k, (lo, hi) in spans.items() if hi > lo]
    for key, (lo, hi) in spans.items():
        assert lo <= ends[key] <= hi, key
        if hi > lo:
            assert ends[key] >= lo + 1, f"{key} starved: backlog {hi - lo}, limit {limit}"
    read = sum(ends[k] - lo for k, (lo, _) in spans.items())
    total = sum(hi - lo for lo, hi in spans.values())
    assert read == min(total, max(limit, len(backlogged)))
    assert rate_limit(dict(reversed(list(spans.items()))), limit) == ends  # independent of order


def test_a_small_partition_behind_63_busy_ones_is_read_within_a_few_triggers() -> None:
    # The example: 63 partitions with a large, growing backlog and one with 10 messages,
    # maxOffsetsPerTrigger 100k. Before, the small one's share was floored to 0 in every trigger.
    position = {("busy", p): 0 for p in range(63)} | {("small", 0): 0}
    high = {("busy", p): 5_000_000 for p in range(63)} | {("small", 0): 10}
    advanced = 0
    for _ in range(2000):
        ends = rate_limit({k: (position[k], high[k]) for k in position}, 100_000)
        advanced += ends[("small", 0)] > position[("small", 0)]
        position = ends
        high = {k: h + (1000 if k[0] == "busy" else 0) for k, h in high.items()}
    assert position[("small", 0)] == 10 and advanced == 10


def test_rate_limit_keeps_exact_batches_when_the_limit_covers_every_partition() -> None:
    spans = {("t", 0): (0, 100), ("t", 1): (0, 100), ("t", 2): (0, 100)}
    sizes = []
    for _ in range(5):
        ends = rate_limit(spans, 70)
        sizes.append(sum(ends[k] - lo for k, (lo, _) in spans.items()))
        spans = {k: (ends[k], hi) for k, (_, hi) in spans.items()}
    assert sizes == [70, 70, 70, 70, 20]


def test_a_position_past_the_end_of_a_truncated_log_resumes_at_the_end_not_the_start() -> None:
    # Re-created topics are told apart by their incarnation; past the end is a truncated log, and
    # everything below the new end was read before the truncation.
    assert settle(("t", 0), 500, 0, 100, fail_on_data_loss=False, past_end_to_end=True) == 100
    assert settle(("t", 0), 5, 10, 100, fail_on_data_loss=False, past_end_to_end=True) == 10
    assert settle(("t", 0), EARLIEST, 10, 100, fail_on_data_loss=False, past_end_to_end=True) == 10
    with pytest.raises(DataLossError, match="continue from offset 100"):
        settle(("t", 0), 500, 0, 100, fail_on_data_loss=True, past_end_to_end=True)


def test_offset_json_carries_incarnations_and_the_initial_mark_apart_from_positions() -> None:
    doc = encode_offsets({("t", 1): 5, ("a", 0): 2}, {("t", 1): 3}, {"t": 77, "a": 12}, initial=True)
    assert list(doc) == ["@initial", "@epochs", "@from", "a/0", "t/1"]
    assert decode_offsets(doc) == {("t", 1): 5, ("a", 0): 2}
    assert decode_epochs(doc) == {"a": 12, "t": 77} and is_initial(doc)
    assert decode_epochs({"t/0": 1}) == {} and not is_initial({"t/0": 1})
