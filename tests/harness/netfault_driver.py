"""The five network fault kinds of scripts/netfaults.py, done to zkconsumer (and Scala) groups in a network lab."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.lab_members import LabGroup, LabMember
from zkconsumer.testing import netfaults
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.netfaults import Fault
from zkconsumer.testing.netlab import LabHost, NetLab

log = logging.getLogger(__name__)

KINDS = ("zk-cut", "broker-cut", "leader", "link", "broker-kill")


@dataclass
class FaultRecord:
    """One fault as done: when (time.monotonic, the members' delivery clock), to whom, and how it ended.

    `cut` maps a group name ("ours", "scala") to the consumer id cut off from ZooKeeper (zk-cut,
    and the minority member of a split); `leader_change` is set when the ensemble's leader moved.
    """

    index: int
    kind: str
    description: str
    began: float = 0.0
    healed: float = 0.0
    cut: dict[str, str] = field(default_factory=dict)
    leader_change: bool = False
    converge: dict[str, float | None] = field(default_factory=dict)  # group name -> seconds after heal


@dataclass
class NetRun:
    """What the faults act on: the lab, its cluster, the groups (name -> LabGroup), the seeded random."""

    lab: NetLab
    cluster: LocalCluster
    groups: dict[str, LabGroup]
    rng: random.Random
    session_s: float
    records: list[FaultRecord] = field(default_factory=list)

    def slot(self, group: LabGroup, index: int) -> LabMember:
        """The group's `index`-th live member (the same slot in every group takes the same fault)."""
        live = [m for m in group.members if m.alive]
        return live[index % len(live)]

    def note(self, kind: str, member: str | None = None, detail: str = "") -> None:
        for group in self.groups.values():
            group.env.checker.note(kind, member, detail)

    def converge(self, record: FaultRecord, what: str) -> None:
        for name, group in self.groups.items():
            record.converge[name] = group.env.converge(f"#{record.index} {what}")


def _hold(run: NetRun, low: float, high: float) -> float:
    return round(run.rng.uniform(low, high), 2)


def zk_cut(run: NetRun, record: FaultRecord) -> None:
    """One member of each group cut from every ZooKeeper server (brokers still reachable), past its session."""
    index = run.rng.randrange(2)
    hold = _hold(run, run.session_s * 1.5, run.session_s * 2.5)
    faults: list[Fault] = []
    for name, group in run.groups.items():
        member = run.slot(group, index)
        record.cut[name] = member.consumer_id
        faults.append(netfaults.cut(run.lab, group.host_of(member), group.zookeeper_hosts()))
        group.env.checker.note("cut", member.consumer_id)
    record.description = f"member slot {index} of each group cut from ZooKeeper for {hold:.1f}s"
    _hold_then_heal(run, record, faults, hold)


def broker_cut(run: NetRun, record: FaultRecord) -> None:
    """One member of each group cut from every broker (ZooKeeper still reachable)."""
    index = run.rng.randrange(2)
    hold = _hold(run, 2.0, run.session_s * 1.5)
    faults = [
        netfaults.cut(run.lab, group.host_of(run.slot(group, index)), group.broker_hosts())
        for group in run.groups.values()
    ]
    record.description = f"member slot {index} of each group cut from the brokers for {hold:.1f}s"
    _hold_then_heal(run, record, faults, hold)


def leader(run: NetRun, record: FaultRecord) -> None:
    """Isolate the ensemble's leader, or split the ensemble 2 | 1 (the leader in the minority, with a
    member of each group there too; the brokers stay with the majority): the first time at random,
    then each in turn."""
    old = run.cluster.zookeeper_leader()
    zk = [run.lab.host_at(z.address) for z in run.cluster.zookeepers]
    leader_host = run.lab.host_at(old.address)
    hold = _hold(run, run.session_s * 1.5, run.session_s * 2.5)
    faults: list[Fault]
    earlier = [r for r in run.records if r.kind == "leader" and r is not record]
    split = run.rng.random() < 0.5 if not earlier else "isolated" in earlier[-1].description  # then alternate
    if not split:
        record.description = f"ZooKeeper leader zk{old.server_id} isolated for {hold:.1f}s"
        faults = [netfaults.isolate(run.lab, leader_host)]
    else:
        index = run.rng.randrange(2)
        minority: list[LabHost] = [leader_host]
        for name, group in run.groups.items():
            member = run.slot(group, index)
            record.cut[name] = member.consumer_id
            minority.append(group.host_of(member))
            group.env.checker.note("cut", member.consumer_id)
        majority = [h for h in zk if h != leader_host]
        majority += [h for g in run.groups.values() for h in g.broker_hosts()]
        majority += [g.host_of(m) for g in run.groups.values() for m in g.members if m.alive]
        majority = [h for h in dict.fromkeys(majority) if h not in minority]
        record.description = (
            f"ensemble split 2 | 1: zk{old.server_id} (the leader) and member slot {index} of each group "
            f"in the minority for {hold:.1f}s"
        )
        faults = [netfaults.split(run.lab, majority, minority)]
    record.began = time.monotonic()
    new = run.cluster.zookeeper_leader(60, not_server=old.server_id)
    record.leader_change = True
    run.note("leader", None, f"zk{new.server_id}")
    _hold_then_heal(run, record, faults, max(0.0, hold - (time.monotonic() - record.began)))
    run.cluster.start_zookeeper(old.server_id or 1, timeout=60)  # running: waits until it serves again


def link(run: NetRun, record: FaultRecord) -> None:
    """A slow (300 ms each way, through the relay) or lossy (10 % dropped each way) link from one
    member of each group to ZooKeeper or to the brokers."""
    index = run.rng.randrange(2)
    to_zk = run.rng.random() < 0.5
    slow = run.rng.random() < 0.5
    hold = _hold(run, 3.0, run.session_s * 1.5)
    faults = []
    for group in run.groups.values():
        host = group.host_of(run.slot(group, index))
        peers = group.zookeeper_hosts() if to_zk else group.broker_hosts()
        faults.append(netfaults.slow(run.lab, host, peers, 300) if slow else netfaults.drop(run.lab, host, peers, 10))
    what = "300 ms each way" if slow else "10 % loss"
    record.description = (
        f"{what} on member slot {index}'s link to {'ZooKeeper' if to_zk else 'the brokers'} for {hold:.1f}s"
    )
    _hold_then_heal(run, record, faults, hold)


def broker_kill(run: NetRun, record: FaultRecord) -> None:
    """kill -9 the leader broker of a random partition; restart it after the hold."""
    group = next(iter(run.groups.values()))
    topic = next(iter(group.topics))
    partition = run.rng.randrange(group.topics[topic])
    hold = _hold(run, 2.0, 6.0)
    record.began = time.monotonic()
    run.note("fault", None, f"#{record.index} broker-kill")
    killed = run.cluster.kill_partition_leader(topic, partition)
    run.note("broker-kill", None, str(killed))
    record.description = f"broker {killed} (leader of {topic}-{partition}) killed for {hold:.1f}s"
    time.sleep(hold)
    run.cluster.restart_broker(killed, timeout=300.0)
    record.healed = time.monotonic()
    run.converge(record, record.description)


def _hold_then_heal(run: NetRun, record: FaultRecord, faults: list[Fault], hold: float) -> None:
    if not record.began:
        record.began = min(f.began for f in faults)
    run.note("fault", None, f"#{record.index} {record.kind}: {record.description}")
    time.sleep(hold)
    for fault in faults:
        fault.heal()
    record.healed = time.monotonic()
    for name, member in record.cut.items():
        run.groups[name].env.checker.note("heal", member)
    run.converge(record, record.description)


DRIVERS: dict[str, Callable[[NetRun, FaultRecord], None]] = {
    "zk-cut": zk_cut,
    "broker-cut": broker_cut,
    "leader": leader,
    "link": link,
    "broker-kill": broker_kill,
}


def schedule(events: int, rng: random.Random) -> list[str]:
    """`events` fault kinds: every kind once per round of five, each round in a seeded order."""
    kinds: list[str] = []
    while len(kinds) < events:
        round_ = list(KINDS)
        rng.shuffle(round_)
        kinds += round_
    return kinds[:events]


def run_faults(run: NetRun, kinds: list[str], gap: Callable[[], float]) -> list[FaultRecord]:
    """Each fault in turn, `gap()` seconds of quiet between two; returns the records (also in run.records)."""
    for index, kind in enumerate(kinds, start=1):
        record = FaultRecord(index, kind, kind)
        run.records.append(record)
        log.info("fault #%d: %s", index, kind)
        DRIVERS[kind](run, record)
        converged = ", ".join(f"{n} {'never' if s is None else f'{s:.2f}s'}" for n, s in record.converge.items())
        print(f"#{index} {kind}: {record.description}; converged {converged}", flush=True)
        time.sleep(gap())
    return run.records
