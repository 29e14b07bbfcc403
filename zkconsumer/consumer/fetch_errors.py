"""FetchErrors: librdkafka's errors sorted: fatal ones end fetching, the rest are warned about at a bounded rate."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Message as KafkaMessage

from zkconsumer.errors import BrokersUnavailable

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

Key = tuple[str, int]

BROKERS_DOWN = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT})  # no broker answered: say why, if known
_WARN_EVERY = 30.0  # rate limit of repeated warnings (per error code)


class FetchErrors:
    """What a fetcher does with librdkafka's errors, and the rate-limited warnings about them.

    Runs where the Consumer is called (the holder of the fetcher's turn), except `explain`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._warned: dict[object, list[float]] = {}
        self._connection_error: tuple[float, str] | None = None  # when and why the brokers were unreachable

    def on_message_error(self, m: KafkaMessage) -> tuple[Key, int | None] | None:
        """An error message from consume(): raises a fatal one (fetching ends), warns about the
        rest; returns (partition, offset) for an offset out of range, which auto.offset.reset handles."""
        err = m.error()
        assert err is not None  # split_runs made it a run of its own
        if err.fatal():
            raise KafkaException(err)
        topic, partition = m.topic(), m.partition()
        if err.code() == KafkaError._AUTO_OFFSET_RESET and topic is not None:
            # partition None: no partition of ours, nothing to reset
            return None if partition is None else ((topic, partition), m.offset())
        if err.code() != KafkaError._PARTITION_EOF:
            where = f"{m.topic()}-{m.partition()}: " if m.topic() is not None else ""
            self.warn(err.code(), "%s: %s%s", self.name, where, err)
        return None

    def on_client_error(self, err: KafkaError) -> None:
        """librdkafka error_cb, served inside consume() on the thread that calls it."""
        if err.fatal():
            raise KafkaException(err)  # re-raised by consume(): ends fetching
        if err.code() != KafkaError._ALL_BROKERS_DOWN:
            self._connection_error = (time.monotonic(), err.str())
        self.warn(err.code(), "%s: %s (librdkafka retries)", self.name, err)

    def explain(self, exc: KafkaException) -> BaseException:
        """A request that failed because no broker is reachable, as a BrokersUnavailable that names
        the connection error behind it (a TLS handshake or SASL failure says what to fix; "all
        broker connections are down" does not). Any other error is returned unchanged."""
        err, known = exc.args[0] if exc.args else None, self._connection_error
        if (
            not isinstance(err, KafkaError)
            or err.code() not in BROKERS_DOWN
            or known is None
            or time.monotonic() - known[0] > _WARN_EVERY
        ):
            return exc
        return BrokersUnavailable(f"{err.str()}; the last broker connection error was: {known[1]}")

    def warn(self, what: object, msg: str, *args: object) -> None:
        """Log a warning, at most once per _WARN_EVERY for `what` (the next one counts those left out)."""
        now, seen = time.monotonic(), self._warned.get(what)
        if seen and now - seen[0] < _WARN_EVERY:
            seen[1] += 1
        else:
            log.warning("%s%s", msg % args, f" ({seen[1]:.0f} more since)" if seen and seen[1] else "")
            self._warned[what] = [now, 0]
