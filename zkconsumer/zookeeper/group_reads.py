"""The group as our watches say it is: registrations, member ids and owner nodes, re-read only where a watch fired.

Read afresh, these are O(members) requests per rebalance attempt and O(partitions) per watchdog
check on every member; served from WatchedFolders they cost only what changed. Writes never use
them: a claim, release or commit reads the nodes it writes afresh, for the versions it fences on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from kazoo.protocol.states import ZnodeStat

from zkconsumer.errors import ZkDataError
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import Watch, ZkIO
from zkconsumer.zookeeper.watched import WatchedFolder, WatchedNodes
from zkconsumer.zookeeper.znodes import Registration

log = logging.getLogger(__name__)

__all__ = ["GroupReads", "decode_owners"]


class GroupReads:
    """Cached reads of `/consumers/<group>`: `ids`, the zkconsumer markers and chosen owner nodes.

    Example::

        reads = GroupReads(io, "billing")
        good, bad = reads.registrations(watch=on_members_changed)
        owners = reads.owner_threads([("orders", 0)])   # (topic, partition) -> owner thread id
    """

    def __init__(self, io: ZkIO, group_id: str) -> None:
        self.io = io
        self.group_id = group_id
        self._members = WatchedFolder(io, znodes.ids_path(group_id))
        self._marked = WatchedFolder(io, znodes.zkconsumer_members_path(group_id))
        self._checked = WatchedNodes(io, "read owner nodes to check")
        self._warned: set[tuple[str, int, int]] = set()
        self._decoded: dict[str, tuple[bytes, Registration | ZkDataError]] = {}  # cid -> (data, decoded)

    def forget(self) -> None:
        """Make the next reads ask ZooKeeper for everything (the watches went with the link)."""
        self._members.invalidate()
        self._marked.invalidate()
        self._checked.invalidate()

    def registrations(
        self, watch: Watch | None = None, *, own_id: str | None = None
    ) -> tuple[dict[str, Registration], dict[str, ZkDataError]]:
        """Every member's registration, and separately those that could not be decoded.

        Only registrations that changed since the last read are read again. `watch` runs when
        the list of members changes (it stays set for later reads). `own_id`: our consumer id
        once registered; if the cached list lacks it, our own create's watch event may still be
        queued behind its answer, so the list is read afresh rather than failing the attempt.
        """
        if watch is not None:
            self._members.on_change = watch
        entries = self._members.read()
        if own_id is not None and own_id not in entries:
            self._members.invalidate()
            entries = self._members.read()
        good: dict[str, Registration] = {}
        bad: dict[str, ZkDataError] = {}
        decoded: dict[str, tuple[bytes, Registration | ZkDataError]] = {}
        for cid, (data, _stat) in entries.items():
            known = self._decoded.get(cid)
            if known is not None and known[0] == data:
                result = known[1]  # every attempt of every member reads all of them: decode each once
            else:
                try:
                    result = Registration.decode(data, znodes.member_path(self.group_id, cid))
                except ZkDataError as exc:
                    result = exc
            decoded[cid] = (data, result)
            if isinstance(result, ZkDataError):
                bad[cid] = result
            else:
                good[cid] = result
        self._decoded = decoded
        return good, bad

    def member_ids(self) -> list[str]:
        """The registered members (no request unless the list changed)."""
        return self._members.names()

    def marked_member_ids(self) -> set[str]:
        """The members that marked themselves as zkconsumer members (Scala members never do)."""
        return set(self._marked.names())

    def owner_threads(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
        """(topic, partition) -> owner thread id, None where there is no node or it is garbled
        (warned about once per version). A node unchanged since the last call costs no request;
        keys not asked for are forgotten."""
        paths = {k: znodes.owner_path(self.group_id, *k) for k in keys}
        found = self._checked.read(list(paths.values()))
        return {
            key: None if (entry := found[path]) is None else _decode_owner(path, entry, self._warn_once)
            for key, path in paths.items()
        }

    def _warn_once(self, path: str, stat: ZnodeStat, message: str, *args: object) -> None:
        """Log a bad node once per version of it, not at every cached read."""
        seen = (path, stat.czxid, stat.mzxid)
        if seen not in self._warned:
            self._warned.add(seen)
            log.warning(message, *args)


def warn(_path: str, _stat: ZnodeStat, message: str, *args: object) -> None:
    """decode_owners' `warn` for one-shot readers: every bad node, every time."""
    log.warning(message, *args)


def decode_owners(
    folder: str, entries: Mapping[str, tuple[bytes, ZnodeStat]], warn: Callable[..., None] = warn
) -> dict[int, str]:
    """partition -> owner thread id from a topic's owner nodes (child name -> (data, stat)).
    Children that are not partition numbers and owner values that cannot be decoded are skipped,
    `warn(path, stat, message, *args)` naming the node."""
    out = {}
    for child, (data, stat) in entries.items():
        path = f"{folder}/{child}"
        if not (child.isascii() and child.isdigit()):
            warn(path, stat, "ignoring %s: not a partition number", path)
            continue
        thread = _decode_owner(path, (data, stat), warn)
        if thread is not None:
            out[int(child)] = thread
    return out


def _decode_owner(path: str, entry: tuple[bytes, ZnodeStat], warn: Callable[..., None]) -> str | None:
    """The owner thread id an owner node holds; None (and `warn`) if its value cannot be decoded."""
    try:
        return znodes.decode_owner(entry[0], path)
    except ZkDataError as exc:
        warn(path, entry[1], "ignoring garbled owner node %s", exc)
        return None
