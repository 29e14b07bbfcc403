"""Plain calls on a KazooClient for the ops library and the CLI: children of a node that may be gone, pipelined reads, a tree delete."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.states import ZnodeStat

from zkconsumer.errors import ZooKeeperAccessDenied

__all__ = ["children", "delete_tree", "exists", "exists_many", "get", "get_children_strict", "get_many"]

K = TypeVar("K")


@contextlib.contextmanager
def _naming_the_node(what: str, path: str) -> Iterator[None]:
    """kazoo's NoAuthError names no node: say which one ZooKeeper refused, and for what."""
    try:
        yield
    except NoAuthError:
        raise ZooKeeperAccessDenied(
            f"ZooKeeper refused to {what} {path}: NoAuth (its ACL does not allow this client's identity)"
        ) from None


def children(client: KazooClient, path: str) -> list[str]:
    """Children of a node that may not exist (then none)."""
    try:
        with _naming_the_node("list", path):
            names: list[str] = client.get_children(path)
        return names
    except NoNodeError:
        return []


def get_children_strict(client: KazooClient, path: str) -> list[str]:
    """Children of a node (NoNodeError when it does not exist)."""
    with _naming_the_node("list", path):
        names: list[str] = client.get_children(path)
    return names


def exists(client: KazooClient, path: str) -> ZnodeStat | None:
    """The node's stat, or None when there is no such node."""
    with _naming_the_node("read", path):
        stat: ZnodeStat | None = client.exists(path)
    return stat


def get(client: KazooClient, path: str) -> tuple[bytes, ZnodeStat]:
    """The node's data and stat (NoNodeError when it is gone)."""
    with _naming_the_node("read", path):
        data, stat = client.get(path)
    return data, stat


def get_many(client: KazooClient, paths: Mapping[K, str] | Iterable[tuple[K, str]]) -> dict[K, tuple[bytes, ZnodeStat]]:
    """key -> (data, stat) for every path read at once (pipelined); a node gone meanwhile is left out."""
    pairs = paths.items() if isinstance(paths, Mapping) else paths
    asyncs = {key: (path, client.get_async(path)) for key, path in pairs}
    out: dict[K, tuple[bytes, ZnodeStat]] = {}
    for key, (path, result) in asyncs.items():
        try:
            with _naming_the_node("read", path):
                data, stat = result.get()
        except NoNodeError:
            continue
        out[key] = (data, stat)
    return out


def exists_many(client: KazooClient, paths: Mapping[K, str]) -> dict[K, ZnodeStat | None]:
    """key -> the node's stat, or None when there is no such node; every path asked at once (pipelined)."""
    asyncs = {key: (path, client.exists_async(path)) for key, path in paths.items()}
    out: dict[K, ZnodeStat | None] = {}
    for key, (path, result) in asyncs.items():
        with _naming_the_node("read", path):
            stat: ZnodeStat | None = result.get()
        out[key] = stat
    return out


def delete_tree(client: KazooClient, path: str) -> None:
    """Delete a node and everything below it (unfenced: for a group known to have no members)."""
    with _naming_the_node("delete", path):
        client.delete(path, recursive=True)
