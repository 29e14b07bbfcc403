"""A group's ids folder the exporter may not read (NoAuth) leaves that group out, named, and every other group served: the view's refresh and the page's registrations."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl

from zkconsumer.exporter.registrations import Registrations
from zkconsumer.exporter.view import ClusterView
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO

pytestmark = [pytest.mark.cluster]

REGISTRATION = json.dumps({"version": 1, "subscription": {"t": 1}, "pattern": "static", "timestamp": "1"}).encode()


def test_a_locked_ids_folder_hides_its_group_only(cluster, zk, group_id) -> None:  # type: ignore[no-untyped-def]
    """It once raised ZooKeeperAccessDenied out of update, and the exporter's every refresh failed
    (no group's metrics moved again) for as long as that one group existed."""
    locked, open_ = f"{group_id}-locked", f"{group_id}-open"
    owner = KazooClient(cluster.zookeeper_connect, auth_data=[("digest", "ops:s3cret")])
    owner.start()
    try:
        owner.create(znodes.ids_path(locked), acl=[make_digest_acl("ops", "s3cret", all=True)], makepath=True)
        owner.create(znodes.member_path(locked, "m"), REGISTRATION)
        zk.create(znodes.member_path(open_, "a"), REGISTRATION, makepath=True)
        registrations = Registrations(ZkIO(zk, 10.0, identity="the exporter"))
        registrations.update([locked, open_])
        assert registrations.members(locked) == []
        assert [(m["id"], m["subscription"]) for m in registrations.members(open_)] == [("a", {"t": 1})]
        # The view: one refresh failing on that group once failed for all of them.
        view = ClusterView(ZkIO(zk, 10.0, identity="the exporter"), None, window_s=10, interval_s=1)
        state = view.refresh()
        assert open_ in state.groups and locked not in state.groups
        assert f"/consumers/{locked}/ids" in state.unreadable[locked] and "NoAuth" in state.unreadable[locked]
        # Readable again (the ACL opened): read on the next update.
        owner.set_acls(
            znodes.ids_path(locked),
            [make_digest_acl("ops", "s3cret", all=True), make_acl("world", "anyone", read=True)],
        )
        registrations.update([locked, open_])
        assert [m["id"] for m in registrations.members(locked)] == ["m"]
        state = view.refresh()
        assert locked in state.groups and locked not in state.unreadable
    finally:
        for group in (locked, open_):
            owner.delete(znodes.group_path(group), recursive=True)
        owner.stop()
        owner.close()
