"""A ZooKeeper folder kept current by watches, keeping of each child only what its caller needs (watched.py tells how)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched_nodes import WatchedNodes

T = TypeVar("T")


class KeptFolder(Generic[T]):
    """The children of `path`, each as `keep(data, stat)`, re-read only where a watch fired.

    The list of names is cached behind a child watch on the folder; the children themselves are
    a WatchedNodes. `on_change(event)` (optional) runs on kazoo's thread when the list of
    children changes, after the cache has noted it, so a caller woken by it reads the new list.
    A missing folder reads as empty and is watched for its creation.

    Example::

        members = KeptFolder(io, "/consumers/g/ids", keep=lambda data, stat: (data, stat.ephemeralOwner))
        entries = members.read()          # first read: the list and every child
        entries = members.read()          # nothing changed: no request at all
    """

    def __init__(
        self,
        io: ZkIO,
        path: str,
        on_change: Callable[[WatchedEvent], object] | None = None,
        *,
        keep: Callable[[bytes, ZnodeStat], T],
    ) -> None:
        self.io = io
        self.path = path.rstrip("/")
        self.on_change = on_change
        what = f"read {self.path}"
        self._children = WatchedNodes(io, what, keep=keep)
        self._list_requests = 0
        self._lock = threading.Lock()
        self._names: list[str] | None = None  # None: not known (never read, or a watch fired since)
        self._list_generation = 0

    @property
    def requests(self) -> int:
        """Requests sent so far (tests and benchmarks count them)."""
        return self._list_requests + self._children.requests

    def read(self) -> dict[str, T]:
        """name -> keep(data, stat) of every child; children deleted while being read are left out."""
        paths = {name: f"{self.path}/{name}" for name in self._current_names()}
        found = self._children.read(list(paths.values()))
        return {name: entry for name, path in paths.items() if (entry := found[path]) is not None}

    def names(self) -> list[str]:
        """The children's names (no data is read)."""
        return list(self._current_names())

    def invalidate(self) -> None:
        """Forget everything: the next read asks ZooKeeper for all of it again."""
        with self._lock:
            self._names = None
            self._list_generation += 1
        self._children.invalidate()

    def _current_names(self) -> list[str]:
        with self._lock:
            if self._names is not None:
                return self._names
            generation = self._list_generation
        while True:
            self._list_requests += 1
            try:
                names = sorted(self.io.children(self.path, watch=self._list_watch))
                break
            except NoNodeError:
                pass
            self._list_requests += 1  # not there: watch for its creation instead
            if self.io.exists(self.path, watch=self._list_watch) is None:
                names = []
                break
        with self._lock:
            if self._list_generation == generation:
                self._names = names
            return names

    def _list_watch(self, event: WatchedEvent) -> None:
        with self._lock:
            self._names = None
            self._list_generation += 1
        if self.on_change is not None:
            self.on_change(event)
