"""The data watch one WatchedNodes read arms on one path: a small object, not a closure, since a
cache of 100,000 nodes holds one per node (kazoo's watcher table keeps it until it fires)."""

from __future__ import annotations

from collections.abc import Callable

from kazoo.protocol.states import WatchedEvent


class Watcher:
    """Calls `fired(path, token, event)` when kazoo fires the watch: a function with two cells
    costs about 216 bytes, this 64."""

    __slots__ = ("fired", "path", "token")

    def __init__(self, fired: Callable[[str, int, WatchedEvent], None], path: str, token: int) -> None:
        self.fired = fired
        self.path = path
        self.token = token

    def __call__(self, event: WatchedEvent) -> None:
        self.fired(self.path, self.token, event)
