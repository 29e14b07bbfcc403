"""The executor read asks the consumer for what it holds, never waits for a count of offsets that
transaction markers or compacted gaps leave unmet (issue 43, finding 5)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_spark_task_read import EOF, Clock, Msg

from zkconsumer.spark import kafka_read
from zkconsumer.spark.kafka_read import read_task, take
from zkconsumer.spark.offsets import OffsetRange


@dataclass
class QueuedConsumer:
    """librdkafka's consume(n, timeout) as it behaves: returns at once when n messages and events
    are queued, else after the whole timeout with what is queued by then (here: what is queued)."""

    queue: list[Msg]
    clock: Clock
    calls: list[tuple[int, float]] = field(default_factory=list)

    def assign(self, tps: list[Any]) -> None:
        pass

    def pause(self, tps: list[Any]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        self.calls.append((num_messages, timeout))
        if len(self.queue) < num_messages:
            self.clock.now += timeout
        got, self.queue[:] = self.queue[:num_messages], self.queue[num_messages:]
        return got

    def close(self) -> None:
        pass


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    scripted = Clock()
    monkeypatch.setattr(kafka_read, "time", scripted)
    yield scripted


def reader(monkeypatch: pytest.MonkeyPatch, clock: Clock, queue: list[Msg]) -> QueuedConsumer:
    import confluent_kafka

    consumer = QueuedConsumer(queue, clock)
    monkeypatch.setattr(confluent_kafka, "Consumer", lambda conf: consumer)
    return consumer


def test_a_range_ending_in_transaction_markers_does_not_wait_for_them(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    """Before: offsets [0, 10) asked for 10 messages; 8 messages and the end-of-partition event at 10
    (two commit markers at 8 and 9) made 9, so consume() waited its whole second."""
    queue = [Msg("t", 0, o) for o in range(8)] + [Msg("t", 0, 10, EOF)]
    reader(monkeypatch, clock, queue)
    began = clock.now
    batches = list(
        read_task(
            [OffsetRange("t", 0, 0, 10, "b:9092")], {}, batch_size=100, fail_on_data_loss=True, poll_timeout_s=5.0
        )
    )
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(8))
    assert clock.now - began == 0.0, "waited for offsets that are markers"


def test_a_compacted_range_of_two_partitions_does_not_wait_either(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    queue = [Msg("t", 0, o) for o in (0, 3, 7)] + [Msg("t", 1, o) for o in (2, 4)]
    queue += [Msg("t", 0, 9, EOF), Msg("t", 1, 6, EOF)]
    reader(monkeypatch, clock, queue)
    ranges = [OffsetRange("t", 0, 0, 9, "b:9092"), OffsetRange("t", 1, 0, 6, "b:9092")]
    read = list(read_task(ranges, {}, batch_size=100, fail_on_data_loss=True, poll_timeout_s=5.0))
    assert sorted(o for b in read for o in b.column("offset").to_pylist()) == [0, 2, 3, 4, 7]
    assert clock.now == 1000.0


def test_an_empty_queue_waits_for_the_first_arrival_only(clock: Clock) -> None:
    consumer = QueuedConsumer([], clock)
    assert take(consumer.consume, 50, 1.0) == []
    assert consumer.calls == [(50, 0), (1, 1.0)]


@settings(max_examples=200)
@given(queued=st.integers(0, 300), count=st.integers(1, 200))
def test_take_hands_back_up_to_count_in_queue_order_and_waits_only_on_an_empty_queue(queued: int, count: int) -> None:
    clock = Clock()
    queue = [Msg("t", 0, o) for o in range(queued)]
    consumer = QueuedConsumer(list(queue), clock)
    got = take(consumer.consume, count, 1.0)
    assert got == queue[:count]
    assert clock.now == 1000.0 + (1.0 if queued == 0 else 0.0)
