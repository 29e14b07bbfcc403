"""Checks shared by the secured-group tests (DIGEST-MD5 and Kerberos): ACLs, committed offsets, who owns what."""

from __future__ import annotations

import time

from harness.members import committed_offsets


def acls(zk, path: str) -> frozenset[tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    """(scheme, id, perms) of every ACL entry of the node."""
    return frozenset((a.id.scheme, a.id.id, a.perms) for a in zk.get_acls(path)[0])


def wait_committed(
    zk,
    group: str,
    topic: str,
    offset: int,
    timeout: float = 20.0,  # type: ignore[no-untyped-def]
    *,
    partitions: int = 4,
) -> None:
    """Until every one of the topic's `partitions` has `offset` committed."""
    want = {p: offset for p in range(partitions)}
    deadline = time.monotonic() + timeout
    while (have := committed_offsets(zk, group, topic)) != want:
        if time.monotonic() > deadline:
            raise AssertionError(f"committed offsets of {group} are {have}, expected {want}")
        time.sleep(0.1)


def owners_of(owners: dict[tuple[str, int], str], group: str, name: str) -> set[int]:
    """Partitions whose owner thread belongs to member `name` of `group`."""
    return {p for (_, p), thread in owners.items() if thread.rsplit("-", 1)[0] == f"{group}_{name}"}
