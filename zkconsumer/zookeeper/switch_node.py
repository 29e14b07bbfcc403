"""The live switch's node written by compare-and-set (docs/live-switch.md): read it with its version, set, create or delete it only as read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import WatchedEvent

from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import _naming_the_node

__all__ = ["SwitchNode", "read_switch_node", "read_switch_node_watched", "registrations_version", "replace_switch_node"]


@dataclass(frozen=True)
class SwitchNode:
    """The switch node as read: its data and version, both None when there is no node."""

    path: str
    data: bytes | None
    version: int | None


def read_switch_node(client: KazooClient, group: str) -> SwitchNode:
    """The group's switch node now (no node: data and version None)."""
    path = znodes.switch_path(group)
    try:
        with _naming_the_node("read", path):
            data, stat = client.get(path)
    except NoNodeError:
        return SwitchNode(path, None, None)
    return SwitchNode(path, data, stat.version)


def read_switch_node_watched(client: KazooClient, group: str, watch: Callable[[WatchedEvent], None]) -> SwitchNode:
    """The group's switch node now, arming `watch` for its next change (its creation too, when there is none)."""
    path = znodes.switch_path(group)
    with _naming_the_node("read", path):
        if client.exists(path, watch=watch) is None:
            return SwitchNode(path, None, None)
        try:
            data, stat = client.get(path)
        except NoNodeError:  # deleted since: the exists watch fires for that
            return SwitchNode(path, None, None)
    return SwitchNode(path, data, stat.version)


def registrations_version(client: KazooClient, group: str) -> int:
    """The child version of the group's `ids/` (-1 without the node): it changes with every registration
    made or gone, so a write planned on one list of members can be checked against the list after it."""
    path = znodes.ids_path(group)
    with _naming_the_node("read", path):
        stat = client.exists(path)
    return -1 if stat is None else int(stat.cversion)


def replace_switch_node(client: KazooClient, read: SwitchNode, data: bytes | None) -> int | None:
    """Put `data` in place of the node as `read` (None: delete it), only if it is still as read.

    Returns the written node's version (-1 after a delete), or None when the node changed since it
    was read (another writer, or the node created or deleted meanwhile): nothing was written; read
    again. A new node's parents are made with the session's default ACL, as a member's marker's are."""
    try:
        with _naming_the_node("write", read.path):
            if read.version is None and data is None:
                return -1 if client.exists(read.path) is None else None
            if read.version is None:
                client.create(read.path, data, makepath=True)
                return 0
            if data is None:
                client.delete(read.path, version=read.version)
                return -1
            stat = client.set(read.path, data, version=read.version)
            return int(stat.version)
    except (BadVersionError, NodeExistsError, NoNodeError):
        return None
