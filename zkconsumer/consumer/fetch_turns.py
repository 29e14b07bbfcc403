"""A reader's turn on the fetcher's Consumer: fetching in the reader's thread, and recovering a turn cut short."""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from confluent_kafka import Consumer, KafkaException, TopicPartition

from zkconsumer.consumer.chunks import Message, PartitionTopicInfo, StreamQueue

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

Key = tuple[str, int]

READER_GRACE = 0.25  # the fetcher thread fetches only when no reader has asked to for this long
POLL_TIMEOUT = 0.1  # consume() wait: bounds how late a command or close() is noticed
IDLE_WAIT = 1.0  # nothing fetchable: sleep until a command or queue space wakes us
_BUSY_WAIT = 0.005  # a reader that found the Consumer taken waits this long before asking again
_ABANDONED_AFTER = 10  # failed turn polls in a row that see the lock held by nobody: a reader left it behind


class Turn:
    """Who may call the fetcher's Consumer now: a lock that knows its holder.

    Every holder names itself right after acquiring (under a small lock of its own), so a lock
    held by nobody can be told from one held by a thread at work: a signal raised in a reader
    between acquiring and naming itself leaves it so, and `take_over` then replaces it with a
    fresh lock, held by the taker. The lock left behind is never released; a thread that
    acquired it (one whose signal handler ran meanwhile) finds it replaced when it comes to name
    itself, and neither uses nor releases it.

    Threads that run signal handlers (the main thread) give the turn back with no call between
    checking that they hold it and releasing it:

        if turn.holder == me:
            lock = turn.lock
            turn.holder = None
            lock.release()

    (CPython looks for pending signals after each call: one landing in a give_back() method,
    before it cleared the name, would leave the turn named by a thread that no longer uses it.)
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._names = threading.Lock()
        self.holder: int | None = None

    def try_take(self, me: int) -> bool:
        """Take it if free, without waiting (a reader)."""
        lock = self.lock
        if not lock.acquire(blocking=False):
            return False
        return self._name(lock, me)

    def take(self, me: int, timeout: float) -> bool:
        """Wait up to `timeout` for it (the fetcher thread, commands run inline, closing)."""
        deadline = time.monotonic() + timeout
        while True:
            lock = self.lock
            if lock.acquire(timeout=max(0.0, min(POLL_TIMEOUT, deadline - time.monotonic()))):
                if self._name(lock, me):
                    return True
            elif time.monotonic() >= deadline:
                return False

    def _name(self, lock: threading.Lock, me: int) -> bool:
        with self._names:
            if self.lock is not lock:
                return False  # replaced by take_over while this thread was held up: not ours
            self.holder = me
        return True

    def take_over(self, me: int) -> bool:
        """Take it from nobody: held but not named (see the class docstring)."""
        with self._names:
            if self.holder is not None or not self.lock.locked():
                return False
            fresh = threading.Lock()
            fresh.acquire()
            self.lock = fresh
            self.holder = me
        return True

    def give_back(self, me: int) -> None:
        """Release it if `me` holds it (for threads that run no signal handlers; see above)."""
        if self.holder == me:
            lock = self.lock
            self.holder = None
            lock.release()

    def unnamed(self) -> bool:
        """Held but by nobody named: left behind, or a holder in the instant before it names itself."""
        return self.holder is None and self.lock.locked()


class ReaderTurns:
    """Fetcher's turn half (a base of zkconsumer.fetcher.Fetcher).

    `_turn` is held by whoever calls the Consumer or touches the routing state. A reader whose
    queue is empty takes a turn if it is free and no command waits (`fetch_for`); the fetcher
    thread polls for it (`_poll_turn`).
    """

    # Set by Fetcher.__init__ (and, for _raw, Fetcher.start).
    name: str
    _raw: Consumer
    _turn: Turn
    _unowned_polls: int
    _reader_asked: float
    _rewind: bool
    _retried_at: float
    _retry: bool
    _stopping: bool
    _closed: bool
    _failure: BaseException | None
    _batch_size: int
    _commands: queue.SimpleQueue[Any]
    _infos: dict[Key, PartitionTopicInfo]
    _held: collections.OrderedDict[Key, list[Message]]
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
        if not self._commands.empty():
            return _BUSY_WAIT  # the fetcher thread runs the commands first
        turn, me = self._turn, threading.get_ident()
        try:
            if not turn.try_take(me):
                return _BUSY_WAIT
            if self._stopping or self._closed or self._failure is not None:
                return IDLE_WAIT
            if self._rewind:
                self._refetch()
            if self._retry:
                self._retry, self._retried_at = False, time.monotonic()
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
            if turn.holder == me:  # inline, no call before the release: see Turn
                lock = turn.lock
                turn.holder = None
                lock.release()
            if self._stopping and not self._closed:
                self._close_consumer(0.0)  # close() gave up waiting for this fetch

    def _poll_turn(self) -> bool:
        """The fetcher thread's wait for `_turn` (one poll). A signal raised in a reader between
        acquiring `_turn` and naming itself leaves it held by nobody; after `_ABANDONED_AFTER`
        polls in a row that found it so, the fetcher thread takes it over, and rebuilds the
        routing state the interrupted reader may have left half-done."""
        turn, me = self._turn, threading.get_ident()
        if turn.take(me, POLL_TIMEOUT):
            self._unowned_polls = 0
            return True
        self._unowned_polls = self._unowned_polls + 1 if turn.holder is None else 0
        if self._unowned_polls < _ABANDONED_AFTER or not turn.take_over(me):
            return False
        self._unowned_polls = 0
        log.warning("%s: a reader was interrupted holding the consumer; the fetcher thread takes it over", self.name)
        self._rewind = True
        return True

    def _refetch(self) -> None:
        """Rebuild the routing state after a turn cut short by an exception (a reader's KeyboardInterrupt):
        every partition is fetched again from its first message not queued (the first held one, or
        `fetched_offset`), held messages are dropped and only released partitions stay paused.
        Whatever step the turn was in (routing, offering held chunks, pausing, an offset reset),
        nothing is lost; a chunk queued twice repeats messages below `consumed_offset`, which the
        iterators skip."""
        tps, released = [], []
        for key, info in self._infos.items():
            held = self._held.get(key)
            if held:
                info.fetched_offset = held[0].offset()
            tp = TopicPartition(info.topic, info.partition, info.fetched_offset)
            tps.append(tp)
            if not info.active:  # waits for remove() (see _retry_held)
                released.append(tp)
        self._held, self._held_bytes = collections.OrderedDict(), {}
        if tps:
            self._raw.assign(tps)
            self._raw.resume(tps)  # librdkafka keeps a pause across assign()
        if released:
            self._raw.pause(released)
        self._paused = {(tp.topic, tp.partition) for tp in released}
        self._rewind = False
