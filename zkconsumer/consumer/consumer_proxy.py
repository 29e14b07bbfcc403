"""The fetcher's Consumer as other threads see it: every call runs as a fetcher command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
