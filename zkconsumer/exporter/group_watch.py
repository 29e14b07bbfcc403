"""One group's nodes kept current by watches: registrations, offset and owner nodes, re-read only where a watch fired."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched import Entry, WatchedFolder


@dataclass(frozen=True)
class GroupNodes:
    """What one read of a group's folders found (raw: decoding is sampling.py's, pure).

    `members`: consumer id -> (registration bytes, its session); `offsets`: key -> (value bytes,
    mzxid, mtime ms); `owners`: key -> (value bytes, the session holding the node); `marked`: the
    members that registered as zkconsumer members (Scala members never do); `stray`: children of
    offsets/ or owners/ folders that are not partition numbers (paths)."""

    members: dict[str, tuple[bytes, int]]
    offsets: dict[TopicPartition, tuple[bytes, int, int]]
    owners: dict[TopicPartition, tuple[bytes, int]]
    marked: frozenset[str]
    topics: frozenset[str]  # offsets/ and owners/ children: topics the group has nodes for
    stray: tuple[str, ...] = ()


class GroupWatch:
    """`/consumers/<group>` behind watches: a read after nothing changed sends no request.

    A child watch on `ids`, `offsets`, `owners` and each topic folder below them says when a list
    changed; a data watch on each child says when it changed or went (WatchedFolder). A commit
    costs one request (its node's new value), a rebalance one per owner node claimed or released.

    Example::

        watch = GroupWatch(ZkIO(client, 10.0), "billing")
        nodes = watch.read()      # first read: every folder and node
        nodes = watch.read()      # nothing changed: no request at all
    """

    def __init__(self, io: ZkIO, group: str) -> None:
        self.io = io
        self.group = group
        self._ids = WatchedFolder(io, znodes.ids_path(group))
        self._marked = WatchedFolder(io, znodes.zkconsumer_members_path(group))
        self._offset_topics = WatchedFolder(io, znodes.offsets_path(group))
        self._owner_topics = WatchedFolder(io, znodes.owners_path(group))
        self._offsets: dict[str, WatchedFolder] = {}
        self._owners: dict[str, WatchedFolder] = {}
        self._forgotten_requests = 0  # sent by the folders of topics no longer listed

    @property
    def requests(self) -> int:
        """ZooKeeper requests sent for this group so far (folders forgotten included)."""
        folders = [self._ids, self._marked, self._offset_topics, self._owner_topics]
        folders += [*self._offsets.values(), *self._owners.values()]
        return sum(f.requests for f in folders) + self._forgotten_requests

    def invalidate(self) -> None:
        """Re-read everything next time (the session was lost: its watches with it)."""
        for folder in [self._ids, self._marked, self._offset_topics, self._owner_topics]:
            folder.invalidate()
        for folder in [*self._offsets.values(), *self._owners.values()]:
            folder.invalidate()

    def read(self) -> GroupNodes:
        members = {cid: (data, stat.ephemeralOwner) for cid, (data, stat) in self._ids.read().items()}
        marked = frozenset(self._marked.names())
        offset_topics = self._offset_topics.names()
        owner_topics = self._owner_topics.names()
        stray: list[str] = []
        offsets: dict[TopicPartition, tuple[bytes, int, int]] = {}
        for topic, entries in self._topic_entries(self._offsets, offset_topics, znodes.offsets_path).items():
            for key, (data, stat) in _partitions(topic, entries, znodes.offsets_path(self.group, topic), stray):
                offsets[key] = (data, stat.mzxid, stat.mtime)
        owners: dict[TopicPartition, tuple[bytes, int]] = {}
        for topic, entries in self._topic_entries(self._owners, owner_topics, znodes.owners_path).items():
            for key, (data, stat) in _partitions(topic, entries, znodes.owners_path(self.group, topic), stray):
                owners[key] = (data, stat.ephemeralOwner)
        return GroupNodes(
            members, offsets, owners, marked, frozenset(offset_topics) | frozenset(owner_topics), tuple(stray)
        )

    def _topic_entries(
        self, folders: dict[str, WatchedFolder], topics: list[str], path_of: Callable[[str, str], str]
    ) -> dict[str, dict[str, Entry]]:
        """topic -> its folder's children, keeping a WatchedFolder per topic still listed."""
        for gone in [t for t in folders if t not in topics]:
            self._forgotten_requests += folders.pop(gone).requests
        out = {}
        for topic in topics:
            folder = folders.get(topic)
            if folder is None:
                folder = folders[topic] = WatchedFolder(self.io, path_of(self.group, topic))
            out[topic] = folder.read()
        return out


def _partitions(
    topic: str, entries: dict[str, Entry], folder: str, stray: list[str]
) -> list[tuple[TopicPartition, Entry]]:
    """The children that are partition numbers; the others are noted as stray, by path."""
    out = []
    for child, entry in entries.items():
        if child.isascii() and child.isdigit():
            out.append(((topic, int(child)), entry))
        else:
            stray.append(f"{folder}/{child}")
    return out
