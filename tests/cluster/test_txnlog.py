"""zk_txnlog on a real ZooKeeper server's log: a delete, a client's close and a server-side expiry."""

from __future__ import annotations

import time

import pytest

from harness import zk_txnlog
from harness.chaos_proxy import TcpProxy
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.probes import connect_zk

pytestmark = pytest.mark.cluster


def test_node_ends_tell_delete_close_and_expiry_apart(cluster, zk, group_id) -> None:
    if not isinstance(cluster, LocalCluster):
        pytest.fail("reading the transaction log needs the embedded cluster's ZooKeeper data folder")
    base = f"/txnlog-{group_id}"
    chroot = cluster.chroot or ""
    zk.ensure_path(base)
    host, port = cluster.zookeeper_hosts.split(",")[0].rsplit(":", 1)
    proxy = TcpProxy(host, int(port)).start()
    expiring = connect_zk(proxy.address + chroot, timeout=2.0)  # negotiates the 2 s session it asks for
    closing = connect_zk(cluster.zookeeper_connect)
    try:
        expiring.create(f"{base}/deleted", ephemeral=True)
        expiring.create(f"{base}/expired", ephemeral=True)
        closing.create(f"{base}/closed", ephemeral=True)
        expiring.delete(f"{base}/deleted")
        closing.stop()
        closing.close()
        proxy.cut()  # no more heartbeats: the server ends the session itself after 2 s
        deadline = time.monotonic() + 30
        while zk.exists(f"{base}/expired") is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert zk.exists(f"{base}/expired") is None, "the server never expired the cut-off session"
    finally:
        proxy.stop()
        expiring.stop()
        expiring.close()
    ends = zk_txnlog.node_ends(cluster.zookeeper.data_dir, chroot + base)
    causes = {path.rsplit("/", 1)[1]: end.cause for (path, _), end in ends.items()}
    assert causes == {"deleted": "delete", "closed": "close", "expired": "expiry"}
