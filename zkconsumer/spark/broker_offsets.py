"""Driver-side ListOffsets lookups: log start/end (batched, retried on broker trouble as Spark does), offsets for timestamps."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from zkconsumer.errors import ZkConsumerError
from zkconsumer.errors import describe as describe_error
from zkconsumer.spark import by_time
from zkconsumer.spark.kafka_read import _LIBRDKAFKA_LOG, TRANSIENT_CODES
from zkconsumer.spark.offsets import Key
from zkconsumer.spark.options import SourceOptions

log = logging.getLogger(__name__)

# What a broker answers for a while when it restarts, a leader moves or a topic is new: the
# executor reader's transient codes plus UNKNOWN_TOPIC_OR_PART (leader not known yet),
# BROKER_NOT_AVAILABLE, REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR, OFFSET_NOT_AVAILABLE (a
# leader election still running), FENCED/UNKNOWN_LEADER_EPOCH, librdkafka's _MSG_TIMED_OUT,
# _UNKNOWN_PARTITION/_UNKNOWN_TOPIC (its metadata not refreshed yet) and _NOENT ("Failed to query
# partition leaders: No leaders found", while the restarted broker led every partition asked for).
OFFSET_FETCH_TRANSIENT = TRANSIENT_CODES | frozenset({3, 8, 9, 56, 78, 74, 75, -192, -190, -188, -156})


class OffsetsUnavailable(ZkConsumerError, ConnectionError):
    """The brokers did not answer a log-offset lookup after every attempt (fetchOffset.numRetries):
    broker trouble that passes (a restart, a leader election). The planner plans nothing this trigger."""

    retriable = True


class OffsetLookupFailed(ZkConsumerError, RuntimeError):
    """A log-offset lookup failed with an error no retry fixes (authorization, a bad setting); the
    message names the partitions, the brokers and the cause."""


def transient(exc: BaseException) -> bool:
    """Broker trouble that passes by itself (worth the next attempt), against a setting to fix."""
    if isinstance(exc, TimeoutError):  # a future's result(timeout) ran out
        return True
    if isinstance(exc, KafkaException):
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError):
            return not err.fatal() and (err.code() in OFFSET_FETCH_TRANSIENT or err.retriable())
    return False


class LogOffsets:
    """Log start/end offsets through one AdminClient (batched ListOffsets), for driver-side planning.

    A lookup is tried `attempts` times (Spark's fetchOffset.numRetries counts attempts, not retries
    after the first), `interval_s` apart, while the brokers answer with transient trouble. Each
    retry and each lookup after a failed one starts a new client, as Spark's does: librdkafka keeps
    asking with the leader epochs it cached before a broker restart (FENCED_LEADER_EPOCH on every
    later lookup, seen in a rolling restart) until its metadata happens to refresh.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        read_committed: bool,
        client_config: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        attempts: int = 3,
        interval_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        client_factory: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        # confluent-kafka's hints omit the logger setting's type (a logging.Logger)
        self._config: dict[str, Any] = {
            "logger": _LIBRDKAFKA_LOG,
            **(client_config or {}),
            "bootstrap.servers": bootstrap,
        }
        self._factory = client_factory or AdminClient
        self._admin: Any = self._factory(self._config)
        self._stale = False  # the last lookup failed: the next one starts a new client
        self._committed = read_committed
        self._timeout_s = timeout_s
        self._attempts = max(1, attempts)
        self._interval_s = interval_s
        self._sleep = sleep

    def spans(self, keys: Iterable[Key]) -> dict[Key, tuple[int, int]]:
        """key -> (log start, log end) where log end is the last stable offset when reading committed.

        Raises OffsetsUnavailable (retriable) when every attempt met transient broker trouble, and
        OffsetLookupFailed at once on anything else."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        for attempt in range(1, self._attempts + 1):
            if self._stale and self._admin is not None:
                self._admin = self._factory(self._config)  # the old one's threads end with its last reference
            try:
                spans = self._spans_once(keys)
                self._stale = False
                return spans
            except Exception as exc:  # noqa: BLE001 - classified right here
                self._stale = True
                named = ", ".join(f"{t}-{p}" for t, p in keys[:8]) + (", ..." if len(keys) > 8 else "")
                if not transient(exc):
                    raise OffsetLookupFailed(
                        f"listing the log offsets of {named} from {self.bootstrap} failed: {describe_error(exc)} "
                        "(not broker trouble that passes: not retried)"
                    ) from exc
                if attempt == self._attempts:
                    raise OffsetsUnavailable(
                        f"the brokers ({self.bootstrap}) did not list the log offsets of {named} in "
                        f"{self._attempts} attempts (fetchOffset.numRetries): {describe_error(exc)}"
                    ) from exc
                log.warning(
                    "attempt %d of %d to list log offsets failed (%s); again in %.1f s",
                    attempt,
                    self._attempts,
                    describe_error(exc),
                    self._interval_s,
                )
                self._sleep(self._interval_s)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _spans_once(self, keys: list[Key]) -> dict[Key, tuple[int, int]]:
        """Both lists are asked for at once (one round trip to the brokers, not two)."""
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
            raise OffsetLookupFailed(f"LogOffsets({self.bootstrap}) is closed")
        futures: dict[Any, Any] = self._admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in keys}, isolation_level=level, request_timeout=self._timeout_s
        )
        return futures

    def _answers(self, futures: Mapping[Any, Any]) -> dict[Key, int]:
        return {(tp.topic, tp.partition): fut.result(self._timeout_s).offset for tp, fut in futures.items()}

    def close(self) -> None:
        self._admin = None


def offsets_for_times(opts: SourceOptions, bootstrap: str, times: Mapping[Key, int]) -> dict[Key, int]:
    """key -> offset of the first message whose timestamp is >= the key's time (-1: none), asked
    once for all keys with the reader's isolation level; a broker error raises (the planning call fails)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

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
