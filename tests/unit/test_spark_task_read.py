"""The executor's read of one task, on a scripted consumer: what one consume() call may hand back at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError

from zkconsumer.spark.kafka_read import read_task
from zkconsumer.spark.offsets import OffsetRange

EOF = KafkaError._PARTITION_EOF


@dataclass
class Msg:
    """A consumed message, or an event when `code` is set (confluent-kafka's Message shape)."""

    topic_: str
    partition_: int
    offset_: int
    code: int | None = None

    def error(self) -> KafkaError | None:
        return None if self.code is None else KafkaError(self.code, "scripted")

    def topic(self) -> str:
        return self.topic_

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes:
        return b"v%d" % self.offset_

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000 + self.offset_)

    def headers(self) -> None:
        return None


@dataclass
class ScriptedConsumer:
    """Hands back the scripted consume() answers in order, then nothing."""

    calls: list[list[Msg]]
    assigned: list[Any] = field(default_factory=list)
    closed: bool = False

    def assign(self, tps: list[Any]) -> None:
        self.assigned.append([(tp.topic, tp.partition, tp.offset) for tp in tps])

    def pause(self, tps: list[Any]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        return self.calls.pop(0) if self.calls else []

    def close(self) -> None:
        self.closed = True


@dataclass
class Brokers:
    """What the consumers read: one scripted answer per consume() call, shared by the task's consumer."""

    script: list[list[Msg]] = field(default_factory=list)
    consumers: list[ScriptedConsumer] = field(default_factory=list)

    def consumer(self, conf: dict[str, Any]) -> ScriptedConsumer:
        self.consumers.append(ScriptedConsumer(self.script))
        return self.consumers[-1]

    def read(self, script: list[list[Msg]], ranges: list[OffsetRange]) -> dict[int, list[int]]:
        self.script.extend(script)
        out: dict[int, list[int]] = {}
        for batch in read_task(ranges, {}, batch_size=100, fail_on_data_loss=True, poll_timeout_s=5.0):
            (partition,) = set(batch.column("partition").to_pylist())
            out.setdefault(partition, []).extend(batch.column("offset").to_pylist())
        assert [c.closed for c in self.consumers] == [True]  # one consumer for the task, closed
        return out


@pytest.fixture
def brokers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Brokers]:
    import confluent_kafka

    scripted = Brokers()
    monkeypatch.setattr(confluent_kafka, "Consumer", scripted.consumer)
    yield scripted


def test_data_and_the_end_of_partition_behind_it_in_one_call_are_both_read(brokers: Brokers) -> None:
    """A task of two partitions asks for both ranges' rows at once, so one call can hold a
    partition's last messages and the end-of-partition event after them; the range is finished
    by the event only after its messages are read (a batch once lost a partition's 318 rows)."""
    ranges = [OffsetRange("t", 0, 10, 13, "b:9092"), OffsetRange("t", 1, 0, 2, "b:9092")]
    script = [[Msg("t", 0, 10), Msg("t", 0, 11), Msg("t", 0, 12), Msg("t", 0, 13, EOF), Msg("t", 1, 0), Msg("t", 1, 1)]]
    assert brokers.read(script, ranges) == {0: [10, 11, 12], 1: [0, 1]}


def test_a_compacted_range_ends_at_the_event_with_the_messages_before_it(brokers: Brokers) -> None:
    """Offsets 11 and 12 were compacted away: the range [10, 14) ends at the log end (14) with 10 and 13."""
    ranges = [OffsetRange("t", 0, 10, 14, "b:9092")]
    script = [[Msg("t", 0, 10), Msg("t", 0, 13), Msg("t", 0, 14, EOF)]]
    assert brokers.read(script, ranges) == {0: [10, 13]}


def test_an_event_of_another_partition_does_not_end_a_range(brokers: Brokers) -> None:
    ranges = [OffsetRange("t", 0, 0, 2, "b:9092"), OffsetRange("t", 1, 5, 6, "b:9092")]
    script = [[Msg("t", 1, 5, EOF), Msg("t", 0, 0)], [Msg("t", 1, 5)], [Msg("t", 0, 1)]]
    assert brokers.read(script, ranges) == {0: [0, 1], 1: [5]}
