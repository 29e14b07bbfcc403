"""`groups rebalance` on a real ZooKeeper with an owner node no session holds (ephemeralOwner 0): refused with the way out, then deleted (fenced) and nudged."""

from __future__ import annotations

import json

import pytest

from zkconsumer.admin import read_plan, unstick
from zkconsumer.errors import AdminRefused
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]


def test_a_persistent_owner_node_is_deleted_only_when_asked_and_unchanged(zk, topic_factory, group_id) -> None:  # type: ignore[no-untyped-def]
    topic = topic_factory()
    member = f"{group_id}_m"
    registration = {"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}
    zk.create(znodes.member_path(group_id, member), json.dumps(registration).encode(), ephemeral=True, makepath=True)
    owner = znodes.owner_path(group_id, topic, 0)
    zk.create(owner, f"{member}-0".encode(), makepath=True)  # persistent: as a copy tool restores it
    refused = read_plan(zk, group_id)
    assert [b.node for b in refused.blockers] == [owner] and "--delete-persistent-owners" in refused.blockers[0].remedy
    with pytest.raises(AdminRefused):
        unstick(zk, refused, timeout_s=0.5)
    assert zk.exists(owner) is not None  # refused: nothing written
    planned = read_plan(zk, group_id, delete_persistent=True)
    zk.set(owner, f"{member}-0".encode())  # changed after the plan: the fence holds
    with pytest.raises(AdminRefused, match="changed since the plan"):
        unstick(zk, planned, timeout_s=0.5)
    assert zk.exists(owner) is not None
    planned = read_plan(zk, group_id, delete_persistent=True)
    result = unstick(zk, planned, timeout_s=0.5, settle_s=0.1)  # no real member claims it: it times out
    assert zk.exists(owner) is None and result.unowned == [(topic, 0)]
