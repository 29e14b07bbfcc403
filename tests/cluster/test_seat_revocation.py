"""The live switch's seat holds a revocation by the brokers until its member released the partition (issue #54, the rolling restart at `broker`).

From `handover` a ZooKeeper-mode member delivers what its seat is assigned, and the owner node is
the lock between such members. The last step off ZooKeeper, a rolling restart with
`zkconsumer.coordination=broker`, puts members in the brokers' group that take no owner node: they
start delivering a partition as soon as the brokers assign it, from Kafka's committed offset. The
seat gave a revoked partition back at once (before its member had stopped delivering it, or
committed it to Kafka), so the newcomer could deliver it beside the old owner, from an older
offset. Here a real seat sits in the brokers' group beside a plain cooperative-sticky Consumer (what
a broker-coordinated member is), its member "holding" the partitions until the test releases them.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer

from zkconsumer.broker_coordination.shadow import ShadowGroupMember

pytestmark = pytest.mark.cluster


class Newcomer:
    """A cooperative-sticky Consumer in the group (a broker-coordinated member): when it was assigned what."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.assigned: dict[tuple[str, int], float] = {}
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 6000,
                "enable.auto.commit": False,
            }
        )
        self._consumer.subscribe([topic], on_assign=self._on_assign)
        self._thread = threading.Thread(target=self._poll, name="test-newcomer", daemon=True)
        self._thread.start()

    def _on_assign(self, consumer: Consumer, partitions: list) -> None:  # type: ignore[type-arg]
        consumer.incremental_assign(partitions)
        for tp in partitions:
            self.assigned[(tp.topic, tp.partition)] = time.monotonic()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.1)
        self._consumer.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(15)


def _until(what: str, check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    ends = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < ends, f"never: {what}"
        time.sleep(0.05)


def test_a_revoked_partition_reaches_a_broker_coordinated_member_only_once_its_owner_released_it(
    cluster, topic_factory, group_id
) -> None:
    topic = topic_factory(partitions=2)
    keys = {(topic, 0), (topic, 1)}
    held = set(keys)  # the member holds both owner nodes
    changes: list[str] = []
    failures: list[BaseException] = []
    seat = ShadowGroupMember(
        f"{group_id}_a",
        [topic],
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group_id, "session.timeout.ms": 6000},
        on_change=changes.append,
        on_failure=failures.append,
        holding=lambda: set(held),
        revoke_wait_s=20.0,
    )
    seat.start()
    newcomer = None
    try:
        _until("the seat is assigned both partitions", lambda: seat.assigned() == keys)
        newcomer = Newcomer(cluster.bootstrap_servers, group_id, topic)
        _until("the brokers revoke one partition from the seat", lambda: len(seat.assigned() or keys) == 1)
        (moved,) = keys - (seat.assigned() or set())
        # The member still delivers it: the brokers must not hand it on. Its commits go on meanwhile.
        assert seat.commit({moved: 7}, 5.0) == {moved: 7}
        time.sleep(2.0)
        assert moved not in newcomer.assigned, "the partition reached the newcomer while its owner still held it"
        released_at = time.monotonic()
        held.discard(moved)  # the member stopped delivering it, committed, deleted its owner node
        _until("the newcomer is assigned the released partition", lambda: moved in newcomer.assigned)
        assert newcomer.assigned[moved] >= released_at
        assert failures == []
    finally:
        seat.leave()
        assert seat.wait_left(15.0)
        if newcomer is not None:
            newcomer.close()
