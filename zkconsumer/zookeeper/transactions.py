"""Pure: split the operations of a large ZooKeeper transaction into transactions under a byte budget.

A ZooKeeper server drops the connection on any request larger than its `jute.maxbuffer`
(1 MiB less one byte by default), and a claim is one create per partition (~140 bytes each),
so one member taking ~7,300 partitions at once used to lose its connection instead of claiming.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

K = TypeVar("K")

# A create inside a multi, besides its path and data: the multi's op header (type, done, err),
# the length prefixes, the flags, and an ACL list (world:anyone, or a digest ACL of ~60 bytes).
CREATE_OVERHEAD = 128


def create_size(path: str, data: bytes) -> int:
    """An upper bound on what one create adds to a multi request, in bytes."""
    return CREATE_OVERHEAD + len(path.encode()) + len(data)


def claim_size(path: str, data: bytes) -> int:
    """An upper bound on one owner node's claim in a multi: its create and the set that moves it to
    version 1 (owner_nodes.OwnerNodes: our nodes never sit at a fresh node's version 0)."""
    return 2 * create_size(path, data)


def batches(items: Iterable[tuple[K, int]], budget: int) -> Iterator[list[K]]:
    """Consecutive groups of keys whose sizes add up to at most `budget` (an item larger than the
    budget alone makes a group of its own, which the server may then refuse)."""
    group: list[K] = []
    used = 0
    for key, size in items:
        if group and used + size > budget:
            yield group
            group, used = [], 0
        group.append(key)
        used += size
    if group:
        yield group


# The transaction that closes a session, besides its paths: the txn header and the vector's count.
CLOSE_SESSION_OVERHEAD = 64


def close_session_size(paths: Iterable[str]) -> int:
    """What the transaction that closes a session holding ephemeral nodes at `paths` (full paths,
    chroot included) weighs on a ZooKeeper 3.6+ server, which writes every such path into it. A
    server reads its log back only up to jute.maxbuffer + zookeeper.jute.maxbuffer.extrasize
    (2 × jute.maxbuffer by default), so a heavier one keeps it from restarting (ZOOKEEPER-4306)."""
    return CLOSE_SESSION_OVERHEAD + sum(4 + len(path.encode()) for path in paths)
