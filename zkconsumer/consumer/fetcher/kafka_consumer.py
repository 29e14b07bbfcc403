"""The fetcher's confluent-kafka Consumer: made, made anew for a re-created topic, closed once (ConsumerHandle); its errors sorted (FetchErrors)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import cast

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import Message as KafkaMessage

from zkconsumer.consumer.chunks import Message, PartitionTopicInfo
from zkconsumer.consumer.fetcher.settings import FetchSettings
from zkconsumer.consumer.fetcher.turns import Turn
from zkconsumer.consumer.log_throttle import throttled_logger
from zkconsumer.errors import BrokersUnavailable
from zkconsumer.zookeeper.deadline import Deadline

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

CLOSE_WAIT = 5.0  # how long a close waits for a reader's fetch to give the Consumer back

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


class ConsumerHandle:
    """The Consumer a Fetcher fetches with (`raw`): its making, its replacement when a topic it
    fetched was re-created, and its one close. Who calls `raw` holds the fetcher's turn (`turn`);
    so does `close`, which therefore waits for a reader's fetch under way, or leaves the close to it.
    """

    def __init__(self, settings: FetchSettings, name: str, errors: FetchErrors, turn: Turn) -> None:
        self.settings = settings
        self.name = name
        self._errors = errors
        self._turn = turn
        self.raw: Consumer = None  # type: ignore[assignment]  # created by open()
        self.closed = False
        self._incarnations: dict[str, int] = {}  # topic -> the epoch (czxid) the Consumer fetched of it

    def open(self) -> None:
        self.raw = self._new()

    def _new(self) -> Consumer:
        conf = self.settings.consumer_config()
        conf.setdefault("error_cb", self._errors.on_client_error)
        conf.setdefault("logger", throttled_logger(f"{log.name}.librdkafka"))
        return Consumer(conf)

    def take(self, count: int, timeout: float) -> list[Message]:
        """Up to `count` messages: those queued now, else the first to come within `timeout` with
        whatever came with it. Who calls it holds the turn. (consume() returns Messages typed with
        Optional topic/partition/offset; the router reads those only after it has set error messages
        apart, so they are taken as chunks.Message.)

        consume(count, timeout) alone waits until `count` messages came or the timeout passed, so at
        a steady rate below `count` per timeout every message waited out most of the timeout (a
        median of ~50 ms at 2,000 msg/s with 0.1 s): poll() returns the first message at once."""
        raw = self.raw
        batch = raw.consume(count, 0)
        if batch or timeout <= 0:
            return cast("list[Message]", batch)
        first = raw.poll(timeout)
        if first is None:
            return []
        return cast("list[Message]", [first, *raw.consume(count - 1, 0)] if count > 1 else [first])

    def renew_for(self, infos: Sequence[PartitionTopicInfo]) -> bool:
        """Fetch a re-created topic with a new Consumer; True when `raw` was replaced (the caller
        fetches its other partitions again from their first message not queued: ChunkRouter.refetch).

        librdkafka keeps what it learnt of the old topic (its topic id, each partition's leader
        epoch, which a new topic restarts at 0) and may take the new topic's metadata for stale:
        the partition is assigned and never fetched (librdkafka #4898; seen in chaos runs as an
        owned partition delivering nothing for minutes)."""
        recreated = sorted(
            {i.topic for i in infos if i.epoch is not None and self._incarnations.get(i.topic, i.epoch) != i.epoch}
        )
        self._incarnations.update({i.topic: i.epoch for i in infos if i.epoch is not None})
        if not recreated or self.closed:
            return False
        log.info("%s: topic %s was re-created; fetching with a new Consumer", self.name, ", ".join(recreated))
        old, self.raw = self.raw, self._new()
        try:
            old.close()
        except (KafkaException, RuntimeError) as exc:  # closing is best effort: the new one fetches
            log.warning("%s: closing the replaced Consumer failed: %s", self.name, exc)
        return True

    def close(self, deadline: Deadline, wait: float = CLOSE_WAIT) -> None:
        """Close the Consumer once, holding the turn: waits up to `wait` (within `deadline`) for a
        reader's fetch to give it back; a fetch still holding it then closes it when it ends."""
        turn, me = self._turn, threading.get_ident()
        try:
            if not turn.take(me, deadline.remaining(wait)):
                if wait <= 0 or turn.holder is not None or not turn.take_over(me):
                    # A reader's fetch holds the Consumer; it closes it when it ends (Fetcher.fetch_for).
                    if wait > 0:
                        log.warning("%s: the consumer was still fetching; that fetch closes it", self.name)
                    return
                # Held by nobody all this while: left behind by an interrupted reader (see ReaderTurns.poll).
                log.warning("%s: a reader was interrupted holding the consumer; closing it anyway", self.name)
            if not self.closed and self.raw is not None:
                self.closed = True
                self.raw.close()
        finally:
            if turn.holder == me:  # inline, no call before the release: see turns.Turn
                lock = turn.lock
                turn.holder = None
                lock.release()
