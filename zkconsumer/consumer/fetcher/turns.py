"""Who calls the fetcher's Consumer now: a lock that knows its holder (Turn), taken by the fetcher thread or a reader (ReaderTurns)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("zkconsumer.consumer.fetcher")  # the fetcher's logger: these lines are the fetcher's

READER_GRACE = 0.25  # the fetcher thread fetches only when no reader has asked to for this long
POLL_TIMEOUT = 0.1  # consume() wait: bounds how late a command or close() is noticed
IDLE_WAIT = 1.0  # nothing fetchable: sleep until a command or queue space wakes us
BUSY_WAIT = 0.005  # a reader that found the Consumer taken waits this long before asking again
_ABANDONED_AFTER = 10  # failed turn polls in a row that see the lock held by nobody: a reader left it behind
_SLICE = 0.1  # take() waits in slices this long: a lock replaced by take_over is noticed within one


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
            if lock.acquire(timeout=max(0.0, min(_SLICE, deadline - time.monotonic()))):
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
    """The turn on the Consumer, and who should take it.

    `turn` is held by whoever calls the Consumer or touches the routing state (ChunkRouter). With
    `enabled` (zkconsumer.fetch.in.reader), a reader whose queue is empty asks for it (`reader_asks`)
    and fetches on its own thread if it is free; while a reader asked within READER_GRACE, the
    fetcher thread leaves fetching to readers (`readers_fetch`). The fetcher thread waits for the
    turn one poll at a time (`poll`), and takes over a turn an interrupted reader left held by
    nobody, calling `on_abandoned` (the routing state that reader may have left half-done is
    rebuilt).
    """

    def __init__(self, name: str, *, enabled: bool, on_abandoned: Callable[[], None]) -> None:
        self.name = name
        self.enabled = enabled
        self.turn = Turn()
        self.reader_asked = -READER_GRACE  # time.monotonic() when a reader last wanted to fetch
        self._on_abandoned = on_abandoned
        self._unowned_polls = 0  # the fetcher thread's failed polls in a row that saw no holder

    def reader_asks(self) -> None:
        """A reader wants to fetch: the fetcher thread leaves the next fetches to readers."""
        self.reader_asked = time.monotonic()

    def readers_fetch(self) -> bool:
        """Whether a reader asked to fetch within READER_GRACE."""
        return self.enabled and time.monotonic() - self.reader_asked < READER_GRACE

    def leave_to_readers(self) -> None:
        """The fetcher thread does not poll this round: a held turn is a reader at work."""
        self._unowned_polls = 0

    def poll(self) -> bool:
        """The fetcher thread's wait for the turn (one poll). A signal raised in a reader between
        acquiring the turn and naming itself leaves it held by nobody; after `_ABANDONED_AFTER`
        polls in a row that found it so, the fetcher thread takes it over (and `on_abandoned` runs)."""
        turn, me = self.turn, threading.get_ident()
        if turn.take(me, POLL_TIMEOUT):
            self._unowned_polls = 0
            return True
        self._unowned_polls = self._unowned_polls + 1 if turn.holder is None else 0
        if self._unowned_polls < _ABANDONED_AFTER or not turn.take_over(me):
            return False
        self._unowned_polls = 0
        log.warning("%s: a reader was interrupted holding the consumer; the fetcher thread takes it over", self.name)
        self._on_abandoned()
        return True
