"""The brokers' offsets for timestamps (Kafka's offsetsForTimes through ListOffsets), for the planner."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zkconsumer.spark import by_time
from zkconsumer.spark.offsets import Key
from zkconsumer.spark.options import SourceOptions


def offsets_for_times(opts: SourceOptions, bootstrap: str, times: Mapping[Key, int]) -> dict[Key, int]:
    """key -> offset of the first message whose timestamp is >= the key's time (-1: none), asked
    once for all keys with the reader's isolation level; a broker error raises (the planning call fails)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from zkconsumer.spark.kafka_read import _LIBRDKAFKA_LOG

    if not times:
        return {}
    config: dict[str, Any] = {"logger": _LIBRDKAFKA_LOG, **opts.client_security(), "bootstrap.servers": bootstrap}
    admin = AdminClient(config)
    level = IsolationLevel.READ_COMMITTED if opts.isolation_committed() else IsolationLevel.READ_UNCOMMITTED
    futures = admin.list_offsets(
        {TopicPartition(t, p): OffsetSpec.for_timestamp(ts) for (t, p), ts in times.items()},
        isolation_level=level,
        request_timeout=30.0,
    )
    try:
        return {(tp.topic, tp.partition): fut.result(30.0).offset for tp, fut in futures.items()}
    finally:
        admin.poll(0)  # hands librdkafka's queued log lines to the logger


def explicit_starts_for(opts: SourceOptions, keys: Iterable[Key], bootstrap: Callable[[], str]) -> dict[Key, int]:
    """startingOffsets' entries with startingTimestamp / startingOffsetsByTimestamp resolved over them
    (the brokers are asked only when a time applies to one of `keys`)."""
    return by_time.explicit_starts(
        opts.starting_explicit,
        keys,
        opts.starting_time,
        opts.starting_by_time,
        opts.starting_time_strategy,
        lambda times: offsets_for_times(opts, bootstrap(), times),
    )


def explicit_ends_for(opts: SourceOptions, keys: Iterable[Key], bootstrap: Callable[[], str]) -> dict[Key, int]:
    """endingOffsets' entries with endingTimestamp / endingOffsetsByTimestamp resolved over them."""
    return by_time.explicit_ends(
        opts.ending_explicit,
        keys,
        opts.ending_time,
        opts.ending_by_time,
        lambda times: offsets_for_times(opts, bootstrap(), times),
    )
