"""ZooKeeper folders and nodes kept current by watches: a read asks only for what changed since the last.

The watchdog and every rebalance attempt of every member read whole folders (the group's member
registrations, a topic's owner nodes). Read afresh each time, that is O(members × partitions)
requests per interval for an idle group. Here a child watch on the folder says when the list of
names changed, a data watch on each child says when that child changed or went, and a read
re-asks ZooKeeper only for those. kazoo fires every watch with a NONE event when the link drops
(and the session may be gone), which makes everything stale: the next read re-reads it all.

Races: a watch may fire while the read it should invalidate is on the wire. Each name (and the
list) carries a generation, bumped by its watch; an answer is cached only if its generation did
not move meanwhile, so a change is never hidden behind an answer read before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched_nodes import Entry as Entry
from zkconsumer.zookeeper.watched_nodes import WatchedNodes as WatchedNodes

__all__ = ["WatchedFolder", "WatchedNodes"]


class WatchedFolder:
    """The children of `path` with their (data, stat), re-read only where a watch fired.

    The list of names is cached behind a child watch on the folder; the children themselves are
    a WatchedNodes. `on_change(event)` (optional) runs on kazoo's thread when the list of
    children changes, after the cache has noted it, so a caller woken by it reads the new list.
    A missing folder reads as empty and is watched for its creation.

    Example::

        members = WatchedFolder(io, "/consumers/g/ids")
        entries = members.read()          # first read: the list and every child
        entries = members.read()          # nothing changed: no request at all
    """

    def __init__(self, io: ZkIO, path: str, on_change: Callable[[WatchedEvent], object] | None = None) -> None:
        self.io = io
        self.path = path.rstrip("/")
        self.on_change = on_change
        self._children = WatchedNodes(io, f"read {self.path}")
        self._list_requests = 0
        self._lock = threading.Lock()
        self._names: list[str] | None = None  # None: not known (never read, or a watch fired since)
        self._list_generation = 0

    @property
    def requests(self) -> int:
        """Requests sent so far (tests and benchmarks count them)."""
        return self._list_requests + self._children.requests

    def read(self) -> dict[str, Entry]:
        """name -> (data, stat) of every child; children deleted while being read are left out."""
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
