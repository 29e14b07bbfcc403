"""Chaos members in network-lab hosts: a ChaosEnv on a lab cluster whose members each run in a namespace of their own."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.chaos_members import ProcessMember
from harness.chaos_scala import ScalaChaosMember
from harness.chaos_scenarios import ChaosEnv, ChaosSettings
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.netlab import LabHost, NetLab

LabKind = Literal["process", "scala"]
LabMember = ProcessMember | ScalaChaosMember


@dataclass
class LabGroup:
    """One consumer group on a lab cluster (`cluster.lab`): a ChaosEnv whose members run in lab hosts.

    Example::

        group = LabGroup(cluster, lab, "g", {"t": 6}, tmp_path).start()
        victim = group.add("m1"); group.add("m2"); group.env.settle()
        with netfaults.cut(lab, group.host_of(victim), group.zookeeper_hosts()): ...
        report = group.env.finish()
    """

    cluster: LocalCluster
    lab: NetLab
    group: str
    topics: dict[str, int]
    workdir: Path
    settings: ChaosSettings = field(default_factory=ChaosSettings)
    env: ChaosEnv = field(init=False)
    hosts: dict[str, LabHost] = field(default_factory=dict)  # consumer id -> its host
    members: list[LabMember] = field(default_factory=list)  # every member added, in order
    _names: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.env = ChaosEnv(
            self.cluster,
            self.group,
            self.topics,
            self.workdir,
            self.settings,
            replication=self.cluster.replication_factor,
        )

    def start(self) -> LabGroup:
        self.env.start()
        return self

    def close(self) -> None:
        self.env.close()

    def new(self, host: str, kind: LabKind = "process") -> LabMember:
        """A member (not started) that will run in lab host `host`."""
        place = self.lab.host(host)
        props = self.settings.props(self.cluster.zookeeper_connect, self.group)
        streams = {t: 1 for t in self.topics}
        name = f"{kind}-{host}-{next(self._names)}"
        make: type[ScalaChaosMember] | type[ProcessMember] = ScalaChaosMember if kind == "scala" else ProcessMember
        member: LabMember = make(
            self.cluster.zookeeper_connect,
            self.group,
            props,
            streams,
            self.env.workdir,
            name,
            self.env.checker.note,
            wrap=place.command,
        )
        return member

    def add(self, host: str, kind: LabKind = "process") -> LabMember:
        """Start a member in `host`, wait until it joined, and have the checker follow its deliveries."""
        member = self.new(host, kind)
        member.start()
        self.hosts[member.consumer_id] = self.lab.host(host)
        self.env.checker.follow(member.out, member.consumer_id)
        self.env.members.append(member)
        self.members.append(member)
        return member

    def host_of(self, member: LabMember) -> LabHost:
        return self.hosts[member.consumer_id]

    def zookeeper_hosts(self) -> list[LabHost]:
        return [self.lab.host_at(z.address) for z in self.cluster.zookeepers]

    def broker_hosts(self) -> list[LabHost]:
        return [self.lab.host_at(b.place.address) for b in self.cluster.brokers]
