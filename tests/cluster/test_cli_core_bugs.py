"""Core-module bugs found while building the CLI, pinned as strict xfails until the core is fixed."""
from __future__ import annotations

import pytest
from kazoo.exceptions import NoNodeError

from zkconsumer import zkdata
from zkconsumer.group import GroupZk

pytestmark = pytest.mark.cluster


class _CreatesBehindSet:
    """A kazoo client whose first set() fails with NoNode and, before reporting it, lets `other` create
    the node: the interleaving 'our set -> their create -> our create' on a real ZooKeeper."""

    def __init__(self, client, other, path: str) -> None:  # type: ignore[no-untyped-def]
        self._client, self._other, self._path = client, other, path

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._client, name)

    def set(self, path: str, value: bytes, version: int = -1):  # type: ignore[no-untyped-def]
        try:
            return self._client.set(path, value, version)
        except NoNodeError:
            self._other.create(self._path, b"5", makepath=True)  # another tool/member got there first
            raise


@pytest.mark.xfail(strict=True, reason="GroupZk.write_offset_unfenced does not retry set() when create() hits "
                                       "NodeExists (Scala's updatePersistentPath does)")
def test_write_offset_unfenced_survives_a_concurrent_create(cluster, zk, group_id) -> None:
    path = zkdata.offset_path(group_id, "t", 0)
    other = cluster.zk_client()
    try:
        group = GroupZk(_CreatesBehindSet(zk, other, path), group_id, f"{group_id}_ops")
        group.write_offset_unfenced(("t", 0), 42)  # raises NodeExistsError today
        assert zk.get(path)[0] == b"42"
    finally:
        other.stop()
        other.close()
