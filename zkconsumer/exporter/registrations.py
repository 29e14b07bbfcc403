"""The groups' member registrations and sessions for the web page, behind watches (a refresh after nothing changed asks nothing)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from zkconsumer.errors import ZkDataError, ZooKeeperAccessDenied
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched import WatchedFolder
from zkconsumer.zookeeper.znodes import Registration


class Registrations:
    """Per group, each registered member's session, registration node's creation time and
    registration document, read by the refresh thread (`update`) and served to HTTP threads
    (`members`). Each group's `ids` folder is a WatchedFolder: its list and nodes are re-read only
    where a watch fired, so this costs requests when members come and go, none at steady state.

    Example::

        registrations = Registrations(ZkIO(client, 10.0))
        registrations.update(["billing"])
        registrations.members("billing")   # [{"id": ..., "session": "0x...", ...}, ...]
    """

    def __init__(self, io: ZkIO) -> None:
        self.io = io
        self._folders: dict[str, WatchedFolder] = {}
        self._forgotten_requests = 0
        self._lock = threading.Lock()
        self._members: dict[str, list[dict[str, Any]]] = {}

    @property
    def requests(self) -> int:
        """ZooKeeper requests sent so far for registrations."""
        return self._forgotten_requests + sum(f.requests for f in self._folders.values())

    def invalidate(self) -> None:
        """Re-read everything next time (the session was lost, and its watches with it)."""
        for folder in self._folders.values():
            folder.invalidate()

    def update(self, groups: Iterable[str]) -> None:
        """Read (what changed of) these groups' registrations; forget every other group."""
        wanted = set(groups)
        for gone in [g for g in self._folders if g not in wanted]:
            self._forgotten_requests += self._folders.pop(gone).requests
        found: dict[str, list[dict[str, Any]]] = {}
        for group in sorted(wanted):
            folder = self._folders.get(group)
            if folder is None:
                folder = self._folders[group] = WatchedFolder(self.io, znodes.ids_path(group))
            try:
                entries = folder.read()
            except ZooKeeperAccessDenied:
                # One group's ids/ locked against the exporter's identity: that group's registrations
                # are unknown (its members show without them), never a failed refresh of every group.
                folder.invalidate()
                found[group] = []
                continue
            found[group] = [
                _member(group, cid, data, stat.ephemeralOwner, stat.ctime)
                for cid, (data, stat) in sorted(entries.items())
            ]
        with self._lock:
            self._members = found

    def members(self, group: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._members.get(group, ()))


def _member(group: str, consumer_id: str, data: bytes, session: int, ctime_ms: int) -> dict[str, Any]:
    """One registration as the page shows it (`error` names the node when it cannot be decoded)."""
    out: dict[str, Any] = {"id": consumer_id, "session": f"0x{session:x}", "registered_ms": ctime_ms}
    try:
        registration = Registration.decode(data, znodes.member_path(group, consumer_id))
    except (ZkDataError, ValueError) as exc:
        return {**out, "error": str(exc)}
    return {
        **out,
        "pattern": registration.pattern,
        "subscription": dict(registration.subscription),
        "version": registration.version,
        "timestamp": registration.timestamp,
    }
