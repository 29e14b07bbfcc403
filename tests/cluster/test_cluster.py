"""The local cluster harness: start/stop with and without chroot, round trip, broker faults."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zkconsumer.cluster import broker_nodes
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.probes import ClusterStartError
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster


def test_round_trip_through_session_cluster(cluster, topic_factory, produce) -> None:
    topic = topic_factory(partitions=4)
    sent = produce(topic, 2000, partitions=4)
    got = kafka.read_all(cluster.bootstrap_servers, topic)
    assert sorted((m.partition, m.offset, m.value) for m in got) == sorted(
        (m.partition, m.offset, m.value) for m in sent
    )
    assert {m.partition for m in got} == {0, 1, 2, 3}


def test_broker_registration_decodes(cluster, zk) -> None:
    ids = zk.get_children(znodes.BROKER_IDS)
    assert ids, "no broker registered"
    for broker_id in ids:
        path = znodes.broker_path(int(broker_id))
        info = broker_nodes.decode_broker(int(broker_id), zk.get(path)[0], path)
        assert info.version == 5
        host, port = info.plaintext_address()
        assert f"{host}:{port}" in cluster.bootstrap_servers.split(",")


def test_topic_node_decodes(cluster, zk, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    path = znodes.topic_path(topic)
    assert sorted(broker_nodes.decode_topic_partitions(zk.get(path)[0], path)) == [0, 1, 2]
    state_path = znodes.partition_state_path(topic, 0)
    state = broker_nodes.decode_partition_state(zk.get(state_path)[0], state_path)
    assert state.leader == 0 and state.isr == (0,)


def test_cluster_without_chroot_registers_at_root() -> None:
    with LocalCluster(brokers=1, chroot=None) as plain:
        assert plain.zookeeper_connect == plain.zookeeper_hosts
        client = plain.zk_client()
        try:
            assert client.get_children("/brokers/ids") == ["0"]
        finally:
            client.stop()
        kafka.create_topic(plain.bootstrap_servers, "plain", 1)
        kafka.produce_numbered(plain.bootstrap_servers, "plain", 10)
        assert len(kafka.read_all(plain.bootstrap_servers, "plain")) == 10
    assert not plain.zookeeper.process.running
    assert not any(b.process.running for b in plain.brokers)


def test_start_failure_reports_log_tail(tmp_path) -> None:
    # An unknown listener security protocol makes the broker exit during startup.
    bad = LocalCluster(
        brokers=1,
        chroot="/bad",
        workdir=tmp_path,
        broker_properties={"listener.security.protocol.map": "PLAINTEXT:NOPE"},
    )
    with pytest.raises(ClusterStartError) as failure:
        bad.start(timeout=60)
    assert "kafka-0" in str(failure.value) and "log tail" in str(failure.value)
    assert not bad.zookeeper.process.running


def test_kill_and_restart_one_of_three_brokers(tmp_path) -> None:
    with LocalCluster(brokers=3, chroot="/three", workdir=tmp_path) as three:
        kafka.create_topic(three.bootstrap_servers, "replicated", 6, replication_factor=3)
        first = kafka.produce_numbered(three.bootstrap_servers, "replicated", 600, partitions=6)
        three.brokers[1].kill()
        assert not three.brokers[1].process.running
        # Leaders move to the survivors; the topic stays readable and writable.
        kafka.wait_for_leaders(three.bootstrap_servers, "replicated", 6, timeout=60)
        second = kafka.produce_numbered(three.bootstrap_servers, "replicated", 600, partitions=6, start=600)
        assert len(kafka.read_all(three.bootstrap_servers, "replicated")) == len(first) + len(second)
        three.restart_broker(1)
        client = three.zk_client()
        try:
            assert sorted(client.get_children("/brokers/ids")) == ["0", "1", "2"]
        finally:
            client.stop()
        assert len(kafka.read_all(three.bootstrap_servers, "replicated")) == 1200


def test_cli_up_status_down(tmp_path) -> None:
    env = dict(os.environ, ZKCONSUMER_CLUSTER_DIR=str(tmp_path / "state"))
    run = lambda *args: subprocess.run(
        [sys.executable, "-m", "zkconsumer.testing", *args],  # noqa: E731
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    up = run("up", "--chroot", "/cli")
    assert up.returncode == 0, up.stderr
    assert "zookeeper.connect=127.0.0.1:" in up.stdout and "/cli" in up.stdout
    try:
        status = run("status")
        assert status.returncode == 0 and "1/1 brokers running" in status.stdout
    finally:
        down = run("down")
    assert down.returncode == 0 and "cluster stopped" in down.stdout
    assert run("status").returncode == 1
