"""Other threads' calls run by the fetcher thread: FetchCommands posts and awaits them, ConsumerProxy makes every Consumer call one."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

T = TypeVar("T")

_CHECK_EVERY = 0.2  # a waiting caller notices a fetcher thread that died this soon


class FetchCommands:
    """Calls posted to the fetcher thread, which alone runs them (`run_all`) while it holds the turn.

    Posting sets `wake`, so a fetcher thread asleep between fetches runs them at once.
    """

    def __init__(self, wake: threading.Event) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._wake = wake

    def pending(self) -> bool:
        return not self._queue.empty()

    def post(self, fn: Callable[[], T]) -> Future[T]:
        fut: Future[T] = Future()
        self._queue.put((fn, fut))
        self._wake.set()
        return fut

    def wait(self, fut: Future[Any], thread: threading.Thread, limit: float) -> bool:
        """Wait for a posted command: True once it ran (its result, or exception, is ready), False if
        it never will (`thread` ended or failed first). Raises TimeoutError after `limit` seconds,
        cancelling a command not started by then: it must not run late (a cancelled add, say)."""
        deadline = time.monotonic() + limit
        while True:
            try:
                fut.exception(timeout=min(_CHECK_EVERY, limit))
                return True
            except CancelledError:
                return False  # the thread failed before running it
            except FutureTimeout:
                if not thread.is_alive() and fut.cancel():
                    return False  # died before running it
                if time.monotonic() >= deadline:
                    fut.cancel()
                    raise TimeoutError(f"{thread.name} did not run a command within {limit:.1f}s") from None

    def run_all(self) -> None:
        """Run what was posted (on the fetcher thread only: it alone takes from the queue)."""
        while not self._queue.empty():
            fn, fut = self._queue.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - the caller gets it
                    fut.set_exception(exc)

    def cancel_all(self) -> None:
        """Fetching stopped or failed: release the callers waiting for what was posted."""
        while not self._queue.empty():
            self._queue.get()[1].cancel()


class ConsumerProxy:
    """The fetcher's Consumer for other threads: each method call runs as a fetcher command, on the
    fetcher thread (or inline, by a thread that holds the fetcher's turn on the Consumer).

    confluent-kafka 2.16 serializes the calls on one Consumer behind a gate that consume() holds
    while it waits, and another thread polling that gate starves (commit() hangs): so post them.

    `consumer()` gives the Consumer (created when the fetcher starts); `run(fn)` runs `fn` as a
    fetcher command and returns its result (Fetcher._call).
    """

    __slots__ = ("_consumer", "_run")

    def __init__(self, consumer: Callable[[], Any], run: Callable[[Callable[[], Any]], Any]) -> None:
        self._consumer = consumer
        self._run = run

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._consumer(), name)
        if not callable(attr):
            return attr
        return lambda *args, **kwargs: self._run(lambda: attr(*args, **kwargs))
