"""ZooKeeper folders and nodes kept current by watches: a read asks only for what changed since the last.

The watchdog and every rebalance attempt of every member read whole folders (the group's member
registrations, a topic's owner nodes). Read afresh each time, that is O(members × partitions)
requests per interval for an idle group. Here a child watch on the folder says when the list of
names changed, a data watch on each child says when that child changed or went, and a read
re-asks ZooKeeper only for those. kazoo fires every watch with a NONE event when the link drops
(and the session may be gone), which makes everything stale: the next read re-reads it all,
unless watch_rearm.py kept the watches across a reconnect in the same session (then only the
watches the server fires for what changed meanwhile fire).

Races: a watch may fire while the read it should invalidate is on the wire. Each name (and the
list) carries a generation, bumped by its watch; an answer is cached only if its generation did
not move meanwhile, so a change is never hidden behind an answer read before it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Generic, TypeVar, overload

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watch_rearm import ExistsWatch

__all__ = ["Entry", "KeptFolder", "WatchedFolder", "WatchedNodes"]

Entry = tuple[bytes, ZnodeStat]  # a node's data and stat
T = TypeVar("T")


class Watcher:
    """The data watch one WatchedNodes read arms on one path: a small object, not a closure, since a
    cache of 100,000 nodes holds one per node (kazoo's watcher table keeps it until it fires).

    Calls `fired(path, token, event)` when kazoo fires the watch: a function with two cells
    costs about 216 bytes, this 64."""

    __slots__ = ("fired", "path", "token")

    def __init__(self, fired: Callable[[str, int, WatchedEvent], None], path: str, token: int) -> None:
        self.fired = fired
        self.path = path
        self.token = token

    def __call__(self, event: WatchedEvent) -> None:
        self.fired(self.path, self.token, event)


class WatchedNodes(Generic[T]):
    """(data, stat) of chosen nodes, each read once and then only after its data watch fired.

    `keep(data, stat)` (optional) is what is cached and given of each node instead of (data, stat):
    a cache of 100,000 nodes that needs two fields of the stat keeps just those (a ZnodeStat and
    its eleven ints are about 400 bytes).

    For a member's own owner nodes: asking "are these still ours?" every attempt costs nothing
    while they are unchanged. A missing node is not cached (it is asked about again next time).

    `on_change(path, event)` (optional, kazoo's thread) hears the watch of a node we still vouch
    for fire: the newest watch a read armed on a path that was neither `forget()`-ten (we deleted it
    ourselves) nor left out of a later read. `invalidate()` does not silence it: a change whose event
    was already queued when the link dropped is still a change.

    Example::

        mine = WatchedNodes(io)
        found = mine.read(["/consumers/g/owners/t/0", "/consumers/g/owners/t/1"])  # path -> entry or None
    """

    @overload
    def __init__(
        self: WatchedNodes[Entry],
        io: ZkIO,
        what: str = ...,
        on_change: Callable[[str, WatchedEvent], None] | None = ...,
    ) -> None: ...

    @overload
    def __init__(
        self,
        io: ZkIO,
        what: str = ...,
        on_change: Callable[[str, WatchedEvent], None] | None = ...,
        *,
        keep: Callable[[bytes, ZnodeStat], T],
    ) -> None: ...

    def __init__(
        self,
        io: ZkIO,
        what: str = "read watched nodes",
        on_change: Callable[[str, WatchedEvent], None] | None = None,
        *,
        keep: Callable[[bytes, ZnodeStat], T] | None = None,
    ) -> None:
        self.io = io
        self._keep = keep
        self.what = what  # names the batch in a timeout's message
        self.on_change = on_change
        self.requests = 0
        self._lock = threading.Lock()
        self._entries: dict[str, T] = {}
        # Generations and watch tokens come from one counter, never reused: a watch armed before a
        # path was forgotten can never pass for one armed after.
        self._counter = itertools.count(1)
        self._generations: dict[str, int] = {}
        self._armed: dict[str, int] = {}  # path -> token of the newest watch on a node we vouch for
        self._listeners: dict[str, list[Callable[[WatchedEvent], None]]] = {}
        self._fired_once = self._fired  # one bound method shared by every Watcher

    def invalidate(self, *, disarm: bool = False) -> None:
        """Forget everything: the next read asks ZooKeeper for all of it again, and an answer
        already on the wire (a read in progress) is not kept either. `disarm`: the watches armed so
        far no longer reach `on_change` either (the session that held the nodes ended)."""
        with self._lock:
            for path in self._generations:
                self._generations[path] = next(self._counter)
            self._entries.clear()
            if disarm:
                self._armed.clear()

    def cached(self, paths: list[str]) -> dict[str, T]:
        """The entries among `paths` whose watch has not fired since they were read (no request;
        nothing is forgotten). A node missing here may still exist: it is just not known."""
        with self._lock:
            return {p: self._entries[p] for p in paths if p in self._entries}

    def forget(self, paths: list[str]) -> None:
        """Drop these entries now, before their watches' events arrive (we deleted the nodes
        ourselves); a read of them already on the wire is not cached either, and their watches no
        longer reach `on_change`."""
        with self._lock:
            for path in paths:
                self._entries.pop(path, None)
                self._armed.pop(path, None)
                if path in self._generations:
                    self._generations[path] = next(self._counter)

    def when_changed(self, path: str, listener: Callable[[WatchedEvent], None]) -> bool:
        """Call `listener(event)` (once, on kazoo's thread) when the watch on `path` fires; False,
        and nothing registered, if no current entry holds a watch there (the caller sets its own)."""
        with self._lock:
            if path not in self._entries:
                return False
            self._listeners.setdefault(path, []).append(listener)
            return True

    def read(self, paths: list[str]) -> dict[str, T | None]:
        """path -> (data, stat), None where there is no node. Forgets every path not asked for.

        The answer is the cache as the read began plus what it asked for: an entry whose watch fires
        while the rest is on the wire is still given (it is what the read began from; the next read
        asks again), never taken for a node that is gone."""
        return self._read(paths, forget_others=True)

    def _read(self, paths: list[str], *, forget_others: bool) -> dict[str, T | None]:
        with self._lock:
            wanted = set(paths) if forget_others else set(self._generations) | set(self._entries) | set(paths)
            for path in [p for p in self._entries if p not in wanted]:
                del self._entries[path]
            for path in [p for p in self._generations if p not in wanted]:
                del self._generations[path]
            for path in [p for p in self._armed if p not in wanted]:
                del self._armed[path]
            known = {p: self._entries[p] for p in paths if p in self._entries}
            todo = {p: self._generations.setdefault(p, next(self._counter)) for p in paths if p not in known}
            tokens = {p: next(self._counter) for p in todo}
            self._armed.update(tokens)
        client, fired = self.io.client, self._fired_once
        answers: dict[str, Entry | None] = (
            self.io.many(((p, client.get_async(p, watch=Watcher(fired, p, tokens[p]))) for p in todo), self.what)
            if todo
            else {}
        )
        self.requests += len(todo)
        kept: dict[str, T | None] = {p: None if a is None else self._kept(a) for p, a in answers.items()}
        with self._lock:
            for path, value in kept.items():
                if value is not None and self._generations.get(path, 0) == todo[path]:
                    self._entries[path] = value
            return {p: kept[p] if p in kept else known[p] for p in paths}  # in the order asked

    def _kept(self, answer: Entry) -> T:
        if self._keep is None:
            return answer  # type: ignore[return-value]  # T is Entry without `keep` (the overloads)
        return self._keep(*answer)

    def add(self, paths: list[str]) -> dict[str, T | None]:
        """Read and watch these too, keeping every other entry (`read` forgets what it is not asked
        for): a claim's new nodes join the set we vouch for at once, not at the next full read."""
        return self._read(paths, forget_others=False)

    def _fired(self, path: str, token: int, event: WatchedEvent) -> None:
        """The watch armed on `path` by the read that drew `token` fired."""
        with self._lock:
            if path in self._generations or path in self._entries:
                self._generations[path] = next(self._counter)
                self._entries.pop(path, None)
            listeners = self._listeners.pop(path, [])
            vouched = self._armed.get(path) == token
            if vouched:
                del self._armed[path]
        for listener in listeners:
            listener(event)
        if vouched and self.on_change is not None:
            self.on_change(path, event)


class KeptFolder(Generic[T]):
    """The children of `path`, each as `keep(data, stat)`, re-read only where a watch fired.

    The list of names is cached behind a child watch on the folder; the children themselves are
    a WatchedNodes. `on_change(event)` (optional) runs on kazoo's thread when the list of
    children changes, after the cache has noted it, so a caller woken by it reads the new list;
    `on_child_change(path, event)` (optional, kazoo's thread) when a child read since changed or went.
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
        on_child_change: Callable[[str, WatchedEvent], None] | None = None,
    ) -> None:
        self.io = io
        self.path = path.rstrip("/")
        self.on_change = on_change
        what = f"read {self.path}"
        self._children = WatchedNodes(io, what, on_child_change, keep=keep)
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
            # marked as an exist watch, so a reconnect re-arms it as one (watch_rearm.py)
            if self.io.exists(self.path, watch=ExistsWatch(self._list_watch)) is None:
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


def _entry(data: bytes, stat: ZnodeStat) -> Entry:
    return (data, stat)


class WatchedFolder(KeptFolder[Entry]):
    """The children of `path` with their (data, stat), re-read only where a watch fired (KeptFolder).

    `on_change(event)` (optional) runs on kazoo's thread when the list of children changes, after
    the cache has noted it, so a caller woken by it reads the new list. A missing folder reads as
    empty and is watched for its creation.

    Example::

        members = WatchedFolder(io, "/consumers/g/ids")
        entries = members.read()          # first read: the list and every child
        entries = members.read()          # nothing changed: no request at all
    """

    def __init__(self, io: ZkIO, path: str, on_change: Callable[[WatchedEvent], object] | None = None) -> None:
        super().__init__(io, path, on_change, keep=_entry)
