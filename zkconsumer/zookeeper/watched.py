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

from collections.abc import Callable

from kazoo.protocol.states import WatchedEvent, ZnodeStat

from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched_kept import KeptFolder as KeptFolder
from zkconsumer.zookeeper.watched_nodes import Entry as Entry
from zkconsumer.zookeeper.watched_nodes import WatchedNodes as WatchedNodes

__all__ = ["KeptFolder", "WatchedFolder", "WatchedNodes"]


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
