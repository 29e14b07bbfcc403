"""The fetcher's librdkafka errors: fatal ones end fetching, the rest are warned about at a bounded rate."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Message as KafkaMessage

from zkconsumer.consumer.offset_reset import _DOWN
from zkconsumer.errors import BrokersUnavailable

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

_WARN_EVERY = 30.0  # rate limit of repeated warnings (per error code)


class FetchErrors:
    """Fetcher's error half (a base of zkconsumer.fetcher.Fetcher; runs where the Consumer is called)."""

    # Set by Fetcher.__init__.
    name: str
    _warned: dict[object, list[float]]
    _connection_error: tuple[float, str] | None

    if TYPE_CHECKING:

        def _reset_out_of_range(self, key: tuple[str, int], offset: int | None) -> None: ...

    def _on_message_error(self, m: KafkaMessage) -> None:
        err = m.error()
        assert err is not None  # split_runs made it a run of its own
        if err.fatal():
            raise KafkaException(err)
        topic, partition = m.topic(), m.partition()
        if err.code() == KafkaError._AUTO_OFFSET_RESET and topic is not None:
            if partition is not None:  # None: no partition of ours, which _reset_out_of_range ignores
                self._reset_out_of_range((topic, partition), m.offset())
        elif err.code() != KafkaError._PARTITION_EOF:
            where = f"{m.topic()}-{m.partition()}: " if m.topic() is not None else ""
            self._warn(err.code(), "%s: %s%s", self.name, where, err)

    def _on_client_error(self, err: KafkaError) -> None:
        """librdkafka error_cb, served inside consume() on the fetcher thread."""
        if err.fatal():
            raise KafkaException(err)  # re-raised by consume(): ends the thread
        if err.code() != KafkaError._ALL_BROKERS_DOWN:
            self._connection_error = (time.monotonic(), err.str())
        self._warn(err.code(), "%s: %s (librdkafka retries)", self.name, err)

    def explain(self, exc: KafkaException) -> BaseException:
        """A request that failed because no broker is reachable, as a BrokersUnavailable that names
        the connection error behind it (a TLS handshake or SASL failure says what to fix; "all
        broker connections are down" does not). Any other error is returned unchanged."""
        err, known = exc.args[0] if exc.args else None, self._connection_error
        if (
            not isinstance(err, KafkaError)
            or err.code() not in _DOWN
            or known is None
            or time.monotonic() - known[0] > _WARN_EVERY
        ):
            return exc
        return BrokersUnavailable(f"{err.str()}; the last broker connection error was: {known[1]}")

    def _warn(self, what: object, msg: str, *args: object) -> None:
        now, seen = time.monotonic(), self._warned.get(what)
        if seen and now - seen[0] < _WARN_EVERY:
            seen[1] += 1
        else:
            log.warning("%s%s", msg % args, f" ({seen[1]:.0f} more since)" if seen and seen[1] else "")
            self._warned[what] = [now, 0]
