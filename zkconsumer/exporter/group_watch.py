"""One group's nodes kept current by watches: registrations, offset and owner nodes, re-read only where a watch fired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.protocol.states import WatchedEvent, ZnodeStat

from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched import KeptFolder, WatchedFolder

Written = tuple[bytes, int, int]  # an offset node's value, mzxid and mtime (ms)
Held = tuple[bytes, int]  # a registration's or owner node's value and the session holding the node
V = TypeVar("V")


def _written(data: bytes, stat: ZnodeStat) -> Written:
    return (data, stat.mzxid, stat.mtime)


def _held(data: bytes, stat: ZnodeStat) -> Held:
    return (data, stat.ephemeralOwner)


@dataclass(frozen=True)
class GroupNodes:
    """What one read of a group's folders found (raw: decoding is sampling.py's, pure).

    `members`: consumer id -> (registration bytes, its session); `offsets`: key -> (value bytes,
    mzxid, mtime ms); `owners`: key -> (value bytes, the session holding the node); `marked`: the
    members that registered as zkconsumer members (Scala members never do); `stray`: children of
    offsets/ or owners/ folders that are not partition numbers (paths)."""

    members: dict[str, Held]
    offsets: dict[TopicPartition, Written]
    owners: dict[TopicPartition, Held]
    marked: frozenset[str]
    topics: frozenset[str]  # offsets/ and owners/ children: topics the group has nodes for
    stray: tuple[str, ...] = ()


class GroupWatch:
    """`/consumers/<group>` behind watches: a read after nothing changed sends no request.

    A child watch on `ids`, `offsets`, `owners` and each topic folder below them says when a list
    changed; a data watch on each child says when it changed or went (KeptFolder, keeping of each
    node only what GroupNodes holds: 100,000 offset nodes' stats would cost about 40 MB). A commit
    costs one request (its node's new value), a rebalance one per owner node claimed or released.
    `on_change(group)` (optional) runs on kazoo's thread when any of those watches fires, so a
    caller can read again at once rather than at its next tick (the read still asks only for what changed).

    Example::

        watch = GroupWatch(ZkIO(client, 10.0), "billing")
        nodes = watch.read()      # first read: every folder and node
        nodes = watch.read()      # nothing changed: no request at all
    """

    def __init__(self, io: ZkIO, group: str, on_change: Callable[[str], None] | None = None) -> None:
        self.io = io
        self.group = group
        self.on_change = on_change
        self._ids = KeptFolder(
            io, znodes.ids_path(group), self._list_changed, keep=_held, on_child_change=self._changed
        )
        self._marked = WatchedFolder(io, znodes.zkconsumer_members_path(group), self._list_changed)
        self._offset_topics = WatchedFolder(io, znodes.offsets_path(group), self._list_changed)
        self._owner_topics = WatchedFolder(io, znodes.owners_path(group), self._list_changed)
        self._offsets: dict[str, KeptFolder[Written]] = {}
        self._owners: dict[str, KeptFolder[Held]] = {}
        self._forgotten_requests = 0  # sent by the folders of topics no longer listed

    def _changed(self, _path: str, _event: WatchedEvent) -> None:
        """kazoo's thread: a node read since changed or went (a commit, a claim, a member leaving)."""
        if self.on_change is not None:
            self.on_change(self.group)

    def _list_changed(self, event: WatchedEvent) -> None:
        self._changed(event.path, event)

    @property
    def requests(self) -> int:
        """ZooKeeper requests sent for this group so far (folders forgotten included)."""
        return sum(f.requests for f in self._folders()) + self._forgotten_requests

    def invalidate(self) -> None:
        """Re-read everything next time (the session was lost: its watches with it)."""
        for folder in self._folders():
            folder.invalidate()

    def _folders(self) -> list[KeptFolder[Any]]:
        folders: list[KeptFolder[Any]] = [self._ids, self._marked, self._offset_topics, self._owner_topics]
        return [*folders, *self._offsets.values(), *self._owners.values()]

    def read(self) -> GroupNodes:
        members = self._ids.read()
        marked = frozenset(self._marked.names())
        offset_topics = self._offset_topics.names()
        owner_topics = self._owner_topics.names()
        stray: list[str] = []
        offsets: dict[TopicPartition, Written] = {}
        for topic, written in self._topic_entries(self._offsets, offset_topics, znodes.offsets_path, _written).items():
            offsets.update(_partitions(topic, written, znodes.offsets_path(self.group, topic), stray))
        owners: dict[TopicPartition, Held] = {}
        for topic, held in self._topic_entries(self._owners, owner_topics, znodes.owners_path, _held).items():
            owners.update(_partitions(topic, held, znodes.owners_path(self.group, topic), stray))
        return GroupNodes(
            members, offsets, owners, marked, frozenset(offset_topics) | frozenset(owner_topics), tuple(stray)
        )

    def _topic_entries(
        self,
        folders: dict[str, KeptFolder[V]],
        topics: list[str],
        path_of: Callable[[str, str], str],
        keep: Callable[[bytes, ZnodeStat], V],
    ) -> dict[str, dict[str, V]]:
        """topic -> its folder's children, keeping a folder per topic still listed."""
        for gone in [t for t in folders if t not in topics]:
            self._forgotten_requests += folders.pop(gone).requests
        out = {}
        for topic in topics:
            folder = folders.get(topic)
            if folder is None:
                path = path_of(self.group, topic)
                folder = folders[topic] = KeptFolder(
                    self.io, path, self._list_changed, keep=keep, on_child_change=self._changed
                )
            out[topic] = folder.read()
        return out


def _partitions(topic: str, entries: dict[str, V], folder: str, stray: list[str]) -> list[tuple[TopicPartition, V]]:
    """The children that are partition numbers; the others are noted as stray, by path."""
    out = []
    for child, entry in entries.items():
        if child.isascii() and child.isdigit():
            out.append(((topic, int(child)), entry))
        else:
            stray.append(f"{folder}/{child}")
    return out
