"""GroupZk.commit_offsets on the in-memory ZooKeeper: offsets of many partitions go out in a few
pipelined rounds, each write fenced by our owner node; another member's partition is refused."""

from __future__ import annotations

import pytest

from harness.zkmodel import ZkModel
from zkconsumer.errors import CommitFailed
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk


def _member(model: ZkModel, name: str) -> GroupZk:
    client = model.client(name)
    client.start()
    group = GroupZk(client, "g", f"g_{name}", timeout_s=0.0)
    group.register(b"{}")
    return group


def _requests(model: ZkModel) -> list[str]:
    seen: list[str] = []
    model.set_fault_hook(lambda client, op, path: seen.append(op) if getattr(client, "name", "") == "me" else None)
    return seen


def test_offsets_of_our_partitions_are_written_and_another_members_is_refused() -> None:
    model = ZkModel()
    me, other = _member(model, "me"), _member(model, "other")
    ours = {("t", p): "g_me-0" for p in range(12)}
    assert me.claim(ours) == []
    assert other.claim({("t", 12): "g_other-0"}) == []
    requests = _requests(model)
    offsets = {**{k: 100 + k[1] for k in ours}, ("t", 12): 7}
    written = me.commit_offsets(offsets, {**ours, ("t", 12): "g_me-0"})
    assert written == {**{k: True for k in ours}, ("t", 12): False}
    assert {p: int(model.data(znodes.offset_path("g", "t", p))) for p in range(12)} == {p: 100 + p for p in range(12)}
    assert not model.exists(znodes.offset_path("g", "t", 12))
    # One read of each owner node, one of each offset node, one multi each: no retries.
    assert requests.count("multi") == 12 and len(requests) <= 13 * 3 + 4


def test_a_write_whose_owner_node_changed_in_between_is_not_written() -> None:
    model = ZkModel()
    me = _member(model, "me")
    key = ("t", 0)
    assert me.claim({key: "g_me-0"}) == []
    read = me.owner_nodes._read_owner_nodes

    def then_rewritten(keys):  # type: ignore[no-untyped-def]
        found = read(keys)
        model_client = me.client
        model_client.set(znodes.owner_path("g", "t", 0), znodes.encode_owner("g_me-0"))  # version moves
        return found

    me.owner_nodes._read_owner_nodes = then_rewritten  # type: ignore[method-assign]
    with pytest.raises(CommitFailed, match="t-0"):
        me.commit_offsets({key: 5}, {key: "g_me-0"}, attempts=2)
    assert not model.exists(znodes.offset_path("g", "t", 0))
