"""Watches kept across a reconnect in the same session: kazoo's watch tables re-armed with SetWatches, as the Java client does.

ZooKeeper keeps a client's watches per connection. When the link drops and the same session
comes back on a new one, the Java client sends SetWatches (opcode 101) with the paths of its
data, exist and child watches and the last zxid it saw; the server re-arms each, or fires it at
once if its node changed after that zxid (or went, or came). kazoo 2.11 sends none: on SUSPENDED
it empties its tables and fires every watch with a NONE event, so a cache kept by watches
(watched.py) must re-read everything after every blip.

WatchRearm, on a gated kazoo (internals.rearm_wanted), does what the Java client does:

* SUSPENDED (kazoo's connection thread, before kazoo empties its tables): take the tables as they
  are, with the last zxid kazoo saw on the old connection; kazoo then finds them empty and fires
  nothing.
* CONNECTED in the same session: put the tables back, then queue the SetWatches requests at the
  head of kazoo's queue (before any request queued while the link was down). The watchers are
  back in the tables before the request leaves, so every event the server fires for it (which it
  sends before its answer) finds them: a node changed while the link was down is re-read.
* LOST (the session ended): put the tables back, so kazoo's reset fires them all with NONE.

Stock path (every watch fired with NONE, as kazoo does, so everything is re-read) whenever the
re-arm cannot vouch for the watches: a kazoo not gated in, a new session, a re-arm the server
refused (its batch's watches), or the link dropping again before the re-arm was answered.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, SessionExpiredError
from kazoo.protocol.states import Callback, EventType, KazooState, KeeperState, WatchedEvent

from zkconsumer.zookeeper import internals

__all__ = ["MAX_BATCH_CHARS", "SET_WATCHES", "ExistsWatch", "SetWatches", "WatchRearm", "set_watches_batches"]

log = logging.getLogger(__name__)

SET_WATCHES = (
    101  # ZooDefs.OpCode.setWatches: every server from 3.4 on (SetWatches2, 105, adds only persistent watches)
)
# ClientCnxn.SET_WATCHES_MAX_LENGTH: the Java client's batch, counted in path characters, well under
# the server's jute.maxbuffer (1 MB by default) however long the paths.
MAX_BATCH_CHARS = 128 * 1024

Watchers = Mapping[str, Iterable[Callable[[WatchedEvent], object]]]


class ExistsWatch:
    """A watch armed by exists() on a node that may be absent. kazoo keeps exist and data watches in
    one table; the server re-arms them differently (a data watch on an absent node fires at once as
    deleted), so the caller marks an exist watch with this wrapper and it is re-armed as one."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[WatchedEvent], object]) -> None:
        self.callback = callback

    def __call__(self, event: WatchedEvent) -> None:
        self.callback(event)

    def __eq__(self, other: object) -> bool:  # kazoo keeps a set: one entry per callback, as without the wrapper
        return isinstance(other, ExistsWatch) and other.callback == self.callback

    def __hash__(self) -> int:
        return hash(self.callback)


@dataclass(frozen=True)
class SetWatches:
    """The SetWatches request (zookeeper.jute: long relativeZxid, then vectors of ustring
    dataWatches, existWatches, childWatches), shaped as kazoo's own requests are."""

    relative_zxid: int
    data: tuple[str, ...]
    exist: tuple[str, ...]
    child: tuple[str, ...]
    type: ClassVar[int] = SET_WATCHES

    def serialize(self) -> bytes:
        out = [struct.pack("!q", self.relative_zxid)]
        for paths in (self.data, self.exist, self.child):
            out.append(struct.pack("!i", len(paths)))
            for path in paths:
                raw = path.encode()
                out.append(struct.pack("!i", len(raw)))
                out.append(raw)
        return b"".join(out)

    @staticmethod
    def deserialize(_buffer: bytes, _offset: int) -> None:
        return None  # its answer is the header alone

    @property
    def paths(self) -> int:
        return len(self.data) + len(self.exist) + len(self.child)


def set_watches_batches(
    relative_zxid: int,
    data: Iterable[str],
    exist: Iterable[str],
    child: Iterable[str],
    limit: int = MAX_BATCH_CHARS,
) -> list[SetWatches]:
    """The requests that re-arm these watches: each path once, in order, a batch closed before a
    path would take it past `limit` characters (a single longer path goes alone)."""
    batches: list[SetWatches] = []
    lists: tuple[list[str], list[str], list[str]] = ([], [], [])
    size = 0
    for kind, paths in enumerate((data, exist, child)):
        for path in paths:
            if size and size + len(path) > limit:
                batches.append(SetWatches(relative_zxid, *(tuple(x) for x in lists)))
                lists, size = ([], [], []), 0
            lists[kind].append(path)
            size += len(path)
    if size:
        batches.append(SetWatches(relative_zxid, *(tuple(x) for x in lists)))
    return batches


def watch_lists(data_table: Watchers, child_table: Watchers) -> tuple[list[str], list[str], list[str]]:
    """kazoo's tables as SetWatches' three lists: a data-table path whose watchers are all
    ExistsWatch is an exist watch; paths without watchers are left out."""
    data: list[str] = []
    exist: list[str] = []
    for path, watchers in data_table.items():
        marks = [isinstance(w, ExistsWatch) for w in watchers]
        if marks:
            (exist if all(marks) else data).append(path)
    child = [path for path, watchers in child_table.items() if any(True for _ in watchers)]
    return data, exist, child


@dataclass
class _Kept:
    """kazoo's tables as the link dropped, and what the re-arm needs to vouch for them."""

    session: int | None
    zxid: int
    data: defaultdict[str, set[Any]]
    child: defaultdict[str, set[Any]]


class WatchRearm:
    """Keeps `client`'s watches across a reconnect in the same session (module docstring), if
    internals.rearm_wanted(client); else does nothing and kazoo's stock path runs.

    Its listener runs on kazoo's connection thread and does no I/O: it moves kazoo's tables and
    queues requests. Counters: `rearmed` (reconnects whose every batch was answered), `fallbacks`
    (reconnects that took the stock path), `paths` (watches in the last re-arm).

    Example::

        rearm = WatchRearm(client)   # after connect(), before the first watch matters
        ...
        rearm.close()                # before the client is stopped
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.enabled = internals.rearm_wanted(client)
        self.rearmed = 0
        self.fallbacks = 0
        self.paths = 0
        self._lock = threading.Lock()  # guards the fields below; never held across I/O
        self._kept: _Kept | None = None
        self._unanswered = 0  # batches of the last re-arm not yet answered without error
        self._refused_said = False
        if self.enabled:
            client.add_listener(self._on_state)

    def close(self) -> None:
        """Stop keeping watches; watches kept while the link is down fire with NONE (stock)."""
        if not self.enabled:
            return
        self.client.remove_listener(self._on_state)
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            self._fire_none(kept.data, kept.child)

    def _on_state(self, state: KazooState) -> None:
        """kazoo's connection thread, inside its state change."""
        if state == KazooState.SUSPENDED:
            self._keep()
        elif state == KazooState.CONNECTED:
            self._rearm()
        elif state == KazooState.LOST:
            self._give_back()

    def _keep(self) -> None:
        """Take kazoo's tables before it empties them, unless the re-arm in flight was never
        answered: then nothing vouches for those watches, and kazoo fires them all (stock)."""
        client = self.client
        with self._lock:
            if self._unanswered:
                self._unanswered = 0
                self.fallbacks += 1
                log.info("the link dropped before ZooKeeper answered the watch re-arm: every watch fires (re-read)")
                return
            kept = _Kept(client._session_id, client.last_zxid, client._data_watchers, client._child_watchers)
            if self._kept is not None:  # two drops with no connect between: one set of tables
                _merge(kept.data, self._kept.data)
                _merge(kept.child, self._kept.child)
                kept.zxid = min(kept.zxid, self._kept.zxid)
            self._kept = kept
            client._data_watchers = defaultdict(set)
            client._child_watchers = defaultdict(set)

    def _rearm(self) -> None:
        client = self.client
        with self._lock:
            kept, self._kept = self._kept, None
            if kept is None:
                return
            if kept.session is None or client._session_id != kept.session:
                self.fallbacks += 1
                fire: _Kept | None = kept
            else:
                fire = None
                _merge(client._data_watchers, kept.data)  # back before the request can bring events
                _merge(client._child_watchers, kept.child)
                batches = set_watches_batches(kept.zxid, *watch_lists(kept.data, kept.child))
                self._unanswered = len(batches)
                self.paths = sum(b.paths for b in batches)
        if fire is not None:
            log.info("reconnected in another session: every watch fires (re-read)")
            self._fire_none(fire.data, fire.child)
            return
        if not batches:
            return
        for request in reversed(batches):  # at the head of the queue, first batch first
            answer = client.handler.async_result()
            answer.rawlink(partial(self._answered, request))
            client._queue.appendleft((request, answer))
        for _ in batches:
            _wake(client)
        log.debug("re-arming %d watches relative to zxid 0x%x in %d requests", self.paths, kept.zxid, len(batches))

    def _give_back(self) -> None:
        """The session ended: the kept watchers go back into kazoo's tables, whose reset fires them."""
        with self._lock:
            kept, self._kept = self._kept, None
            self._unanswered = 0
        if kept is not None:
            _merge(self.client._data_watchers, kept.data)
            _merge(self.client._child_watchers, kept.child)

    def _answered(self, request: SetWatches, answer: Any) -> None:
        """kazoo's completion thread: one batch answered."""
        error = answer.exception
        if error is None:
            with self._lock:
                if self._unanswered:
                    self._unanswered -= 1
                    if not self._unanswered:
                        self.rearmed += 1
            return
        if isinstance(error, (ConnectionLoss, ConnectionClosedError, SessionExpiredError)):
            return  # the link or session went: its state change takes the stock path
        # The server answered with an error: its watches on this batch's paths are not armed.
        client = self.client
        data = {p: client._data_watchers.pop(p, set()) for p in (*request.data, *request.exist)}
        child = {p: client._child_watchers.pop(p, set()) for p in request.child}
        with self._lock:
            self.fallbacks += 1
            said, self._refused_said = self._refused_said, True
        if not said:
            log.warning("ZooKeeper refused the watch re-arm (%s): those watches fire (re-read)", error)
        self._fire_none(data, child)

    def _fire_none(self, data: Watchers, child: Watchers) -> None:
        """What kazoo does to every watch when the link drops: a NONE event, on its callback thread."""
        client = self.client
        event = WatchedEvent(EventType.NONE, KeeperState.CONNECTING, None)
        for table in (data, child):
            for watchers in table.values():
                for watcher in watchers:
                    client.handler.dispatch_callback(Callback("watch", watcher, (event,)))


def _merge(into: defaultdict[str, set[Any]], table: Watchers) -> None:
    for path, watchers in table.items():
        if watchers:
            into[path].update(watchers)


def _wake(client: Any) -> None:
    """One wake-up byte per queued request, as kazoo's _call writes."""
    write_sock = client._connection._write_sock
    if write_sock is not None:
        try:
            write_sock.send(b"\0")
        except OSError:  # closing: the close fails what is queued
            pass
