"""Turn: who may call the fetcher's Consumer now, a lock that knows its holder."""

from __future__ import annotations

import threading
import time

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
