"""The fetcher's Consumer as other threads see it: every call runs as a fetcher command."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zkconsumer.fetcher import Fetcher


class ConsumerProxy:
    """The fetcher's Consumer for other threads: each method call runs as a fetcher command, on the
    fetcher thread (or inline, by a thread that holds the fetcher's turn on the Consumer).

    confluent-kafka 2.16 serializes the calls on one Consumer behind a gate that consume() holds
    while it waits, and another thread polling that gate starves (commit() hangs): so post them.
    """

    __slots__ = ("_fetcher",)

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._fetcher._raw, name)
        if not callable(attr):
            return attr
        return lambda *args, **kwargs: self._fetcher._call(lambda: attr(*args, **kwargs), required=False)
