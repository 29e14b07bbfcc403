"""Driver-side ListOffsets lookups: log start/end and offsets for timestamps, per partition, retried on broker trouble as Spark does."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from zkconsumer.errors import ZkConsumerError
from zkconsumer.errors import describe as describe_error
from zkconsumer.spark import by_time
from zkconsumer.spark.broker_trouble import Answers, names
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
    """A batch read's lookup left partitions unanswered after every attempt (fetchOffset.numRetries):
    broker trouble that passes (a restart, a leader election); the read fails naming them. (A
    stream plans the rest and counts each partition's trouble: broker_trouble.TroubleClock.)"""

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
    """Log start/end offsets and offsets for times through one AdminClient, for driver-side planning.

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
        self._attempts_n = max(1, attempts)
        self._interval_s = interval_s
        self._sleep = sleep

    def spans(self, keys: Iterable[Key]) -> Answers[tuple[int, int]]:
        """key -> (log start, log end) where log end is the last stable offset when reading committed,
        for each partition the brokers answered; the others (broker trouble after every attempt) in
        `trouble`. Raises OffsetLookupFailed at once on an error no retry fixes."""

        def ask(keys: list[Key], alone: bool) -> tuple[dict[Key, tuple[int, int]], dict[Key, BaseException]]:
            low, low_errors = self._ask_all(keys, alone, lambda _k: _earliest(), least=0)
            high, high_errors = self._ask_all(keys, alone, lambda _k: _latest(), least=0)
            errors = {**high_errors, **low_errors}
            return {k: (low[k], high[k]) for k in keys if k in low and k in high}, errors

        return self._retried(keys, ask, "the log offsets")

    def times(self, times: Mapping[Key, int]) -> Answers[int]:
        """key -> offset of the first message whose timestamp is >= the key's time (-1: none), for
        each partition answered; broker trouble as `spans`."""

        def ask(keys: list[Key], alone: bool) -> tuple[dict[Key, int], dict[Key, BaseException]]:
            return self._ask_all(keys, alone, lambda k: _at_time(times[k]), least=by_time.NOT_FOUND)

        return self._retried(times, ask, "the offsets for timestamps")

    def _retried(self, keys: Iterable[Key], ask: Callable[[list[Key], bool], Any], what: str) -> Answers[Any]:
        """`attempts` tries, `interval_s` apart, of the partitions still unanswered: the first asks
        for all at once, later ones each partition on its own, so one partition without a leader
        (or a request-wide error) does not hide the others' answers."""
        pending = sorted(set(keys))
        found: dict[Key, Any] = {}
        errors: dict[Key, BaseException] = {}
        for attempt in range(1, self._attempts_n + 1):
            if not pending:
                break
            if self._stale and self._admin is not None:
                self._admin = self._factory(self._config)  # the old one's threads end with its last reference
            answered, errors = ask(pending, attempt > 1)
            found.update(answered)
            self._stale = bool(errors)
            fatal = sorted(k for k, e in errors.items() if not transient(e))
            if fatal:
                raise OffsetLookupFailed(
                    f"listing {what} of {names(fatal)} from {self.bootstrap} failed: "
                    f"{describe_error(errors[fatal[0]])} (not broker trouble that passes: not retried)"
                ) from errors[fatal[0]]
            pending = sorted(errors)
            if pending and attempt < self._attempts_n:
                log.warning(
                    "attempt %d of %d to list %s of %s failed (%s); again in %.1f s",
                    attempt,
                    self._attempts_n,
                    what,
                    names(pending),
                    describe_error(errors[pending[0]]),
                    self._interval_s,
                )
                self._sleep(self._interval_s)
        return Answers(found, {k: describe_error(errors[k]) for k in pending})

    def _ask_all(
        self, keys: list[Key], alone: bool, spec: Callable[[Key], Any], *, least: int
    ) -> tuple[dict[Key, int], dict[Key, BaseException]]:
        """One ListOffsets request for `keys` (or one each, `alone`), every answer collected on its
        own: a partition's error fails that partition only. An answer below `least` is no answer:
        librdkafka answers -1001 (OFFSET_INVALID), without an error, for a partition whose every
        replica is offline (seen with its only broker down)."""
        from confluent_kafka import IsolationLevel, TopicPartition

        if self._admin is None:
            raise OffsetLookupFailed(f"LogOffsets({self.bootstrap}) is closed")
        level = IsolationLevel.READ_COMMITTED if self._committed else IsolationLevel.READ_UNCOMMITTED
        groups = [[k] for k in keys] if alone else [keys]
        futures: dict[Key, Any] = {}
        errors: dict[Key, BaseException] = {}
        for group in groups:
            try:
                asked = self._admin.list_offsets(
                    {TopicPartition(t, p): spec((t, p)) for t, p in group},
                    isolation_level=level,
                    request_timeout=self._timeout_s,
                )
            except Exception as exc:  # noqa: BLE001 - the request's error is each partition's
                errors.update(dict.fromkeys(group, exc))
                continue
            futures.update({(tp.topic, tp.partition): fut for tp, fut in asked.items()})
        found: dict[Key, int] = {}
        try:
            for key, fut in futures.items():
                try:
                    offset = fut.result(self._timeout_s).offset
                except Exception as exc:  # noqa: BLE001 - classified by the caller
                    errors[key] = exc
                    continue
                if offset < least:
                    errors[key] = KafkaException(
                        KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"no offset answered ({offset}): no leader?")
                    )
                else:
                    found[key] = offset
        finally:
            self._admin.poll(0)  # hands librdkafka's queued log lines to the logger
        return found, errors

    def close(self) -> None:
        self._admin = None


def _earliest() -> Any:
    from confluent_kafka.admin import OffsetSpec

    return OffsetSpec.earliest()


def _latest() -> Any:
    from confluent_kafka.admin import OffsetSpec

    return OffsetSpec.latest()


def _at_time(ms: int) -> Any:
    from confluent_kafka.admin import OffsetSpec

    return OffsetSpec.for_timestamp(ms)


def log_offsets(opts: SourceOptions, bootstrap: str) -> LogOffsets:
    """A LogOffsets with the source's isolation level, security settings and fetchOffset.* retries."""
    return LogOffsets(
        bootstrap,
        read_committed=opts.isolation_committed(),
        client_config=opts.client_security(),
        attempts=opts.fetch_offset_attempts,
        interval_s=opts.fetch_offset_interval_ms / 1000.0,
    )


def explicit_starts_for(opts: SourceOptions, keys: Iterable[Key], lookup: by_time.Lookup) -> Answers[int]:
    """startingOffsets' entries with startingTimestamp / startingOffsetsByTimestamp resolved over
    them (`lookup`, LogOffsets.times, runs only when a time applies to one of `keys`); partitions
    whose time the brokers did not answer are in `trouble`."""
    return by_time.explicit_starts(
        opts.starting_explicit,
        keys,
        opts.starting_time,
        opts.starting_by_time,
        opts.starting_time_strategy,
        lookup,
    )


def explicit_ends_for(opts: SourceOptions, keys: Iterable[Key], lookup: by_time.Lookup) -> Answers[int]:
    """endingOffsets' entries with endingTimestamp / endingOffsetsByTimestamp resolved over them."""
    return by_time.explicit_ends(opts.ending_explicit, keys, opts.ending_time, opts.ending_by_time, lookup)


def all_answered(answers: Answers[Any], bootstrap: str) -> dict[Key, Any]:
    """A batch read plans every partition or none: broker trouble left after every attempt raises
    OffsetsUnavailable naming the partitions and the last error."""
    if answers.trouble:
        first = sorted(answers.trouble)[0]
        raise OffsetsUnavailable(
            f"the brokers ({bootstrap}) did not answer for {names(answers.trouble)} after every "
            f"fetchOffset.numRetries attempt: {answers.trouble[first]}"
        )
    return answers.found
