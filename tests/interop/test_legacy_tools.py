"""The Kafka 1.1.1 ops tools read a zkconsumer group's ZooKeeper state as they read a Scala group's."""

from __future__ import annotations

import pytest

from harness.members import committed_offsets, keys_of, owner_table
from harness.scala import describe_group, export_zk_offsets, parse_describe, verify_consumer_rebalance

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def test_legacy_tools_read_a_zkconsumer_group(mixed, zk, topic_factory, produce, tmp_path) -> None:
    topic = topic_factory(partitions=6)
    g, zk_connect = mixed.group, mixed.cluster.zookeeper_connect
    # No auto-commit: committed offsets (and so the lag) are exactly what we commit below.
    p1 = mixed.add_py("p1", {topic: 2}, auto_commit_enable=False)
    p2 = mixed.add_py("p2", {topic: 1}, auto_commit_enable=False)
    owners = mixed.balanced([topic])
    first = produce(topic, 60, partitions=6)  # 10 per partition
    mixed.wait_for(keys_of(first))
    p1.commit_offsets()
    p2.commit_offsets()
    mixed.wait_for(keys_of(produce(topic, 30, partitions=6, start=60)))  # consumed, not committed
    assert committed_offsets(zk, g, topic) == {p: 10 for p in range(6)}

    # ConsumerGroupCommand --zookeeper --describe (1.1.1 columns; CONSUMER-ID = owner minus "-n").
    rows = parse_describe(describe_group(zk_connect, g))
    assert sorted((r["TOPIC"], int(r["PARTITION"])) for r in rows) == sorted(owners)
    for row in rows:
        key = (row["TOPIC"], int(row["PARTITION"]))
        assert (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"]) == ("10", "15", "5"), row
        assert row["CONSUMER-ID"] == owners[key].rsplit("-", 1)[0], row
    assert {r["CONSUMER-ID"] for r in rows} == {p1.consumer_id, p2.consumer_id}

    # VerifyConsumerRebalance: every partition owned by a thread subscribed to its topic.
    assert "Rebalance operation successful !" in verify_consumer_rebalance(zk_connect, g)

    # ExportZkOffsets: one "/consumers/G/offsets/T/p:offset" line per committed offset.
    exported = export_zk_offsets(zk_connect, g, tmp_path / "offsets.txt")
    assert sorted(exported.split()) == sorted(
        f"/consumers/{g}/offsets/{topic}/{p}:{o}" for p, o in committed_offsets(zk, g, topic).items()
    )
    assert owner_table(zk, g, [topic]) == owners  # the tools changed nothing
