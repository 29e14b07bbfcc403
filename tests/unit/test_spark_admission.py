"""Spark's minOffsetsPerTrigger / maxTriggerDelay: the admission verdict and the stream reader's triggers under it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_spark_stream_reader import T0, FakeMember, Reader

from zkconsumer.spark import stream_reader
from zkconsumer.spark.offsets import batch_ranges
from zkconsumer.spark.options import OptionError, parse_options
from zkconsumer.spark.stream_reader import ReadAllAvailable
from zkconsumer.spark.triggers import TriggerAdmission, duration_ms

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}


@pytest.mark.parametrize(
    ("text", "ms"),
    [("15m", 900_000), ("30s", 30_000), ("500ms", 500), ("250", 250), ("2h", 7_200_000), ("1 min", 60_000)],
)
def test_spark_s_durations(text: str, ms: int) -> None:
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "5 parsecs", "-1s", "1.5s"])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        duration_ms(text)


@given(
    steps=st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 300)), min_size=1, max_size=30),
    min_rows=st.integers(1, 200),
    max_delay=st.integers(1, 10_000),
)
def test_a_batch_runs_exactly_when_enough_is_there_or_the_delay_has_passed_and_the_first_always(
    steps: list[tuple[int, int]], min_rows: int, max_delay: int
) -> None:
    admission = TriggerAdmission(min_rows, max_delay)
    now, last = 0, None
    for advance, available in steps:
        now += advance
        delayed = admission.delay(available, now)
        expected = last is not None and available < min_rows and now - last < max_delay
        assert delayed == expected
        if not delayed:
            last = now


def test_the_options_parse_and_belong_to_streams_and_together() -> None:
    opts = parse_options({**BASE, "minOffsetsPerTrigger": "100", "maxTriggerDelay": "30s"}, streaming=True)
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 30_000)
    assert parse_options({**BASE, "minOffsetsPerTrigger": "5"}, streaming=True).max_trigger_delay_ms == 900_000
    with pytest.raises(OptionError, match="'minOffsetsPerTrigger' applies to streaming reads only"):
        parse_options({**BASE, "minOffsetsPerTrigger": "5"}, streaming=False)
    with pytest.raises(OptionError, match="'maxTriggerDelay' applies only with 'minOffsetsPerTrigger'"):
        parse_options({**BASE, "maxTriggerDelay": "5s"}, streaming=True)
    with pytest.raises(OptionError, match="'maxTriggerDelay': 'soon' is not a duration"):
        parse_options({**BASE, "minOffsetsPerTrigger": "5", "maxTriggerDelay": "soon"}, streaming=True)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_stream_waits_for_min_offsets_until_the_delay_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(stream_reader, "time", clock)
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 10)}, minOffsetsPerTrigger="50", maxTriggerDelay="10s")
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, first) == [(T0, 0, 10)], "the first trigger runs what is there"
    reader.logs[T0] = (0, 30)  # 20 new: fewer than 50
    clock.now += 5
    assert reader.latestOffset(first, ReadAllAvailable()) == first, "waits: 20 < 50, 5 s < 10 s"
    reader.logs[T0] = (0, 60)  # 50 new
    clock.now += 1
    second = reader.latestOffset(first, ReadAllAvailable())
    assert batch_ranges(first, second) == [(T0, 10, 60)]
    reader.logs[T0] = (0, 61)
    clock.now += 9.9
    assert reader.latestOffset(second, ReadAllAvailable()) == second
    clock.now += 0.2  # 10.1 s since the last batch: whatever is there runs
    third = reader.latestOffset(second, ReadAllAvailable())
    assert batch_ranges(second, third) == [(T0, 60, 61)]


def test_trigger_available_now_never_waits_for_min_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(stream_reader, "time", clock)
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 10)}, minOffsetsPerTrigger="50")
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadAllAvailable())
    reader.logs[T0] = (0, 15)
    reader.prepareForTriggerAvailableNow()
    nxt = reader.latestOffset(first, ReadAllAvailable())
    assert batch_ranges(first, nxt) == [(T0, 10, 15)], "5 < 50, but the run must reach its targets"
