"""The release linger with a real Scala 1.1.1 joiner: a zkconsumer member that hands a partition to a
member without a zkconsumer marker keeps its owner node zkconsumer.release.linger.ms after the
commit, so a Scala claim based on offsets read before that commit fails and is retried; between
zkconsumer members the node goes at once. (The race itself is measured over many hand-overs by
scripts/bench/handover.py --mixed.)"""

from __future__ import annotations

import threading
import time

import pytest

from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


class NodeClock:
    """When the offset node of a partition first held `offset`, and when its owner node was deleted."""

    def __init__(self, zk, group: str, topic: str, partition: int, offset: int) -> None:  # type: ignore[no-untyped-def]
        self.committed_at: float | None = None
        self.deleted_at: float | None = None
        self.done = threading.Event()
        first: list[bytes | None] = []

        def on_offset(data, _stat, _event=None) -> None:  # type: ignore[no-untyped-def]
            if data == str(offset).encode() and self.committed_at is None:
                self.committed_at = time.monotonic()

        def on_owner(data, _stat, _event=None) -> None:  # type: ignore[no-untyped-def]
            # kazoo re-reads after the deletion event: a new owner quick enough is all it may see.
            if not first:
                first.append(data)
            elif data != first[0] and self.deleted_at is None:
                self.deleted_at = time.monotonic()
                self.done.set()

        zk.DataWatch(znodes.offset_path(group, topic, partition), on_offset)
        zk.DataWatch(znodes.owner_path(group, topic, partition), on_owner)

    def kept_after_commit(self, timeout: float = 60.0) -> float:
        assert self.done.wait(timeout), "the owner node was never deleted"
        assert self.committed_at is not None, "the old owner did not commit before releasing"
        return self.deleted_at - self.committed_at  # type: ignore[operator]


def _owned_and_consumed(mixed, topic_factory, produce, linger_ms: int) -> str:  # type: ignore[no-untyped-def]
    topic = topic_factory(partitions=2)
    produce(topic, 40, partitions=2)  # 20 per partition
    mixed.add_py("a-py", {topic: 1}, **{"zkconsumer.release.linger.ms": linger_ms})
    mixed.wait_for({(topic, p, o) for p in (0, 1) for o in range(20)}, timeout=60)
    assert mixed.zk.exists(znodes.zkconsumer_member_path(mixed.group, f"{mixed.group}_a-py")) is not None
    return topic


def test_a_partition_handed_to_a_scala_member_stays_owned_for_the_linger(mixed, topic_factory, produce) -> None:
    topic = _owned_and_consumed(mixed, topic_factory, produce, linger_ms=1500)
    clock = NodeClock(mixed.zk, mixed.group, topic, 1, 20)
    mixed.add_scala("b-scala", {topic: 1})  # range: a-py-0 keeps partition 0, b-scala-0 takes 1
    mixed.wait_ready()
    assert clock.kept_after_commit() >= 1.5
    mixed.balanced([topic])
    assert mixed.zk.exists(znodes.zkconsumer_member_path(mixed.group, f"{mixed.group}_b-scala")) is None
    produce(topic, 10, partitions=2)
    mixed.wait_for({(topic, 1, o) for o in range(20, 25)}, timeout=60)
    again = [o for t, p, o in mixed.deliveries("b-scala") if p == 1 and o < 20]
    assert again == [], f"the Scala member delivered again {again}"


def test_a_partition_handed_to_a_zkconsumer_member_goes_at_once(mixed, topic_factory, produce) -> None:
    topic = _owned_and_consumed(mixed, topic_factory, produce, linger_ms=3000)
    clock = NodeClock(mixed.zk, mixed.group, topic, 1, 20)
    mixed.add_py("b-py", {topic: 1})
    assert clock.kept_after_commit() < 3.0  # a linger would have kept it at least 3 s (the most it may be)
    mixed.balanced([topic])
