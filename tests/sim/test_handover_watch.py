"""GroupZk.watch_until_free on the in-memory ZooKeeper: a claimer blocked by another member's owner
nodes is woken when the last of them is deleted, not after a fixed back-off."""
from __future__ import annotations

from zkconsumer import zkdata
from zkconsumer.group import GroupZk
from zkconsumer.testing.zkmodel import ZkModel


def _owner(client, group: str, topic: str, partition: int) -> str:  # type: ignore[no-untyped-def]
    path = zkdata.owner_path(group, topic, partition)
    client.ensure_path(zkdata.owners_path(group, topic))
    client.create(path, zkdata.encode_owner(f"{group}_other-0"), ephemeral=True)
    return path


def test_wakes_when_the_last_blocking_owner_node_is_deleted() -> None:
    model = ZkModel()
    other, me = model.client("other"), model.client("me")
    other.start()
    me.start()
    paths = [_owner(other, "g", "t", p) for p in (0, 1)]
    group = GroupZk(me, "g", "g_me", timeout_s=0.0)
    woken: list[bool] = []
    assert group.watch_until_free([("t", 0), ("t", 1)], lambda: woken.append(True)) is False
    other.delete(paths[0])
    model.deliver()
    assert woken == []  # t-1 is still held
    other.delete(paths[1])
    model.deliver()
    assert woken == [True]


def test_already_free_and_session_end() -> None:
    model = ZkModel()
    other, me = model.client("other"), model.client("me")
    other.start()
    me.start()
    group = GroupZk(me, "g", "g_me", timeout_s=0.0)
    assert group.watch_until_free([("t", 0)], lambda: None) is True  # nothing in the way
    _owner(other, "g", "t", 0)
    woken: list[bool] = []
    assert group.watch_until_free([("t", 0)], lambda: woken.append(True)) is False
    model.expire(other)  # a crashed owner: its node goes with its session
    model.deliver()
    assert woken == [True]
