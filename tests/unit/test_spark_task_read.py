"""The executor's read of one task, on a scripted consumer: what one consume() call may hand back at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError

from zkconsumer.spark import kafka_read
from zkconsumer.spark.kafka_read import FetchTimeoutError, read_task
from zkconsumer.spark.offsets import OffsetRange

EOF, RESET = KafkaError._PARTITION_EOF, KafkaError._AUTO_OFFSET_RESET


class Clock:
    """kafka_read's clock: moves only when a consume() call waits or Spark holds a batch."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    perf_counter = monotonic


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
    clock: Clock
    watermarks: dict[tuple[str, int], tuple[int, int]]
    assigned: list[Any] = field(default_factory=list)
    closed: bool = False

    def assign(self, tps: list[Any]) -> None:
        self.assigned.append([(tp.topic, tp.partition, tp.offset) for tp in tps])

    def pause(self, tps: list[Any]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        answer = self.calls.pop(0) if self.calls else []
        if not answer:
            self.clock.now += timeout  # an empty answer comes after the whole wait
        return answer

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        return self.watermarks[(tp.topic, tp.partition)]

    def close(self) -> None:
        self.closed = True


@dataclass
class Brokers:
    """What the consumers read: one scripted answer per consume() call, shared by the task's consumer."""

    script: list[list[Msg]] = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)
    watermarks: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    consumers: list[ScriptedConsumer] = field(default_factory=list)

    def consumer(self, conf: dict[str, Any]) -> ScriptedConsumer:
        self.consumers.append(ScriptedConsumer(self.script, self.clock, self.watermarks))
        return self.consumers[-1]

    def read(
        self,
        script: list[list[Msg]],
        ranges: list[OffsetRange],
        *,
        fail_on_data_loss: bool = True,
        downstream_s: float = 0.0,
    ) -> dict[int, list[int]]:
        """Offsets read per partition; Spark holds each batch `downstream_s` before asking for the next."""
        self.script.extend(script)
        out: dict[int, list[int]] = {}
        for batch in read_task(ranges, {}, batch_size=100, fail_on_data_loss=fail_on_data_loss, poll_timeout_s=5.0):
            (partition,) = set(batch.column("partition").to_pylist())
            out.setdefault(partition, []).extend(batch.column("offset").to_pylist())
            self.clock.now += downstream_s
        assert [c.closed for c in self.consumers] == [True]  # one consumer for the task, closed
        return out


@pytest.fixture
def brokers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Brokers]:
    import confluent_kafka

    scripted = Brokers()
    monkeypatch.setattr(confluent_kafka, "Consumer", scripted.consumer)
    monkeypatch.setattr(kafka_read, "time", scripted.clock)
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


def test_a_stale_offset_reset_does_not_skip_a_range(brokers: Brokers) -> None:
    """B's reset re-assigns every unfinished partition; A, out of range too, then gets a second reset
    event for the offset it has already moved from. It must not end A's range (failOnDataLoss=false
    once skipped [6, 10) silently)."""
    ranges = [OffsetRange("t", 0, 0, 10, "b:9092"), OffsetRange("t", 1, 0, 10, "b:9092")]
    brokers.watermarks.update({("t", 0): (6, 100), ("t", 1): (3, 100)})
    script = [
        [Msg("t", 1, 0, RESET)],
        [Msg("t", 0, 0, RESET), Msg("t", 1, 3)],
        [Msg("t", 0, 0, RESET)],  # queued before A moved to 6: stale
        [Msg("t", 0, o) for o in range(6, 10)] + [Msg("t", 1, o) for o in range(4, 10)],
    ]
    got = brokers.read(script, ranges, fail_on_data_loss=False)
    assert got == {0: [6, 7, 8, 9], 1: list(range(3, 10))}


def test_a_reset_at_an_offset_the_log_holds_again_fetches_it(brokers: Brokers) -> None:
    ranges = [OffsetRange("t", 0, 5, 8, "b:9092")]
    brokers.watermarks[("t", 0)] = (0, 100)
    got = brokers.read([[Msg("t", 0, 5, RESET)], [Msg("t", 0, o) for o in (5, 6, 7)]], ranges)
    assert got == {0: [5, 6, 7]}
    assert brokers.consumers[0].assigned == [[("t", 0, 5)], [("t", 0, 5)]]  # fetched there again


def test_time_spark_holds_a_batch_is_not_a_range_s_idle_time(brokers: Brokers) -> None:
    """pollTimeoutMs is 5 s; Spark takes 3 s over each batch while the other partition's messages
    come first: nobody waited 5 s for a message, so nothing times out."""
    ranges = [OffsetRange("t", 0, 0, 4, "b:9092"), OffsetRange("t", 1, 0, 4, "b:9092")]
    script = [
        [Msg("t", 0, 0), Msg("t", 0, 1), Msg("t", 1, 0), Msg("t", 1, 1)],
        [Msg("t", 1, 2), Msg("t", 1, 3)],
        [Msg("t", 0, 2), Msg("t", 0, 3)],
    ]
    assert brokers.read(script, ranges, downstream_s=3.0) == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}


def test_time_spark_holds_a_range_s_own_batch_is_not_its_idle_time(brokers: Brokers) -> None:
    """Spark holds the first batch 4.5 s, then one consume() waits 1 s: 1 s idle, not 5.5 s."""
    script: list[list[Msg]] = [[Msg("t", 0, 0), Msg("t", 0, 1)], [], [Msg("t", 0, 2), Msg("t", 0, 3)]]
    assert brokers.read(script, [OffsetRange("t", 0, 0, 4, "b:9092")], downstream_s=4.5) == {0: [0, 1, 2, 3]}


def test_a_range_that_waits_past_the_poll_timeout_fails_naming_its_partition(brokers: Brokers) -> None:
    ranges = [OffsetRange("t", 0, 0, 4, "b:9092"), OffsetRange("t", 1, 0, 1, "b:9092")]
    brokers.watermarks[("t", 0)] = (0, 4)  # the offsets exist: unavailable, not lost
    with pytest.raises(FetchTimeoutError, match="t-0: no message at offset 2 within 5s"):
        brokers.read([[Msg("t", 0, 0), Msg("t", 0, 1), Msg("t", 1, 0)]], ranges)


def test_a_partition_s_own_error_names_the_partition(brokers: Brokers) -> None:
    ranges = [OffsetRange("t", 0, 0, 4, "b:9092"), OffsetRange("u", 3, 0, 4, "b:9092")]
    with pytest.raises(RuntimeError, match="reading u-3: .*UNKNOWN_TOPIC_OR_PART"):
        brokers.read([[Msg("u", 3, 0, KafkaError.UNKNOWN_TOPIC_OR_PART)]], ranges)


def test_a_truncated_log_ending_in_a_marker_is_data_loss_not_a_timeout(brokers: Brokers) -> None:
    """The range [0, 10) was planned; the log was then truncated to end at 5, whose last offset (4) is a
    transaction marker: messages 0-3, then the end-of-partition event at 5. Everything the log holds
    was read, so what is missing is lost — failOnDataLoss decides — and no wait for offset 4 fails
    the task (it once ended in FetchTimeoutError whatever failOnDataLoss said)."""
    ranges = [OffsetRange("t", 0, 0, 10, "b:9092")]
    brokers.watermarks[("t", 0)] = (0, 5)
    script = [[Msg("t", 0, o) for o in range(4)] + [Msg("t", 0, 5, EOF)]]
    assert brokers.read(script, ranges, fail_on_data_loss=False) == {0: [0, 1, 2, 3]}


def test_a_truncated_log_ending_in_a_marker_raises_data_loss_when_asked_to(brokers: Brokers) -> None:
    ranges = [OffsetRange("t", 0, 0, 10, "b:9092")]
    brokers.watermarks[("t", 0)] = (0, 5)
    script = [[Msg("t", 0, o) for o in range(4)] + [Msg("t", 0, 5, EOF)]]
    with pytest.raises(kafka_read.DataLossError, match="t-0: the log now ends at 5, before offset 5"):
        brokers.read(script, ranges)


def test_an_end_of_partition_below_the_range_keeps_waiting_for_what_comes(brokers: Brokers) -> None:
    """The log end moves on after an end-of-partition event below the range's end: the range reads on."""
    ranges = [OffsetRange("t", 0, 0, 4, "b:9092")]
    brokers.watermarks[("t", 0)] = (0, 4)
    script = [[Msg("t", 0, 0), Msg("t", 0, 1, EOF)], [], [Msg("t", 0, 1), Msg("t", 0, 2), Msg("t", 0, 3)]]
    assert brokers.read(script, ranges) == {0: [0, 1, 2, 3]}
