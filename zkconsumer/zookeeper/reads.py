"""Plain calls on a KazooClient for the ops library and the CLI: children of a node that may be gone, pipelined reads, a tree delete."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

__all__ = ["children", "delete_tree", "exists", "exists_many", "get", "get_children_strict", "get_many"]

K = TypeVar("K")


def children(client: KazooClient, path: str) -> list[str]:
    """Children of a node that may not exist (then none)."""
    try:
        names: list[str] = client.get_children(path)
        return names
    except NoNodeError:
        return []


def get_children_strict(client: KazooClient, path: str) -> list[str]:
    """Children of a node (NoNodeError when it does not exist)."""
    names: list[str] = client.get_children(path)
    return names


def exists(client: KazooClient, path: str) -> ZnodeStat | None:
    """The node's stat, or None when there is no such node."""
    stat: ZnodeStat | None = client.exists(path)
    return stat


def get(client: KazooClient, path: str) -> tuple[bytes, ZnodeStat]:
    """The node's data and stat (NoNodeError when it is gone)."""
    data, stat = client.get(path)
    return data, stat


def get_many(client: KazooClient, paths: Mapping[K, str] | Iterable[tuple[K, str]]) -> dict[K, tuple[bytes, ZnodeStat]]:
    """key -> (data, stat) for every path read at once (pipelined); a node gone meanwhile is left out."""
    pairs = paths.items() if isinstance(paths, Mapping) else paths
    asyncs = {key: client.get_async(path) for key, path in pairs}
    out: dict[K, tuple[bytes, ZnodeStat]] = {}
    for key, result in asyncs.items():
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        out[key] = (data, stat)
    return out


def exists_many(client: KazooClient, paths: Mapping[K, str]) -> dict[K, ZnodeStat | None]:
    """key -> the node's stat, or None when there is no such node; every path asked at once (pipelined)."""
    asyncs = {key: client.exists_async(path) for key, path in paths.items()}
    out: dict[K, ZnodeStat | None] = {}
    for key, result in asyncs.items():
        stat: ZnodeStat | None = result.get()
        out[key] = stat
    return out


def delete_tree(client: KazooClient, path: str) -> None:
    """Delete a node and everything below it (unfenced: for a group known to have no members)."""
    client.delete(path, recursive=True)
