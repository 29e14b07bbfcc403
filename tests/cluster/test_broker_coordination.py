"""ConsumerConnector with zkconsumer.coordination=broker on the real cluster: the same API over the brokers' group."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from harness import member, members, python_env
from harness.members import Recorder, drain, keys_of
from zkconsumer import ConsumerConnector, ConsumerTimeout, Whitelist
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster


def broker_connector(cluster, group: str, *, bootstrap: bool = True, **props: object) -> ConsumerConnector:
    config: dict[str, object] = {
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": group,
        **members.FAST,
        "zkconsumer.coordination": "broker",
        **{k.replace("_", "."): v for k, v in props.items()},
    }
    if bootstrap:
        config["librdkafka.bootstrap.servers"] = cluster.bootstrap_servers
    return ConsumerConnector(config)


def group_offsets(cluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    """What kafka-consumer-groups --describe shows as CURRENT-OFFSET, through the AdminClient."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    answer = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions if tp.offset >= 0}


def group_state(cluster, group: str) -> tuple[str, int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    found = admin.describe_consumer_groups([group])[group].result(timeout=30)
    return found.state.name, len(found.members)


def wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


def test_the_same_api_over_the_brokers_group(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=6)
    sent = produce(topic, 600, partitions=6)
    recorder = Recorder()
    # no librdkafka.bootstrap.servers: the brokers are read from ZooKeeper's registrations
    with broker_connector(cluster, group_id, bootstrap=False, auto_commit_enable=False) as conn:
        streams = conn.create_message_streams({topic: 2})
        assert set(conn.owned_partitions()) == {(topic, p) for p in range(6)}
        assert sorted(set(conn.owned_partitions().values())) == [f"{conn.consumer_id}-0", f"{conn.consumer_id}-1"]
        drain("c1", streams[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        conn.commit_offsets()
        assert group_offsets(cluster, group_id, topic, 6) == {p: 100 for p in range(6)}
        assert conn.owned_positions() == {(topic, p): 100 for p in range(6)}
        assert group_state(cluster, group_id) == ("STABLE", 1)
        assert conn.metrics() is not None
    assert recorder.keys() == {k: 1 for k in keys_of(sent)}
    assert group_state(cluster, group_id) == ("EMPTY", 0)
    assert zk.exists(znodes.group_path(group_id)) is None  # nothing written to ZooKeeper


def test_rebalance_between_two_members_loses_nothing(cluster, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=6)
    recorder = Recorder()
    first = produce(topic, 300, partitions=6)
    a = broker_connector(cluster, group_id, auto_commit_interval_ms=200)
    b = None
    try:
        drain("a", a.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(first), timeout=60)
        b = broker_connector(cluster, group_id, auto_commit_interval_ms=200)
        b_stream = b.create_message_streams({topic: 1})[topic][0]
        got_b: list[tuple[int, int]] = []

        def read_batches() -> None:
            while True:
                try:
                    for batch in b_stream.batches():
                        for msg in batch:
                            recorder.add("b", msg.topic(), msg.partition(), msg.offset(), msg.value())
                            got_b.append((msg.partition(), msg.offset()))
                    return
                except ConsumerTimeout:
                    continue

        threading.Thread(target=read_batches, name="drain-b", daemon=True).start()
        wait_until(lambda: len(a.owned_partitions()) == 3 and len(b.owned_partitions()) == 3, 60, "a 3/3 split")
        assert set(a.owned_partitions()).isdisjoint(b.owned_partitions())
        second = produce(topic, 300, partitions=6)
        recorder.wait_for(keys_of(second), timeout=60)
        assert got_b, "the member that joined delivered nothing"
        a.shutdown()  # its partitions move to b, from a's final commit
        wait_until(lambda: len(b.owned_partitions()) == 6, 60, "b owns all six")
        third = produce(topic, 300, partitions=6)
        recorder.wait_for(keys_of(third), timeout=60)
    finally:
        a.shutdown()
        if b is not None:
            b.shutdown()
    counts = recorder.keys()
    assert set(counts) == keys_of(first + second + third)  # nothing lost, nothing from elsewhere
    # at-least-once: a message being handled when its partition was revoked is handed out again
    # (at most one per partition per hand-over: two hand-overs of six partitions)
    assert sum(n - 1 for n in counts.values()) <= 12, counts.most_common(5)
    assert group_offsets(cluster, group_id, topic, 6) == {p: 150 for p in range(6)}


def test_a_whitelist_follows_new_topics(cluster, topic_factory, produce, group_id) -> None:
    prefix = f"wl{group_id[-6:]}"
    one = topic_factory(partitions=2, name=f"{prefix}-a")
    sent = produce(one, 20, partitions=2)
    recorder = Recorder()
    with broker_connector(cluster, group_id) as conn:
        drain("w", conn.create_message_streams_by_filter(Whitelist(f"{prefix}-.*"), 1), recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        two = topic_factory(partitions=2, name=f"{prefix}-b")
        later = produce(two, 20, partitions=2)
        recorder.wait_for(keys_of(later), timeout=60)
    assert recorder.keys() == {k: 1 for k in keys_of(sent + later)}


def test_kill_minus_9_of_a_member_moves_its_partitions_without_loss(
    cluster, topic_factory, produce, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=6)
    out = tmp_path / "victim.txt"
    props = {
        **members.FAST,
        "zkconsumer.coordination": "broker",
        "librdkafka.bootstrap.servers": cluster.bootstrap_servers,
        "auto.commit.interval.ms": 500,
    }
    victim = subprocess.Popen(
        member.command(cluster.zookeeper_connect, group_id, topic, out, properties=props),
        stdout=subprocess.PIPE,
        stderr=open(str(out) + ".log", "w"),
        text=True,
        env=python_env(),
    )
    recorder = Recorder()
    survivor = broker_connector(cluster, group_id, auto_commit_interval_ms=500)
    try:
        assert victim.stdout is not None and victim.stdout.readline(), open(str(out) + ".log").read()[-2000:]
        drain("survivor", survivor.create_message_streams({topic: 1})[topic], recorder)
        wait_until(lambda: len(survivor.owned_partitions()) == 3, 60, "a 3/3 split")
        first = produce(topic, 600, partitions=6)
        wait_until(lambda: victim_log(out) | set(recorder.keys()) >= keys_of(first), 60, "the first batch consumed")
        time.sleep(1.2)  # the victim auto-commits
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed_at = time.monotonic()
        wait_until(lambda: len(survivor.owned_partitions()) == 6, 60, "the survivor owns all six")
        moved_after = time.monotonic() - killed_at
        second = produce(topic, 600, partitions=6, start=600)
        recorder.wait_for(keys_of(second), timeout=60)
    finally:
        survivor.shutdown()
        if victim.poll() is None:
            victim.kill()
    by_victim = victim_log(out)
    assert by_victim, "the victim delivered nothing: the test shows nothing"
    assert keys_of(first) | keys_of(second) <= by_victim | set(recorder.keys()), "messages lost"
    again = by_victim & set(recorder.keys())  # delivered by both: only what the victim had not committed
    assert len(again) <= 300, len(again)
    assert moved_after < 30, moved_after  # the brokers' session (6 s) plus a rebalance


def victim_log(path) -> set[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {(t, int(p), int(o)) for t, p, o in (line.split() for line in f if line.strip())}
