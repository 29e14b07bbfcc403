"""`groups rebalance` on a real ZooKeeper: an owner node no session holds (refused with the way out, then deleted fenced), and a nudge whose answer is lost."""

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


def test_a_nudge_whose_answer_is_lost_is_not_an_error_nor_run_twice(zk, topic_factory, group_id, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The server applies the nudge, the connection drops before its answer: the command reported an
    error and a re-run rebalanced the group twice. Now the ids folder read again says it was applied."""
    from kazoo.exceptions import ConnectionLoss

    from zkconsumer.zookeeper import nudge

    topic = topic_factory()
    member = f"{group_id}_m"
    registration = {"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}
    zk.create(znodes.member_path(group_id, member), json.dumps(registration).encode(), ephemeral=True, makepath=True)
    zk.create(znodes.owner_path(group_id, topic, 0), f"{member}-0".encode(), ephemeral=True, makepath=True)
    real = nudge.nudge_children
    calls = []

    def applied_then_dropped(*args: object) -> object:
        calls.append(real(*args))  # the real transaction on the real server
        raise ConnectionLoss()

    monkeypatch.setattr(nudge, "nudge_children", applied_then_dropped)
    before = zk.exists(znodes.ids_path(group_id)).cversion
    result = unstick(zk, read_plan(zk, group_id), timeout_s=0.5, settle_s=0.1)
    assert len(calls) == 1 and zk.exists(znodes.ids_path(group_id)).cversion == before + 2  # one nudge
    assert result.unowned == []
