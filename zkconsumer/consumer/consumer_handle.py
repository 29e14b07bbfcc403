"""ConsumerHandle: the fetcher's confluent-kafka Consumer; made, made anew for a re-created topic, closed once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import cast

from confluent_kafka import Consumer, KafkaException

from zkconsumer.consumer.chunks import Message, PartitionTopicInfo
from zkconsumer.consumer.fetch_errors import FetchErrors
from zkconsumer.consumer.fetch_settings import FetchSettings
from zkconsumer.consumer.log_throttle import throttled_logger
from zkconsumer.consumer.turn import Turn
from zkconsumer.zookeeper.deadline import Deadline

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

CLOSE_WAIT = 5.0  # how long a close waits for a reader's fetch to give the Consumer back


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
            if turn.holder == me:  # inline, no call before the release: see turn.Turn
                lock = turn.lock
                turn.holder = None
                lock.release()
