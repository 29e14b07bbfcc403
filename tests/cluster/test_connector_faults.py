"""ConsumerConnector under faults: a member kill -9'd, its ZooKeeper session expired, a broker bounce."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from kazoo.client import KazooClient

from harness import member, members, python_env
from harness.members import Recorder, committed_offsets, drain, keys_of, owner_table, wait_for_balanced
from zkconsumer import ConsumerConnector

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "rebalance.max.retries": 30}


def spawn_member(cluster, group: str, topic: str, out, **props: object) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    proc = subprocess.Popen(
        member.command(cluster.zookeeper_connect, group, topic, out, properties={**FAST, **props}),
        stdout=subprocess.PIPE,
        stderr=open(str(out) + ".log", "w"),
        text=True,
        env=python_env(),
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line, f"member process died: {open(str(out) + '.log').read()[-2000:]}"
    proc.consumer_id = json.loads(line)["consumer_id"]  # type: ignore[attr-defined]
    return proc


def read_member_log(path) -> set[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {(t, int(p), int(o)) for t, p, o in (line.split() for line in f if line.strip())}


def test_kill_minus_9_member_partitions_move_without_loss(
    cluster, zk, topic_factory, produce, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=6)
    out = tmp_path / "victim.txt"
    victim = spawn_member(cluster, group_id, topic, out, **{"auto.commit.interval.ms": 1000})
    recorder = Recorder()
    survivor = ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **FAST})
    try:
        drain("survivor", survivor.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=2)
        first = produce(topic, 600, partitions=6)
        deadline = time.monotonic() + 60
        while (read_member_log(out) | set(recorder.keys())) < keys_of(first):
            assert time.monotonic() < deadline, "first batch not consumed"
            time.sleep(0.1)
        time.sleep(1.5)  # let the victim auto-commit once
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed_at = time.monotonic()
        owners = wait_for_balanced(zk, group_id, [topic], members=1, timeout=60)
        moved_after = time.monotonic() - killed_at
        assert set(owners.values()) == {f"{survivor.consumer_id}-0"}
        second = produce(topic, 600, partitions=6, start=600)
        recorder.wait_for(keys_of(second), timeout=60)
    finally:
        survivor.shutdown()
        if victim.poll() is None:
            victim.kill()
    delivered = read_member_log(out) | set(recorder.keys())
    assert keys_of(first) | keys_of(second) <= delivered, "messages lost"
    # The session timeout (6 s) bounds the move, plus a rebalance.
    assert moved_after < 30, moved_after


def test_session_expiry_is_survived(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=4)
    recorder = Recorder()
    conn = ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **FAST})
    try:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        first = produce(topic, 100, partitions=4)
        recorder.wait_for(keys_of(first), timeout=60)
        conn.commit_offsets()
        old_session = conn.group.live_session
        # Expire it for real: a second client attached to the same session closes it.
        session_id, password = conn.group.client.client_id
        twin = KazooClient(hosts=cluster.zookeeper_connect, client_id=(session_id, password))
        twin.start(timeout=15)
        twin.stop()
        twin.close()
        deadline = time.monotonic() + 60
        while conn.group.live_session in (None, old_session) or not conn.group.is_registered():
            assert time.monotonic() < deadline, "member never re-registered with a new session"
            time.sleep(0.2)
        wait_for_balanced(zk, group_id, [topic], members=1)
        second = produce(topic, 100, partitions=4, start=100)
        recorder.wait_for(keys_of(second), timeout=60)
    finally:
        conn.shutdown()
    assert committed_offsets(zk, group_id, topic) == {p: 50 for p in range(4)}


def test_broker_bounce_consumption_continues(cluster, zk, topic_factory, produce, group_id) -> None:
    if not hasattr(cluster, "restart_broker"):
        pytest.fail("broker bounce needs the local jar cluster (ZKCONSUMER_CLUSTER=local)")
    topic = topic_factory(partitions=2)
    recorder = Recorder()
    with ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **FAST}) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        first = produce(topic, 100, partitions=2)
        recorder.wait_for(keys_of(first), timeout=60)
        cluster.restart_broker(0)
        second = produce(topic, 100, partitions=2, start=100)
        recorder.wait_for(keys_of(second), timeout=90)
        assert owner_table(zk, group_id, [topic]).keys() == {(topic, 0), (topic, 1)}
    assert not recorder.errors
