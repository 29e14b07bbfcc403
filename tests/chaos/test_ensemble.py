"""A production-like cluster on loopback: a 3-server ZooKeeper ensemble, 3 brokers, topics with RF 3 and min ISR 2."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType
from kazoo.protocol.states import KazooState

from harness import fault_metrics as fm
from harness.chaos_history import now
from harness.chaos_scenarios import ChaosEnv, ChaosSettings
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.pytest_plugin import running

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three ZooKeeper servers and three brokers of this module's own."""
    cluster = LocalCluster(zookeeper_servers=3, brokers=3, chroot="/ens", workdir=tmp_path_factory.mktemp("ensemble"))
    began = time.monotonic()
    with running(cluster, "3-server ensemble with 3 brokers", timeout=180) as started:
        print(f"ensemble and 3 brokers up in {time.monotonic() - began:.1f}s")
        yield started


def test_ensemble_has_one_leader_and_every_server_in_the_connect_string(ensemble: LocalCluster) -> None:
    modes = ensemble.ensemble.modes()
    assert sorted(m or "none" for m in modes.values()) == ["follower", "follower", "leader"], modes
    assert ensemble.zookeeper_leader().server_id == next(i for i, m in modes.items() if m == "leader")
    hosts = ensemble.zookeeper_hosts.split(",")
    assert hosts == [z.hosts for z in ensemble.zookeepers] and len(set(hosts)) == 3
    assert ensemble.zookeeper_connect == ensemble.zookeeper_hosts + "/ens"
    for server in ensemble.zookeepers:
        assert (server.data_dir / "myid").read_text().strip() == str(server.server_id)
        cfg = (ensemble.workdir / f"zoo-{server.server_id}.cfg").read_text()
        assert all(f"server.{i}=127.0.0.1:" in cfg for i in (1, 2, 3))
    client = ensemble.zk_client()
    try:
        assert sorted(client.get_children("/brokers/ids")) == ["0", "1", "2"]
    finally:
        client.stop()
        client.close()


def test_replicated_topic_takes_acks_all_writes(ensemble: LocalCluster) -> None:
    assert (ensemble.replication_factor, ensemble.min_insync_replicas) == (3, 2)
    ensemble.create_topic("replicated", partitions=3)  # the cluster's default replication
    client = kafka.admin(ensemble.bootstrap_servers)
    meta = client.list_topics("replicated", timeout=10).topics["replicated"]
    assert all(len(p.replicas) == 3 and len(p.isrs) >= 2 for p in meta.partitions.values())
    resource = ConfigResource(ResourceType.TOPIC, "replicated")
    config = client.describe_configs([resource])[resource].result(30)
    assert config["min.insync.replicas"].value == "2"
    sent = kafka.produce_numbered(ensemble.bootstrap_servers, "replicated", 300, partitions=3)  # acks=all
    assert len(kafka.read_all(ensemble.bootstrap_servers, "replicated")) == len(sent) == 300


def test_killed_zookeeper_leader_is_replaced_and_sessions_survive(ensemble: LocalCluster) -> None:
    client = ensemble.zk_client(timeout=10.0)
    states: list[str] = []
    client.add_listener(lambda state: states.append(state))
    try:
        session = client.client_id
        client.create("/ens-probe", b"before", ephemeral=True)
        leader = ensemble.zookeeper_leader()
        killed = leader.server_id
        assert killed is not None
        began = time.monotonic()
        ensemble.kill_zookeeper(killed)
        new_leader = ensemble.zookeeper_leader(30, not_server=killed)
        elected = time.monotonic() - began
        # The client reconnects to a live server within its session: the same session, its node kept.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                client.set("/ens-probe", b"after")
                break
            except Exception:  # noqa: BLE001 - ConnectionLoss while it moves to another server
                time.sleep(0.1)
        reconnected = time.monotonic() - began
        print(
            f"killed leader zk{killed}: zk{new_leader.server_id} leads after {elected:.2f}s, client writes again after {reconnected:.2f}s"
        )
        assert client.client_id == session and client.state == KazooState.CONNECTED
        assert client.get("/ens-probe")[0] == b"after"
        assert KazooState.LOST not in states
        ensemble.start_zookeeper(killed, timeout=60)
        assert ensemble.ensemble.modes()[killed] == "follower"
        assert ensemble.zookeeper_leader().server_id == new_leader.server_id
    finally:
        client.stop()
        client.close()


def test_killed_partition_leader_hands_over_and_writes_go_on(ensemble: LocalCluster) -> None:
    ensemble.create_topic("led", partitions=1)
    kafka.produce_numbered(ensemble.bootstrap_servers, "led", 50)
    killed = ensemble.kill_partition_leader("led", 0)
    began = time.monotonic()
    try:
        while ensemble.partition_leader("led", 0) in (killed, -1):
            assert time.monotonic() - began < 30, "no new leader for led-0 within 30 s"
            time.sleep(0.1)
        print(
            f"led-0: broker {killed} killed, broker {ensemble.partition_leader('led', 0)} leads after {time.monotonic() - began:.2f}s"
        )
        # Two replicas left in sync: acks=all writes still meet min.insync.replicas=2.
        kafka.produce_numbered(ensemble.bootstrap_servers, "led", 50, start=50)
        assert len(kafka.read_all(ensemble.bootstrap_servers, "led")) == 100
    finally:
        ensemble.restart_broker(killed)


def test_member_sessions_survive_a_leader_change_without_a_rebalance(ensemble: LocalCluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two member processes on the ensemble; its leader is killed: no session is lost, no partition
    moves (owner nodes and member nodes as they were), and deliveries pause at most a second."""
    settings = ChaosSettings(session_timeout_ms=6000)
    env = ChaosEnv(ensemble, "ens-leader-change", {"ens-members": 4}, tmp_path / "chaos", settings, replication=3)
    env.start()
    try:
        env.join(2, "process")
        env.settle(dwell=3.0)
        leader = ensemble.zookeeper_leader()
        assert leader.server_id is not None
        env.checker.note("fault", None, f"kill -9 of the ZooKeeper leader zk{leader.server_id}")
        killed_at = now()
        ensemble.kill_zookeeper(leader.server_id)
        new_leader = ensemble.zookeeper_leader(30, not_server=leader.server_id)
        elected = now() - killed_at
        env.checker.note("leader", None, f"zk{new_leader.server_id}")
        time.sleep(6.0)  # past a session timeout: a lost session would show by now
        until = now()
        report = env.finish()
        h = env.checker.settled_history()
    finally:
        env.close()
        if not ensemble.zookeepers[(leader.server_id or 1) - 1].process.running:
            ensemble.start_zookeeper(leader.server_id or 1, timeout=60)
    moved = fm.moved_spans(h, killed_at, until)
    sessions = fm.new_registrations(h, killed_at, until)
    (gap_tp, gap), latency = fm.delivery_gap(h, killed_at, until), fm.ack_latency(h, killed_at - 1.0, until)
    _, before = fm.delivery_gap(h, killed_at - 3.0, killed_at)
    print(
        f"leader zk{leader.server_id} killed: zk{new_leader.server_id} leads after {elected:.2f}s; "
        f"owner nodes moved {len(moved)}, member nodes changed {len(sessions)}; longest delivery gap "
        f"{gap:.3f}s ({gap_tp}; {before:.3f}s in the 3 s before), longest ack-to-delivery {latency:.3f}s"
    )
    assert report.ok, report.describe()
    assert not sessions, f"a member lost its session in a leader change: {sessions}"
    assert not moved, f"partitions moved in a leader change: {moved}"
    # Goal: <= 1 s. A SUSPENDED link leaves delivery to the lease, so the election costs no delivery
    # (measured: gap 0.12 s, longest ack-to-delivery 0.10 s). When SUSPENDED held the gate the pause
    # was the election plus kazoo's reconnect back-off: 0.83-1.91 s. The gap also counts pauses of
    # production; the ack-to-delivery time does not.
    assert latency <= 1.0, f"a message acked around the leader change waited {latency:.3f}s for delivery"
    assert gap <= 2.0, f"deliveries of {gap_tp} paused {gap:.3f}s in a leader change"
