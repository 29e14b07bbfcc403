"""Leaving the group on a real cluster: a bounded shutdown with ZooKeeper unreachable, and a member that
dies of a bug leaves instead of lingering as a zombie."""

from __future__ import annotations

import threading
import time

import pytest

from harness.chaos_proxy import TcpProxy
from harness.members import Recorder, drain, wait_for_balanced
from zkconsumer import ConsumerConnector, ConsumerError, ConsumerRebalanceListener
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {
    "zookeeper.session.timeout.ms": 6000,
    "rebalance.backoff.ms": 200,
    "auto.offset.reset": "smallest",
    "consumer.timeout.ms": 200,
    "auto.commit.interval.ms": 600000,
}


def proxied(cluster) -> tuple[TcpProxy, str]:  # type: ignore[no-untyped-def]
    host, port = cluster.zookeeper_hosts.split(",")[0].rsplit(":", 1)
    proxy = TcpProxy(host, int(port)).start()
    return proxy, proxy.address + (cluster.chroot or "")


def test_shutdown_returns_within_its_timeout_with_zookeeper_unreachable(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=2)
    proxy, connect = proxied(cluster)
    conn = ConsumerConnector({"zookeeper.connect": connect, "group.id": group_id, **FAST})
    try:
        recorder = Recorder()
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_for_balanced(zk, group_id, [topic], members=1)
        sent = produce(topic, 10, partitions=2)
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in sent}, timeout=30)
        proxy.cut()  # ZooKeeper is gone for this member; its session lives on for 6 s
        hung = threading.Event()
        reader = threading.Thread(target=lambda: (conn.owned_partitions(), conn.metrics().collect(), hung.set()))
        reader.start()
        reader.join(2.0)
        assert hung.is_set(), "owned_partitions()/metrics blocked while ZooKeeper was unreachable"
        began = time.monotonic()
        unwritten = conn.shutdown(timeout=3.0)
        took = time.monotonic() - began
        assert took < 4.5, f"shutdown(timeout=3) took {took:.1f}s with ZooKeeper unreachable"
        assert unwritten == {(topic, 0): 5, (topic, 1): 5}, "it must say what it could not commit"
    finally:
        conn.shutdown(timeout=1.0)
        proxy.stop()


class BuggyListener(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.armed = False

    def before_starting_fetchers(self, consumer_id, assignment):  # type: ignore[no-untyped-def]
        if self.armed:
            raise KeyError("a bug in the application's listener")


def test_a_bug_in_the_rebalance_thread_takes_the_member_out_of_the_group(cluster, zk, topic_factory, group_id) -> None:
    topic = topic_factory(partitions=2)
    listener = BuggyListener()
    conn = ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **FAST}, listener=listener
    )
    other = ConsumerConnector({"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **FAST})
    try:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        wait_for_balanced(zk, group_id, [topic], members=1)
        listener.armed = True
        other.create_message_streams({topic: 1})  # conn's next rebalance hits the bug
        member_node = znodes.member_path(group_id, conn.consumer_id)
        deadline = time.monotonic() + 20
        while zk.exists(member_node) is not None:
            assert time.monotonic() < deadline, "the broken member stayed registered (a zombie)"
            time.sleep(0.1)
        with pytest.raises(ConsumerError, match="KeyError"):
            for _ in stream:
                pass
        owners = wait_for_balanced(zk, group_id, [topic], members=1, timeout=30)
        assert {thread.rsplit("-", 1)[0] for thread in owners.values()} == {other.consumer_id}
    finally:
        conn.shutdown(timeout=5.0)
        other.shutdown(timeout=5.0)


def test_a_leave_does_not_wait_for_a_watchdog_check_under_way(cluster, zk, topic_factory, group_id, caplog) -> None:  # type: ignore[no-untyped-def]
    topic = topic_factory(partitions=2)
    conn = ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group_id,
            **FAST,
            "zkconsumer.watchdog.interval.ms": 100,
        }
    )
    checking, leaving = threading.Event(), threading.Event()
    try:
        conn.create_message_streams({topic: 1})
        wait_for_balanced(zk, group_id, [topic], members=1)
        read_owners = conn.group.reads.owner_threads

        def slow_read(keys):  # type: ignore[no-untyped-def]  # the check midway through thousands of nodes
            checking.set()
            leaving.wait(20)
            return read_owners(keys)  # in the session being closed

        conn.group.reads.owner_threads = slow_read  # type: ignore[method-assign]
        assert checking.wait(10)
        began = time.monotonic()
        conn.shutdown(timeout=30)
        took = time.monotonic() - began
        assert took < 8, f"the leave waited {took:.1f}s for the watchdog"
        assert zk.get_children(znodes.ids_path(group_id)) == []
    finally:
        leaving.set()
        conn.shutdown(timeout=5)
    time.sleep(0.5)  # the check, released, ends against the closed session: quietly
    assert not [r for r in caplog.records if "watchdog" in r.getMessage() and r.levelno >= 30]
