"""What LocalCluster writes for an ensemble, a lab and replicated brokers, checked without starting a JVM."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.netlab import CANDIDATES, pick_subnet


def test_default_cluster_is_the_standalone_server_of_old(tmp_path: Path) -> None:
    cluster = LocalCluster(workdir=tmp_path)
    assert len(cluster.zookeepers) == 1 and cluster.zookeeper.server_id is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log4j.properties", "server-0.properties", "zoo.cfg"]
    cfg = (tmp_path / "zoo.cfg").read_text()
    assert "server." not in cfg and "initLimit" not in cfg and "clientPortAddress=127.0.0.1\n" in cfg
    assert cluster.zookeeper.process.args[-2].endswith("ZooKeeperServerMain")
    assert cluster.zookeeper.process.java == "java"
    assert (cluster.replication_factor, cluster.min_insync_replicas) == (1, 1)
    props = (tmp_path / "server-0.properties").read_text()
    assert "min.insync.replicas" not in props and "default.replication.factor=1\n" in props
    assert cluster.zookeeper_connect == f"127.0.0.1:{cluster.zookeeper.port}/kafka"


def test_ensemble_servers_have_their_own_ids_ports_and_data(tmp_path: Path) -> None:
    cluster = LocalCluster(zookeeper_servers=3, brokers=3, workdir=tmp_path, zookeeper_settings={"syncLimit": "4"})
    assert [z.server_id for z in cluster.zookeepers] == [1, 2, 3]
    assert len({z.port for z in cluster.zookeepers}) == 3
    lines = None
    for server in cluster.zookeepers:
        cfg = (tmp_path / f"zoo-{server.server_id}.cfg").read_text().splitlines()
        assert (server.data_dir / "myid").read_text() == f"{server.server_id}\n"
        assert f"dataDir={server.data_dir}" in cfg and f"clientPort={server.port}" in cfg
        quorum = [line for line in cfg if line.startswith("server.")]
        assert len(quorum) == 3 and (lines is None or quorum == lines)
        lines = quorum
        assert cfg[-1] == "syncLimit=4"  # the override comes last and wins
        assert server.process.args[-2].endswith("quorum.QuorumPeerMain")
    ports = [int(p) for line in lines or [] for p in line.split("=", 1)[1].split(":")[1:]]
    assert len(set(ports)) == 6
    assert cluster.zookeeper_hosts == ",".join(f"127.0.0.1:{z.port}" for z in cluster.zookeepers)
    props = (tmp_path / "server-2.properties").read_text()
    assert f"zookeeper.connect={cluster.zookeeper_hosts}/kafka\n" in props
    assert "default.replication.factor=3\n" in props and "min.insync.replicas=2\n" in props
    assert "offsets.topic.replication.factor=3\n" in props
    assert (cluster.replication_factor, cluster.min_insync_replicas) == (3, 2)


@pytest.mark.parametrize("kwargs", [{"zookeeper_servers": 2}, {"brokers": 2, "replication_factor": 3}])
def test_impossible_clusters_are_refused(tmp_path: Path, kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        LocalCluster(workdir=tmp_path, **kwargs)  # type: ignore[arg-type]


@dataclass
class FakeHost:
    name: str
    address: str

    def port(self, usual: int) -> int:
        return usual

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", f"zkc-test-{self.name}", *argv]


class FakeLab:
    def __init__(self) -> None:
        self.hosts: dict[str, FakeHost] = {}

    def host(self, name: str) -> FakeHost:
        return self.hosts.setdefault(name, FakeHost(name, f"10.213.9.{len(self.hosts) + 2}"))


def test_a_lab_cluster_puts_each_server_on_its_host(tmp_path: Path) -> None:
    lab = FakeLab()
    cluster = LocalCluster(zookeeper_servers=3, brokers=3, workdir=tmp_path, lab=lab)  # type: ignore[arg-type]
    assert sorted(lab.hosts) == ["kafka0", "kafka1", "kafka2", "zk1", "zk2", "zk3"]
    cfg = (tmp_path / "zoo-2.cfg").read_text()
    zk = [lab.hosts[f"zk{i}"].address for i in (1, 2, 3)]
    assert f"clientPortAddress={zk[1]}\nclientPort=2181" in cfg or f"clientPort=2181\nclientPortAddress={zk[1]}" in cfg
    assert all(f"server.{i}={zk[i - 1]}:2888:3888" in cfg for i in (1, 2, 3))
    assert cluster.zookeeper_hosts == ",".join(f"{a}:2181" for a in zk)
    props = (tmp_path / "server-1.properties").read_text()
    assert f"listeners=PLAINTEXT://{lab.hosts['kafka1'].address}:9092\n" in props
    assert cluster.bootstrap_servers == ",".join(f"{lab.hosts[f'kafka{i}'].address}:9092" for i in range(3))
    proc = cluster.brokers[1].process
    assert proc.java == "ip" and proc.args[:4] == ["netns", "exec", "zkc-test-kafka1", "java"]


def test_pick_subnet_avoids_what_is_used() -> None:
    base, span = CANDIDATES
    used = [ipaddress.IPv4Network("10.0.0.0/8")]
    with pytest.raises(Exception, match="no free /24"):
        pick_subnet(used)
    first = int(str(base.network_address).split(".")[1])
    used = [ipaddress.IPv4Network(f"10.{first + i}.0.0/16") for i in range(span - 1)]  # all but the last /16
    last = ipaddress.IPv4Network(f"10.{first + span - 1}.0.0/16")
    for _ in range(20):
        net = pick_subnet(used, taken=[f"10.{first + span - 1}.0.0/24"])
        assert net.prefixlen == 24 and net.subnet_of(last) and str(net) != f"10.{first + span - 1}.0.0/24"
