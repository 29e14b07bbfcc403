"""A reader's turn on the fetcher's Consumer: fetching in the reader's thread, and recovering a turn cut short."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from confluent_kafka import Consumer, KafkaException, TopicPartition

from zkconsumer.chunks import Message, PartitionTopicInfo, StreamQueue

log = logging.getLogger("zkconsumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

Key = tuple[str, int]

READER_GRACE = 0.25  # the fetcher thread fetches only when no reader has asked to for this long
POLL_TIMEOUT = 0.1  # consume() wait: bounds how late a command or close() is noticed
IDLE_WAIT = 1.0  # nothing fetchable: sleep until a command or queue space wakes us
_BUSY_WAIT = 0.02  # a reader that found the Consumer taken waits this long for that fetch's chunks
_ABANDONED_AFTER = 10  # failed turn polls in a row that see the lock held by nobody: a reader left it behind


class ReaderTurns:
    """Fetcher's turn half (a base of zkconsumer.fetcher.Fetcher).

    `_turn` is held by whoever calls the Consumer or touches the routing state, and `_turn_owner`
    names that thread from right after it acquired the lock. A reader whose queue is empty takes
    a turn if the lock is free and no command waits (`fetch_for`); the fetcher thread polls for
    it (`_poll_turn`).
    """

    # Set by Fetcher.__init__ (and, for _raw, Fetcher.start).
    name: str
    _raw: Consumer
    _turn: Any  # a threading.Lock (tests put a wrapper in its place)
    _turn_owner: int | None
    _unowned_polls: int
    _reader_asked: float
    _rewind: bool
    _retry: bool
    _stopping: bool
    _closed: bool
    _failure: BaseException | None
    _batch_size: int
    _commands: queue.SimpleQueue[Any]
    _infos: dict[Key, PartitionTopicInfo]
    _held: dict[Key, list[Message]]
    _held_bytes: dict[Key, int]
    _paused: set[Key]

    if TYPE_CHECKING:

        def _route(self, messages: list[Message]) -> None: ...
        def _retry_held(self) -> None: ...
        def _fail(self, exc: BaseException) -> None: ...
        def _close_consumer(self, wait: float = ...) -> None: ...

    def fetch_for(self, stream_queue: StreamQueue, timeout: float) -> float:
        """A reader found `stream_queue` empty: fetch on its thread if the Consumer is free (StreamQueue.refill).

        Returns 0 after a fetch, else how long the reader should wait for chunks another thread's
        fetch may bring. A KafkaException (a fatal librdkafka error) ends fetching for good
        (on_error). Anything else (a KeyboardInterrupt, an exception a signal handler raised, a
        bug) reaches the reader, and the next turn rebuilds the routing state (`_refetch`).
        """
        if self._stopping or self._closed or self._failure is not None:
            return IDLE_WAIT  # close() or fail() ends the queue soon
        self._reader_asked = time.monotonic()  # the fetcher thread leaves the next fetch to us
        turn = self._turn
        if not self._commands.empty() or not turn.acquire(blocking=False):
            return _BUSY_WAIT  # the fetcher thread runs the commands first
        # An exception raised right here (a signal) leaves `_turn` held with no owner: see _poll_turn.
        try:
            self._turn_owner = threading.get_ident()
            if self._stopping or self._closed or self._failure is not None:
                return IDLE_WAIT
            if self._rewind:
                self._refetch()
            if self._retry:
                self._retry = False
                self._retry_held()
                if len(stream_queue):
                    return 0.0
            if len(self._infos) <= len(self._paused):
                return IDLE_WAIT
            messages = self._raw.consume(self._batch_size, timeout)
            if messages:
                self._route(cast("list[Message]", messages))
            return 0.0
        except KafkaException as exc:
            self._fail(exc)
            return IDLE_WAIT
        except BaseException:
            self._rewind = True
            raise
        finally:
            self._turn_owner = None
            turn.release()
            if self._stopping and not self._closed:
                self._close_consumer(0.0)  # close() gave up waiting for this fetch

    def _poll_turn(self) -> bool:
        """The fetcher thread's wait for `_turn` (one poll). A signal raised in a reader between
        acquiring `_turn` and its `try` leaves the lock held by nobody; after `_ABANDONED_AFTER`
        polls in a row that found it so, the fetcher thread takes it over, and rebuilds the
        routing state the interrupted reader may have left half-done."""
        if self._turn.acquire(timeout=POLL_TIMEOUT):
            self._unowned_polls = 0
            self._turn_owner = threading.get_ident()
            return True
        self._unowned_polls = self._unowned_polls + 1 if self._turn_owner is None else 0
        if self._unowned_polls < _ABANDONED_AFTER:
            return False
        self._unowned_polls = 0
        log.warning("%s: a reader was interrupted holding the consumer; the fetcher thread takes it over", self.name)
        self._turn_owner = threading.get_ident()
        self._rewind = True
        return True  # the lock is still held: from now on by this thread

    def _refetch(self) -> None:
        """Rebuild the routing state after a turn cut short by an exception (a reader's KeyboardInterrupt):
        every partition is fetched again from its first message not queued (the first held one, or
        `fetched_offset`), held messages are dropped and nothing stays paused. Whatever step the
        turn was in (routing, offering held chunks, pausing, an offset reset), nothing is lost; a
        chunk queued twice repeats messages below `consumed_offset`, which the iterators skip."""
        tps = []
        for key, info in self._infos.items():
            held = self._held.get(key)
            if held:
                info.fetched_offset = held[0].offset()
            tps.append(TopicPartition(info.topic, info.partition, info.fetched_offset))
        self._held, self._held_bytes = {}, {}
        if tps:
            self._raw.assign(tps)
            self._raw.resume(tps)  # librdkafka keeps a pause across assign()
        self._paused = set()
        self._rewind = False
