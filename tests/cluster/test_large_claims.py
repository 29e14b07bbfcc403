"""One member claims 20,000 partitions at once on the real ZooKeeper: the claim is split into
transactions under zkconsumer.zookeeper.transaction.max.bytes (one would be ~2.8 MB, which
the server refuses above jute.maxbuffer, 1 MiB)."""

from __future__ import annotations

import json
import logging
import time

import pytest
from kazoo.client import KazooClient

from zkconsumer import ConsumerConnector
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

PARTITIONS = 20_000


def test_one_member_claims_twenty_thousand_partitions(cluster, zk, group_id, caplog) -> None:  # type: ignore[no-untyped-def]
    # The topic lives only in a chroot of its own: the broker never sees it, so it creates no
    # 20,000 logs; the member needs nothing of Kafka with fetch=False.
    chroot = f"/large-claims-{group_id}"
    root = KazooClient(hosts=cluster.zookeeper.hosts)
    root.start(timeout=30)
    try:
        broker_id = sorted(zk.get_children(znodes.BROKER_IDS))[0]
        registration, _ = zk.get(f"{znodes.BROKER_IDS}/{broker_id}")
        root.create(f"{chroot}{znodes.BROKER_IDS}/{broker_id}", registration, makepath=True)
        assignment = {str(p): [int(broker_id)] for p in range(PARTITIONS)}
        root.create(
            f"{chroot}{znodes.BROKER_TOPICS}/huge",
            json.dumps({"version": 1, "partitions": assignment}).encode(),
            makepath=True,
        )
        member = ConsumerConnector(
            {
                "zookeeper.connect": f"{cluster.zookeeper.hosts}{chroot}",
                "group.id": group_id,
                "zookeeper.session.timeout.ms": 30000,
                "rebalance.backoff.ms": 500,
            },
            fetch=False,
        )
        try:
            began = time.monotonic()
            with caplog.at_level(logging.WARNING, logger="zkconsumer.coordinator.rebalancer"):
                member.create_message_streams({"huge": 1})
            took = time.monotonic() - began
            owners = root.get_children(f"{chroot}{znodes.owners_path(group_id, 'huge')}")
            assert len(owners) == PARTITIONS and len(member.owned_partitions()) == PARTITIONS, took
            # Closing this session writes one transaction with all 20,000 paths: the member says so.
            assert any("the transaction that closes its session will weigh" in r.getMessage() for r in caplog.records)
        finally:
            member.shutdown()
        assert root.get_children(f"{chroot}{znodes.owners_path(group_id, 'huge')}") == []  # released on leave
        if isinstance(cluster, LocalCluster):
            # ...which the server must read back when it restarts (ZOOKEEPER-4306: this took the test
            # cluster's ZooKeeper down for good before it was given zookeeper.jute.maxbuffer.extrasize).
            cluster.restart_zookeeper(timeout=60)
            assert zk.exists("/") is not None  # the session fixture reconnects once the server is back
    finally:
        root.delete(chroot, recursive=True)
        root.stop()
        root.close()
