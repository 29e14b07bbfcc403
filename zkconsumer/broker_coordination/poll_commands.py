"""Calls other threads ask the one thread that owns a librdkafka Consumer to make, and their answers."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from zkconsumer.errors import CommitFailed


class _Command:
    def __init__(self, call: Callable[[], object]) -> None:
        self.call = call
        self.done = threading.Event()
        self.result: object = None
        self.error: BaseException | None = None


class PollCommands:
    """The Consumer has one owner (its poll thread): other threads `ask`, the owner `serve`s between
    polls, and on leaving it `fail_all`s what is still waiting, so no asker waits past its timeout."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Command] = queue.SimpleQueue()

    def ask(self, call: Callable[[], object], timeout: float, timed_out: str) -> object:
        """`call`'s answer (or its exception) from the poll thread; CommitFailed(`timed_out`) after `timeout` s."""
        command = _Command(call)
        self._queue.put(command)
        if not command.done.wait(timeout):
            raise CommitFailed(timed_out)
        if command.error is not None:
            raise command.error
        return command.result

    def serve(self) -> None:
        """On the poll thread: make every call asked so far."""
        while (command := self._next()) is not None:
            try:
                command.result = command.call()
            except BaseException as exc:  # handed to the asking thread
                command.error = exc
            command.done.set()

    def fail_all(self, error: Callable[[], BaseException]) -> None:
        """On the poll thread as it ends: answer every waiting call with `error()`."""
        while (command := self._next()) is not None:
            command.error = error()
            command.done.set()

    def _next(self) -> _Command | None:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None
