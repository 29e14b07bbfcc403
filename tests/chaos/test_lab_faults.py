"""Network faults against a real ensemble and brokers, each server in a lab namespace: what a client in a faulted host reaches."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness import fault_metrics as fm
from harness.chaos_members import ProcessMember
from harness.chaos_scenarios import ChaosSettings
from harness.lab_members import LabGroup
from harness.lab_probe import probe
from zkconsumer.testing import kafka, netfaults
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.netlab import LabHost, NetLab
from zkconsumer.testing.pytest_plugin import running

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


@pytest.fixture(scope="module")
def cluster_in_lab(lab: NetLab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(
        zookeeper_servers=3, brokers=3, chroot="/lab", lab=lab, workdir=tmp_path_factory.mktemp("lab-cluster")
    )
    began = time.monotonic()
    with running(cluster, "3-server ensemble with 3 brokers in a network lab", timeout=180) as started:
        print(f"ensemble and 3 brokers up in the lab in {time.monotonic() - began:.1f}s")
        yield started


@pytest.fixture(autouse=True)
def healed(lab: NetLab) -> Iterator[None]:
    yield
    lab.heal_all()


def zk_hosts(lab: NetLab, cluster: LocalCluster) -> list[LabHost]:
    return [lab.host_at(z.address) for z in cluster.zookeepers]


def broker_hosts(lab: NetLab, cluster: LocalCluster) -> list[LabHost]:
    return [lab.host_at(b.place.address) for b in cluster.brokers]


def reaches(member: LabHost, cluster: LocalCluster, timeout: float = 4.0) -> tuple[bool, bool]:
    """(a kazoo client in `member` reaches ZooKeeper, a confluent-kafka client there reaches a broker)."""
    zk = probe(member, "zk", cluster.zookeeper_connect, timeout=timeout)
    brokers = probe(member, "kafka", cluster.bootstrap_servers, timeout=timeout)
    return zk["ok"], brokers["ok"]


def test_servers_run_in_their_own_namespaces(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    for node in [*cluster_in_lab.zookeepers, *cluster_in_lab.brokers]:
        host = lab.host_at(node.place.address)
        assert node.process.pid in host.pids()
    assert all(b.address.startswith(str(lab.subnet.network_address)[:-1]) for b in cluster_in_lab.brokers)  # type: ignore[union-attr]
    assert reaches(lab.host("m1"), cluster_in_lab) == (True, True)


def test_cut_from_zookeeper_only(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    member = lab.host("m1")
    with netfaults.cut(lab, member, zk_hosts(lab, cluster_in_lab)):
        assert reaches(member, cluster_in_lab) == (False, True)
        assert reaches(lab.host("m2"), cluster_in_lab) == (True, True)  # only m1 is cut
    assert reaches(member, cluster_in_lab) == (True, True)


def test_cut_from_the_brokers_only(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    member = lab.host("m1")
    with netfaults.cut(lab, member, broker_hosts(lab, cluster_in_lab)):
        assert reaches(member, cluster_in_lab) == (True, False)
    assert reaches(member, cluster_in_lab) == (True, True)


def test_isolated_zookeeper_leader_is_replaced(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    old = cluster_in_lab.zookeeper_leader()
    member = lab.host("m1")
    began = time.monotonic()
    with netfaults.isolate(lab, lab.host_at(old.address)):
        new = cluster_in_lab.zookeeper_leader(60, not_server=old.server_id)
        elected = time.monotonic() - began
        deadline = time.monotonic() + 30
        while old.mode(timeout=1.0) is not None:  # the old leader stops serving in its minority of one
            assert time.monotonic() < deadline, f"zk{old.server_id} still serves while isolated"
            time.sleep(0.2)
        stepped_down = time.monotonic() - began
        assert reaches(member, cluster_in_lab) == (True, True)  # the majority serves the member
    print(
        f"isolated leader zk{old.server_id}: zk{new.server_id} leads after {elected:.2f}s, zk{old.server_id} stopped serving after {stepped_down:.2f}s"
    )
    cluster_in_lab.start_zookeeper(old.server_id or 0, timeout=60)  # already running: waits until it rejoined
    assert cluster_in_lab.ensemble.modes()[old.server_id or 0] == "follower"


def test_split_ensemble_two_against_one_with_members_on_both_sides(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    servers = zk_hosts(lab, cluster_in_lab)
    brokers = broker_hosts(lab, cluster_in_lab)
    major, minor = lab.host("m1"), lab.host("m2")
    # The brokers stay with the majority; the minority side has one server and member m2.
    with netfaults.split(lab, [*servers[:2], *brokers, major], [servers[2], minor]):
        deadline = time.monotonic() + 30
        while cluster_in_lab.zookeepers[2].mode(timeout=1.0) is not None:
            assert time.monotonic() < deadline, "the minority server still serves"
            time.sleep(0.2)
        assert probe(major, "zk", cluster_in_lab.zookeeper_connect, timeout=4)["ok"]
        assert not probe(minor, "zk", cluster_in_lab.zookeeper_connect, timeout=4)["ok"]
    cluster_in_lab.start_zookeeper(3, timeout=60)
    assert probe(minor, "zk", cluster_in_lab.zookeeper_connect, timeout=4)["ok"]


def test_lossy_link_to_zookeeper_still_serves(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    member = lab.host("m1")
    with netfaults.drop(lab, member, zk_hosts(lab, cluster_in_lab), 20):
        answers = [probe(member, "zk", cluster_in_lab.zookeeper_connect, timeout=8) for _ in range(3)]
    print(f"kazoo over a 20 % lossy link: {[(a['ok'], a['seconds']) for a in answers]}")
    assert any(a["ok"] for a in answers)  # TCP retransmits what is dropped


def test_slow_link_to_zookeeper_adds_its_delay(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    member = lab.host("m1")
    direct = probe(member, "zk", cluster_in_lab.zookeeper_connect)
    with netfaults.slow(lab, member, zk_hosts(lab, cluster_in_lab), 150):
        slowed = probe(member, "zk", cluster_in_lab.zookeeper_connect, timeout=10)
    print(f"one get_children: direct {direct['request_s'] * 1000:.1f} ms, slowed {slowed['request_s'] * 1000:.1f} ms")
    assert direct["ok"] and slowed["ok"]
    assert 0.300 <= slowed["request_s"] < 0.300 + 0.5  # one round trip through the relay: 2 x 150 ms


def test_killed_partition_leader_in_the_lab(lab: NetLab, cluster_in_lab: LocalCluster) -> None:
    cluster_in_lab.create_topic("lab-led", partitions=1)
    killed = cluster_in_lab.kill_partition_leader("lab-led", 0)
    try:
        deadline = time.monotonic() + 30
        while cluster_in_lab.partition_leader("lab-led", 0) in (killed, -1):
            assert time.monotonic() < deadline, "no new leader within 30 s"
            time.sleep(0.1)
        kafka.produce_numbered(cluster_in_lab.bootstrap_servers, "lab-led", 20)
        assert probe(lab.host("m1"), "kafka", cluster_in_lab.bootstrap_servers)["ok"]
    finally:
        cluster_in_lab.restart_broker(killed)


def test_a_member_process_runs_in_a_lab_host(lab: NetLab, cluster_in_lab: LocalCluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    host = lab.host("m3")
    cluster_in_lab.create_topic("lab-member", partitions=2)
    member = ProcessMember(
        cluster_in_lab.zookeeper_connect,
        "lab-group",
        {"zookeeper.session.timeout.ms": 6000},
        {"lab-member": 1},
        tmp_path,
        "lab-member",
        lambda *args, **kwargs: None,
        wrap=host.command,
    ).start()
    try:
        assert member.proc is not None and member.proc.pid in host.pids()
        kafka.produce_numbered(cluster_in_lab.bootstrap_servers, "lab-member", 20, partitions=2)
        deadline = time.monotonic() + 60
        while len(member.out.read_text().splitlines()) < 20:
            assert time.monotonic() < deadline, member.log_tail()
            time.sleep(0.2)
    finally:
        member.leave()


def test_member_cut_from_zookeeper_stops_delivering_within_its_lease(
    lab: NetLab, cluster_in_lab: LocalCluster, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """m1 loses ZooKeeper but keeps the brokers: it stops delivering within its lease (at most 0.9 x
    the granted session timeout from a touch before the cut), and m2 delivers none of m1's partitions before that."""
    settings = ChaosSettings(session_timeout_ms=6000)
    group = LabGroup(cluster_in_lab, lab, "lab-cut", {"lab-cut": 4}, tmp_path / "chaos", settings).start()
    try:
        victim = group.add("m1")
        group.add("m2")
        group.env.settle(dwell=2.0)
        session = victim.session()
        assert session is not None
        granted = cluster_in_lab.ensemble.session_timeout(session[0])
        assert granted == 6000, f"the ensemble granted {granted} ms"
        lease = 0.9 * granted / 1000.0  # config.timing.LEASE_FRACTION, from a touch before the cut
        with netfaults.cut(lab, group.host_of(victim), group.zookeeper_hosts()) as cut:
            group.env.checker.note("cut", victim.consumer_id)
            group.env.converge("cut: m2 alone", excluding=victim)
            time.sleep(3.0)  # m2 delivers what m1 had
            group.env.checker.note("heal", victim.consumer_id)
        with group.env.fault("m1's ZooKeeper link healed"):
            pass
        report = group.env.finish()
        h = group.env.checker.settled_history()
    finally:
        group.close()
    assert cut.healed_at is not None
    before = fm.partitions_delivered(h, victim.consumer_id, cut.began - 2.0, cut.began)
    after = fm.delivered_after(h, victim.consumer_id, cut.began, cut.healed_at)
    taken = fm.delivered_by_others(h, victim.consumer_id, before, cut.began, cut.healed_at)
    first_taken = min((d.at for d in taken), default=float("inf")) - cut.began
    overlap = fm.overlap_times(h, cut.began - 1.0, cut.healed_at)
    print(
        f"m1 cut from ZooKeeper (lease {lease:.1f}s): it delivered until {after:.3f}s after the cut, "
        f"m2 took its {len(before)} partitions over from {first_taken:.3f}s; overlaps {len(overlap)}, "
        f"overlap time {sum(o.seconds for o in overlap):.3f}s"
    )
    assert report.ok, report.describe()
    assert before, "m1 delivered nothing before the cut"
    assert after <= lease, f"m1 delivered {after:.3f}s after its cut, past its lease ({lease:.1f}s)"
    assert first_taken < float("inf"), "nobody took m1's partitions over"
    assert after < first_taken, "m2 delivered m1's partitions while m1 still did"
    assert not overlap, overlap
