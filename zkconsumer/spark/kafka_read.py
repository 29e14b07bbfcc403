"""Kafka I/O: executor reads of exact offset ranges into Arrow batches; driver-side log offset lookups."""

from __future__ import annotations

import logging
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc
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
from zkconsumer.spark import phase_timings
from zkconsumer.spark.consumer_pool import POOL, pool_key
from zkconsumer.spark.offsets import DataLossError, Key, OffsetRange

if TYPE_CHECKING:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    from zkconsumer.consumer.chunks import Message

log = logging.getLogger(__name__)
# librdkafka's own log lines (served by consume/poll), through Python logging instead of raw to stderr
_LIBRDKAFKA_LOG = throttled_logger(f"{__name__}.librdkafka")

SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField(
            "headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
        ),
    ]
)
# Spark checks returned batches against exactly this schema (pa.Schema.equals).
ARROW_SCHEMA = to_arrow_schema(SCHEMA, timezone="UTC")
_TS_TYPE = ARROW_SCHEMA.field("timestamp").type
_HEADERS_TYPE = ARROW_SCHEMA.field("headers").type
_EOF, _RESET = -191, -140  # KafkaError._PARTITION_EOF, KafkaError._AUTO_OFFSET_RESET
# What librdkafka reports while it reconnects by itself (a broker restarting, a leader moving):
# _TRANSPORT, _ALL_BROKERS_DOWN, _RESOLVE, _TIMED_OUT, LEADER_NOT_AVAILABLE,
# NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT, NETWORK_EXCEPTION. confluent-kafka marks every
# per-message error retriable() == False, these included: pollTimeoutMs bounds the wait instead.
TRANSIENT_CODES = frozenset({-195, -187, -193, -185, 5, 6, 7, 13})


class FetchTimeoutError(RuntimeError):
    """A range made no progress for pollTimeoutMs while its offsets should exist: the partition is
    unavailable. The task fails (Spark retries it) whatever failOnDataLoss says: nothing is lost."""


def to_record_batch(msgs: list[Any], topic: str, partition: int) -> pa.RecordBatch:
    """Column lists straight from the Message objects (one C call per field), then Arrow arrays:
    no per-row Python tuples. Offsets of a gap-free run are generated instead of collected."""
    n = len(msgs)
    keys = [m.key() for m in msgs]
    values = [m.value() for m in msgs]
    stamps = [m.timestamp()[1] for m in msgs]
    headers = [m.headers() for m in msgs]
    first, last = msgs[0].offset(), msgs[-1].offset()
    offsets = array("q", range(first, last + 1) if last - first + 1 == n else [m.offset() for m in msgs])
    ms = pa.array(stamps, pa.int64())
    if pc.min(ms).as_py() < 0:  # TIMESTAMP_NOT_AVAILABLE (-1) becomes null
        ms = pc.if_else(pc.less(ms, pa.scalar(0, pa.int64())), pa.scalar(None, pa.int64()), ms)
    if headers.count(None) == n:
        header_array = pa.nulls(n, _HEADERS_TYPE)
    else:
        header_array = pa.array(
            [None if h is None else [{"key": k, "value": v} for k, v in h] for h in headers], _HEADERS_TYPE
        )
    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
            pc.multiply(ms, 1000).cast(_TS_TYPE),
            header_array,
        ],
        schema=ARROW_SCHEMA,
    )


def read_range(
    part: OffsetRange,
    conf: Mapping[str, object],
    *,
    batch_size: int,
    fail_on_data_loss: bool,
    poll_timeout_s: float,
    reuse: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Messages [part.start, part.end) of one partition as Arrow batches of up to `batch_size` rows.

    Stops at the first offset >= end (compacted logs and transaction markers leave gaps), at an
    end-of-partition event at or after end, or when the range's data is gone (failOnDataLoss).
    With `reuse`, the consumer comes from this process's pool and goes back to it when the read
    ends cleanly (consumer_pool.py); a consumer that already stands at `start` is not re-assigned.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    began = time.perf_counter()
    settings = {**conf, "bootstrap.servers": part.bootstrap}
    key = pool_key(settings, part.topic, part.partition, part.epoch)
    consumer, standing_at = POOL.take(key) if reuse else (None, None)
    reused = consumer is not None
    here = [TopicPartition(part.topic, part.partition)]
    if consumer is None:
        consumer = Consumer({"logger": _LIBRDKAFKA_LOG, **settings})
    # Typed as consumed messages (offset() an int): offsets are read only once errors are set apart.
    consume = cast("Callable[[int, float], list[Message]]", consumer.consume)
    pulled = part.start  # the offset the consumer returns next, as far as this read knows
    clean = False
    first_at: float | None = None
    try:
        if reused:
            consumer.resume(here)  # paused while idle: see the give-back below
        if standing_at != part.start:
            consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
        pos = part.start
        last_progress = time.monotonic()
        while pos < part.end:
            msgs = consume(min(batch_size, part.end - pos), 1.0)
            if msgs:
                if first_at is None:
                    first_at = time.perf_counter()
                events = [m for m in msgs if m.error() is not None]
                if events:
                    msgs = [m for m in msgs if m.error() is None]
                    for event in events:
                        pos = _handle_event(consumer, part, event, pos, fail_on_data_loss)
                    pulled = -1  # an event may have moved it (a reset): re-assign next time
            if msgs and msgs[0].offset() < pos:  # never a message before the range (or one read already)
                msgs = [m for m in msgs if m.offset() >= pos]
                pulled = -1
            if msgs:
                last = msgs[-1].offset()
                if pulled >= 0:
                    pulled = last + 1
                if last >= part.end:
                    msgs = msgs[: bisect_left([m.offset() for m in msgs], part.end)]
                if msgs:
                    yield to_record_batch(msgs, part.topic, part.partition)
                    pos = max(pos, msgs[-1].offset() + 1)
                if last >= part.end:
                    break
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > poll_timeout_s:
                if not _log_ends_before(consumer, part, pos, poll_timeout_s, fail_on_data_loss):
                    raise FetchTimeoutError(
                        f"{part.topic}-{part.partition}: no message at offset {pos} within {poll_timeout_s:.0f}s "
                        f"(range [{part.start}, {part.end}) from {part.bootstrap}); the partition is "
                        f"unavailable. The task fails so that Spark retries it; raise pollTimeoutMs to wait longer"
                    )
                break
        clean = True
    except KafkaException as exc:
        raise RuntimeError(
            f"reading {part.topic}-{part.partition} [{part.start}, {part.end}) from {part.bootstrap}: {exc}"
        ) from exc
    finally:
        if reuse and clean:
            # Paused while idle: librdkafka otherwise goes on fetching for an idle consumer (up to
            # queued.min.messages), and a pool of them kept the broker and the executor's cores busy
            # between batches: p50 latency 4.8 s against 2.0 s with a new consumer per task. A Java
            # consumer fetches only inside poll(). Resuming goes on from the position consumed.
            try:
                consumer.pause(here)
            except Exception:  # noqa: BLE001 - a consumer that cannot pause is not kept
                clean = False
            else:
                POOL.give_back(key, consumer, pulled if pulled >= 0 else None)
        if not (reuse and clean):
            consumer.close()  # a read cut short (an error, the task killed) leaves nothing to trust
        if phase_timings.enabled():
            first_ms = None if first_at is None else round((first_at - began) * 1000.0, 3)
            phase_timings.record(
                "read_range", time.perf_counter() - began, reused=reused, first_ms=first_ms, rows=part.end - part.start
            )


def _handle_event(consumer: Consumer, part: OffsetRange, event: Any, pos: int, fail_on_data_loss: bool) -> int:
    """Returns the new position; >= part.end means the range is finished."""
    from confluent_kafka import KafkaException, TopicPartition

    code = event.error().code()
    if code == _EOF:
        # The log ends here; at or past our end the range is complete, below it we keep waiting.
        return part.end if event.offset() >= part.end else pos
    if code == _RESET:  # our offset is out of range: retention deleted it, or the log was truncated
        low, high = consumer.get_watermark_offsets(TopicPartition(part.topic, part.partition), timeout=30)
        message = (
            f"{part.topic}-{part.partition}: offset {pos} is out of range; the log holds "
            f"[{low}, {high}) (range [{part.start}, {part.end}))"
        )
        if fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to skip lost offsets.")
        log.warning("%s; continuing from %d (failOnDataLoss=false)", message, low)
        if low <= pos or low >= part.end:
            return part.end
        consumer.assign([TopicPartition(part.topic, part.partition, low)])
        return low
    if event.error().fatal() or not (event.error().retriable() or code in TRANSIENT_CODES):
        raise KafkaException(event.error())
    log.warning("%s-%d: %s (retrying)", part.topic, part.partition, event.error())
    return pos


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


class LogOffsets:
    """Log start/end offsets through one AdminClient (batched ListOffsets), for driver-side planning."""

    def __init__(
        self,
        bootstrap: str,
        *,
        read_committed: bool,
        client_config: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        # confluent-kafka's hints omit the logger setting's type (a logging.Logger)
        config: dict[str, Any] = {"logger": _LIBRDKAFKA_LOG, **(client_config or {}), "bootstrap.servers": bootstrap}
        self._admin: AdminClient | None = AdminClient(config)
        self._committed = read_committed
        self._timeout_s = timeout_s

    def spans(self, keys: Iterable[Key]) -> dict[Key, tuple[int, int]]:
        """key -> (log start, log end) where log end is the last stable offset when reading committed.
        Both lists are asked for at once (one round trip to the brokers, not two, per planning call)."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        lows, highs = self._ask(keys, earliest=True), self._ask(keys, earliest=False)
        try:
            low, high = self._answers(lows), self._answers(highs)
        finally:
            if self._admin is not None:
                self._admin.poll(0)  # hands librdkafka's queued log lines to the logger
        return {k: (low[k], high[k]) for k in keys}

    def _ask(self, keys: list[Key], *, earliest: bool) -> dict[Any, Any]:
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
        level = IsolationLevel.READ_COMMITTED if self._committed else IsolationLevel.READ_UNCOMMITTED
        if self._admin is None:
            raise RuntimeError(f"LogOffsets({self.bootstrap}) is closed")
        futures: dict[Any, Any] = self._admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in keys}, isolation_level=level, request_timeout=self._timeout_s
        )
        return futures

    def _answers(self, futures: Mapping[Any, Any]) -> dict[Key, int]:
        return {(tp.topic, tp.partition): fut.result(self._timeout_s).offset for tp, fut in futures.items()}

    def close(self) -> None:
        self._admin = None
