"""OffsetResets: the fetcher's auto.offset.reset policy, where a partition without a valid offset, or out of range, starts (from its log bounds)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.consumer.fetcher.kafka_consumer import BROKERS_DOWN
from zkconsumer.consumer.fetcher.routing import ChunkRouter
from zkconsumer.consumer.fetcher.settings import FetchSettings

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

Key = tuple[str, int]


class OffsetResets:
    """auto.offset.reset for a fetcher: the start of a partition with no committed offset, and the
    move of one whose offset is out of range (on the holder of the fetcher's turn, with the
    Consumer of the moment). `warn` is the fetcher's rate-limited warning (FetchErrors.warn)."""

    def __init__(self, settings: FetchSettings, router: ChunkRouter, warn: Callable[..., None]) -> None:
        self.policy = settings.auto_offset_reset
        self.timeout = max(settings.socket_timeout_ms, 1000) / 1000  # seconds: a request's bound
        self._router = router
        self._warn = warn

    def resolve(self, consumer: Consumer, infos: Sequence[PartitionTopicInfo]) -> None:
        """No committed offset (-1): start at the log start or end per auto.offset.reset."""
        policy = self.policy
        for info in infos:
            if info.fetched_offset < 0:
                low, high = self._watermarks(consumer, info.key)
                start = low if policy == "smallest" else high
                # committed_offset stays -1, so the next commit persists the reset (as Scala does)
                info.fetched_offset = info.consumed_offset = start
                log.info(
                    "%s-%d: no committed offset, starting at %d (auto.offset.reset=%s)",
                    info.topic,
                    info.partition,
                    start,
                    policy,
                )

    def _watermarks(self, consumer: Consumer, key: Key) -> tuple[int, int]:
        try:
            return watermarks(consumer, key, self.timeout)
        except KafkaException as exc:
            if exc.args and exc.args[0].code() in BROKERS_DOWN and not consumer.assignment():
                # librdkafka hands its connection errors to error_cb only inside poll/consume, which
                # has not run yet on a first assignment: serve them now (nothing assigned, so no
                # message can come back), so the error names why the brokers are down.
                consumer.poll(0)
            raise

    def reset_out_of_range(self, consumer: Consumer, key: Key, offset: int | None) -> None:
        """OFFSET_OUT_OF_RANGE: move fetched and consumed offset to the log start or end."""
        info = self._router.infos.get(key)
        if info is None or not info.active:
            return
        policy = self.policy
        try:
            low, high = self._watermarks(consumer, key)
        except KafkaException as exc:  # fetch again from where we were: the error comes back
            self._warn(
                ("reset", key), "%s-%d: offset %s out of range; watermarks failed (%s), retrying", *key, offset, exc
            )
            new = info.fetched_offset
        else:
            if low <= info.fetched_offset <= high:
                # Our own position is in range, so the error is about a position that is not ours:
                # an earlier assignment of this partition (a deleted topic's incarnation, say) whose
                # error librdkafka delivered late. Resetting would deliver the record's messages twice.
                new = info.fetched_offset
                log.info(
                    "%s-%d: out-of-range error for offset %s ignored: fetching continues at %d, inside [%d, %d]",
                    *key,
                    offset,
                    new,
                    low,
                    high,
                )
            else:
                new = low if policy == "smallest" else high
                log.warning(
                    "%s-%d: offset %s out of range [%d, %d); reset fetched and consumed offset to %d "
                    "(auto.offset.reset=%s): messages may be lost or repeated",
                    *key,
                    info.fetched_offset,
                    low,
                    high,
                    new,
                    policy,
                )
                info.fetched_offset = info.consumed_offset = new
        self._router.forget([key], consumer)
        # seek() fails with _STATE here (librdkafka stopped the partition): re-add it instead
        consumer.incremental_unassign([TopicPartition(*key)])
        consumer.incremental_assign([TopicPartition(key[0], key[1], new)])


def watermarks(consumer: Consumer, key: Key, timeout_s: float) -> tuple[int, int]:
    """(low, high); raises KafkaException (a timeout included) when the broker does not answer."""
    try:
        marks = consumer.get_watermark_offsets(TopicPartition(*key), timeout=timeout_s)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION:
            raise
        # A partition added after librdkafka cached the topic: refresh its metadata once.
        consumer.list_topics(key[0], timeout=timeout_s)
        try:
            marks = consumer.get_watermark_offsets(TopicPartition(*key), timeout=timeout_s)
        except KafkaException as again:
            if again.args[0].code() != KafkaError._UNKNOWN_PARTITION:
                raise
            raise KafkaException(
                KafkaError(KafkaError._UNKNOWN_PARTITION, f"{key[0]}-{key[1]}: the brokers do not know this partition")
            ) from again
    if marks is None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"watermarks of {key[0]}-{key[1]}"))
    return marks
