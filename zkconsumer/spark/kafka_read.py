"""Kafka I/O on executors: reads of exact offset ranges into Arrow batches (driver-side lookups: broker_offsets)."""

from __future__ import annotations

import logging
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from zkconsumer.consumer.log_throttle import throttled_logger
from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark import phase_timings
from zkconsumer.spark.offsets import DataLossError, Key, OffsetRange, ReadTask, pack, split
from zkconsumer.spark.options import SourceOptions

if TYPE_CHECKING:
    from confluent_kafka import Consumer

    from zkconsumer.consumer.chunks import Message

log = logging.getLogger(__name__)
# librdkafka's own log lines (served by consume/poll), through Python logging instead of raw to stderr
_LIBRDKAFKA_LOG = throttled_logger(f"{__name__}.librdkafka")

HEADERS = StructField(
    "headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
)
# Spark's Kafka source's columns, in its order; `headers` only with includeHeaders (as there).
SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
SCHEMA_WITH_HEADERS = StructType([*SCHEMA.fields, HEADERS])
# Spark checks returned batches against exactly this schema (pa.Schema.equals).
ARROW_SCHEMA = to_arrow_schema(SCHEMA, timezone="UTC")
ARROW_SCHEMA_WITH_HEADERS = to_arrow_schema(SCHEMA_WITH_HEADERS, timezone="UTC")
_TS_TYPE = ARROW_SCHEMA.field("timestamp").type
_HEADERS_TYPE = ARROW_SCHEMA_WITH_HEADERS.field("headers").type
_EOF, _RESET = -191, -140  # KafkaError._PARTITION_EOF, KafkaError._AUTO_OFFSET_RESET
# What librdkafka reports while it reconnects by itself (a broker restarting, a leader moving):
# _TRANSPORT, _ALL_BROKERS_DOWN, _RESOLVE, _TIMED_OUT, LEADER_NOT_AVAILABLE,
# NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT, NETWORK_EXCEPTION. confluent-kafka marks every
# per-message error retriable() == False, these included: pollTimeoutMs bounds the wait instead.
TRANSIENT_CODES = frozenset({-195, -187, -193, -185, 5, 6, 7, 13})


class FetchTimeoutError(ZkConsumerError, RuntimeError):
    """A range made no progress for pollTimeoutMs while its offsets should exist: the partition is
    unavailable. The task fails (Spark retries it) whatever failOnDataLoss says: nothing is lost."""

    retriable = True


class KafkaReadFailed(ZkConsumerError, RuntimeError):
    """Reading a range met a Kafka error no wait fixes (fatal, or not one librdkafka recovers from by
    itself); the message names the ranges and the error. The task fails."""


def to_record_batch(msgs: list[Any], topic: str, partition: int, *, headers: bool = False) -> pa.RecordBatch:
    """Column lists straight from the Message objects (one C call per field), then Arrow arrays:
    no per-row Python tuples. Offsets of a gap-free run are generated instead of collected.

    timestampType is Kafka's TimestampType id, as Spark's source gives it: 0 CreateTime,
    1 LogAppendTime, -1 none (confluent-kafka numbers them one higher)."""
    n = len(msgs)
    keys = [m.key() for m in msgs]
    values = [m.value() for m in msgs]
    stamped = [m.timestamp() for m in msgs]
    first, last = msgs[0].offset(), msgs[-1].offset()
    offsets = array("q", range(first, last + 1) if last - first + 1 == n else [m.offset() for m in msgs])
    ms = pa.array([s[1] for s in stamped], pa.int64())
    if pc.min(ms).as_py() < 0:  # TIMESTAMP_NOT_AVAILABLE (-1) becomes null
        ms = pc.if_else(pc.less(ms, pa.scalar(0, pa.int64())), pa.scalar(None, pa.int64()), ms)
    kinds = pc.subtract(pa.array([s[0] for s in stamped], pa.int32()), pa.scalar(1, pa.int32()))
    columns: list[Any] = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
        pc.multiply(ms, 1000).cast(_TS_TYPE),
        kinds,
    ]
    if not headers:
        return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
    found = [m.headers() for m in msgs]
    if found.count(None) == n:
        columns.append(pa.nulls(n, _HEADERS_TYPE))
    else:
        columns.append(
            pa.array([None if h is None else [{"key": k, "value": v} for k, v in h] for h in found], _HEADERS_TYPE)
        )
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA_WITH_HEADERS)


def read_task(
    ranges: Sequence[OffsetRange],
    conf: Mapping[str, object],
    *,
    batch_size: int,
    fail_on_data_loss: bool,
    poll_timeout_s: float,
    include_headers: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Messages [start, end) of each range (distinct partitions, one bootstrap) as Arrow batches of up
    to `batch_size` rows, through one consumer assigned to all of them at once.

    A range stops at the first offset >= end (compacted logs and transaction markers leave gaps), at
    an end-of-partition event at or after end, or when its data is gone (failOnDataLoss). A range
    that makes no progress for `poll_timeout_s` while its offsets exist fails the task.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    if not ranges:
        return
    keys = [r.key for r in ranges]
    if len(set(keys)) != len(keys) or len({r.bootstrap for r in ranges}) != 1:
        raise ValueError(f"one task reads distinct partitions through one bootstrap, not {ranges}")
    began = time.perf_counter()
    by_key = {r.key: r for r in ranges}
    pos = {r.key: r.start for r in ranges}
    progress_at = dict.fromkeys(keys, time.monotonic())
    reading = {r.key for r in ranges if r.start < r.end}
    only = keys[0] if len(keys) == 1 else None
    consumer = Consumer({"logger": _LIBRDKAFKA_LOG, **conf, "bootstrap.servers": ranges[0].bootstrap})
    # Typed as consumed messages (offset() an int): offsets are read only once errors are set apart.
    consume = cast("Callable[[int, float], list[Message]]", consumer.consume)
    first_at: float | None = None

    # Where the consumer last found a range's log ending below the range's end. It has then handed us
    # every message below that offset: what lies between our position and it are transaction markers
    # or aborted records, never rows, so a timeout judges truncation from there (a log truncated to
    # end in a marker is otherwise "unavailable" for ever). Forgotten when positions are re-assigned.
    eof_at: dict[Key, int] = {}

    def assign() -> None:  # every unfinished range at its position; also after an offset reset
        eof_at.clear()
        consumer.assign([TopicPartition(k[0], k[1], pos[k]) for k in sorted(reading)])

    def finish(key: Key) -> None:
        reading.discard(key)
        consumer.pause([TopicPartition(key[0], key[1])])  # no more fetching past its end

    try:
        assign()
        while reading:
            msgs = take(consume, min(batch_size, sum(by_key[k].end - pos[k] for k in reading)), 1.0)
            now = time.monotonic()
            if msgs and first_at is None:
                first_at = time.perf_counter()
            events = [m for m in msgs if m.error() is not None]
            if events:
                msgs = [m for m in msgs if m.error() is None]
            for key, run in _runs(msgs, only).items():
                if key not in reading:
                    continue
                part, at = by_key[key], pos[key]
                if run[0].offset() < at:  # never a message before the range (or one read already)
                    run = [m for m in run if m.offset() >= at]
                    if not run:
                        continue
                past_end = run[-1].offset() >= part.end
                if past_end:
                    run = run[: bisect_left([m.offset() for m in run], part.end)]
                progress_at[key] = now
                if run:
                    pos[key] = run[-1].offset() + 1
                    handed = time.monotonic()
                    yield to_record_batch(run, part.topic, part.partition, headers=include_headers)
                    # Time Spark spends on the batch downstream is no range's idle time.
                    suspended = time.monotonic() - handed
                    for other in reading:
                        progress_at[other] += suspended
                if past_end or pos[key] >= part.end:
                    finish(key)
            # Events after the messages: an end-of-partition event queued behind a range's last
            # messages in this same call ends the range only once they are read.
            reset = False
            for event in events:
                key = (event.topic(), event.partition())
                target = by_key.get(key)
                if target is None:  # a client-wide error (all brokers down): no position moves
                    _transient_or_raise(event, f"{_describe(ranges)} from {ranges[0].bootstrap}")
                    continue
                if key not in reading:
                    continue
                error = event.error()
                if error is not None and error.code() == _EOF and event.offset() < target.end:
                    eof_at[key] = event.offset()
                moved, reposition = _handle_event(consumer, target, event, pos[key], fail_on_data_loss)
                reset |= reposition
                if moved != pos[key]:  # the range ended here, or an offset reset moved it on
                    pos[key], progress_at[key] = moved, now
                if moved >= target.end:
                    finish(key)
            if reset:
                assign()
            for key in sorted(k for k in reading if now - progress_at[k] > poll_timeout_s):
                part = by_key[key]
                read_to = max(pos[key], eof_at.get(key, pos[key]))
                if not _log_ends_before(consumer, part, read_to, poll_timeout_s, fail_on_data_loss):
                    raise FetchTimeoutError(
                        f"{part.topic}-{part.partition}: no message at offset {pos[key]} within "
                        f"{poll_timeout_s:g}s (range [{part.start}, {part.end}) from {part.bootstrap}); the "
                        f"partition is unavailable. The task fails so that Spark retries it; raise "
                        f"pollTimeoutMs to wait longer"
                    )
                finish(key)
    except KafkaException as exc:
        raise KafkaReadFailed(f"reading {_describe(ranges)} from {ranges[0].bootstrap}: {exc}") from exc
    finally:
        consumer.close()
        if phase_timings.enabled():
            first_ms = None if first_at is None else round((first_at - began) * 1000.0, 3)
            rows = sum(r.size for r in ranges)
            phase_timings.record(
                "read_task", time.perf_counter() - began, first_ms=first_ms, rows=rows, ranges=len(ranges)
            )


def take(consume: Callable[[int, float], list[Message]], count: int, wait_s: float) -> list[Message]:
    """Up to `count` messages and events: what the consumer holds now, else the first to arrive
    within `wait_s` and what came with it. Never a wait for the whole count: offsets of a range
    are not all messages (transaction markers, compacted gaps), so a count of offsets can remain
    unmet until the timeout while the end-of-partition event that ends the range is queued."""
    got = consume(count, 0)
    if got or wait_s <= 0:
        return got
    got = consume(1, wait_s)
    if got and count > 1:
        got += consume(count - 1, 0)
    return got


def _runs(msgs: list[Message], only: Key | None) -> dict[Key, list[Message]]:
    """Messages by partition, in order; a task of one range skips the per-message lookup."""
    if only is not None:
        return {only: msgs} if msgs else {}
    runs: dict[Key, list[Message]] = {}
    for m in msgs:
        runs.setdefault((m.topic(), m.partition()), []).append(m)
    return runs


def _describe(ranges: Sequence[OffsetRange]) -> str:
    return ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in ranges)


def _handle_event(
    consumer: Consumer, part: OffsetRange, event: Any, pos: int, fail_on_data_loss: bool
) -> tuple[int, bool]:
    """(new position, whether the partition must be re-assigned there); >= part.end: the range is finished."""
    from confluent_kafka import TopicPartition

    code = event.error().code()
    if code == _EOF:
        # The log ends here; at or past our end the range is complete, below it we keep waiting.
        return (part.end if event.offset() >= part.end else pos), False
    if code == _RESET:  # our offset is out of range: retention deleted it, or the log was truncated
        if event.offset() >= 0 and event.offset() != pos:
            return pos, False  # about an offset we have since moved from: the fetch at pos stands
        low, high = consumer.get_watermark_offsets(TopicPartition(part.topic, part.partition), timeout=30)
        if low <= pos < high:
            return pos, True  # the offset exists (again): fetch it, nothing is skipped
        message = (
            f"{part.topic}-{part.partition}: offset {pos} is out of range; the log holds "
            f"[{low}, {high}) (range [{part.start}, {part.end}))"
        )
        if fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to skip lost offsets.")
        if pos >= high or low >= part.end:
            log.warning("%s; skipping the rest of the range (failOnDataLoss=false)", message)
            return part.end, False
        log.warning("%s; continuing from %d (failOnDataLoss=false)", message, low)
        return low, True
    _transient_or_raise(event, f"{part.topic}-{part.partition}")
    return pos, False


def _transient_or_raise(event: Any, where: str) -> None:
    """Reconnection noise is logged and waited out (pollTimeoutMs bounds the wait); the rest raises."""
    from confluent_kafka import KafkaException

    code = event.error().code()
    if event.error().fatal() or not (event.error().retriable() or code in TRANSIENT_CODES):
        raise KafkaReadFailed(f"reading {where}: {event.error()}") from KafkaException(event.error())
    log.warning("%s: %s (retrying)", where, event.error())


def _log_ends_before(
    consumer: Consumer, part: OffsetRange, pos: int, timeout_s: float, fail_on_data_loss: bool
) -> bool:
    """After a fruitless wait: True if the log now ends at or before `pos` (offsets of the range were
    truncated away: data loss, raised or skipped as failOnDataLoss says); False if the partition
    could not be asked or still holds offsets past `pos` (unavailable, not lost)."""
    from confluent_kafka import KafkaException, TopicPartition

    try:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(part.topic, part.partition), timeout=min(timeout_s, 30.0)
        )
    except KafkaException:
        return False
    if high > pos:
        return False
    message = (
        f"{part.topic}-{part.partition}: the log now ends at {high}, before offset {pos} "
        f"(range [{part.start}, {part.end})): offsets up to {part.end} were truncated away"
    )
    if fail_on_data_loss:
        raise DataLossError(message + ". Set failOnDataLoss=false to skip them.")
    log.warning("%s; skipping the rest of the range (failOnDataLoss=false)", message)
    return True


class RangeReading:
    """Executor side, shared by both readers: a pickled copy reads one ReadTask per Spark task."""

    opts: SourceOptions
    _reader_conf: dict[str, object]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ReadTask):
            return iter(())  # Spark's single placeholder task when there is nothing to read
        return read_task(
            partition.ranges,
            self._reader_conf,
            batch_size=self.opts.batch_size,
            fail_on_data_loss=self.opts.fail_on_data_loss,
            poll_timeout_s=self.opts.poll_timeout_ms / 1000.0,
            include_headers=self.opts.include_headers,
        )

    def _tasks(
        self, ranges: list[tuple[Key, int, int]], bootstrap: str, epochs: dict[str, int | None]
    ) -> list[ReadTask]:
        cap = self.opts.max_records_per_partition
        parts = split(ranges, bootstrap, self.opts.min_partitions, epochs, cap)
        # maxRecordsPerPartition caps a task's rows, as in Spark's source: no packing of ranges then
        return pack(parts, 0 if cap else self.opts.rows_per_task, self.opts.min_partitions)
