"""One audited migration run on a real cluster: producer, member processes, ownership sampler, faults, figures.

The parts of scripts/bench/live_switch.py (and its smoke, tests/cluster/test_live_switch_bench_smoke.py):
`AuditRun` owns one group on one fresh topic of a running LocalCluster. It produces numbered
messages at a set rate (harness.chaos_producer), runs members as processes (harness.switch_app's
AppMember: harness.switch_member, the ConsumerConnector application API), samples ownership every
100 ms (harness.switch_sampler: ZooKeeper's owner nodes and the brokers' group through
DescribeGroups), does the faults, runs the `zkconsumer` CLI as an
operator would, and in the end hands the delivery logs to harness.switch_audit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTP

from harness import python_env
from harness.chaos_members import expire_session
from harness.chaos_producer import SteadyProducer
from harness.members import committed_offsets
from harness.switch_app import AppMember
from harness.switch_audit import (
    Delivery,
    Figures,
    Key,
    ReleaseCheck,
    RestRound,
    RestVerdict,
    audit,
    judge_rest,
    parse_log_line,
    parse_release_checks,
)
from harness.switch_sampler import OwnershipSampler, clock
from zkconsumer.migration.switch import decode_switch_node
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.zookeeper import znodes


def cli_command(*args: str) -> list[str]:
    """The `zkconsumer` command line, run from the zkconsumer this process imported."""
    return [sys.executable, "-m", "zkconsumer.cli.main", *args]


def has_command(*words: str) -> bool:
    """Whether `zkconsumer <words> --help` exists (click answers exit 2, "No such command", if not)."""
    done = subprocess.run(cli_command(*words, "--help"), capture_output=True, text=True, env=python_env(), timeout=60)
    return done.returncode == 0


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode (the brokers place a group's offsets by it: Utils.abs(hash) % partitions)."""
    data = text.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: Math.abs, except Integer.MIN_VALUE -> 0."""
    return 0 if n == -(1 << 31) else abs(n)


def coordinator_partition(group: str, offsets_partitions: int) -> int:
    """The group's __consumer_offsets partition (GroupMetadataManager.partitionFor)."""
    return kafka_abs(java_string_hash(group)) % offsets_partitions


class AuditRun:
    """One group on one fresh topic: producer, members, sampler, notes; `figures()` at the end."""

    def __init__(
        self,
        cluster: LocalCluster,
        workdir: Path,
        *,
        name: str,
        partitions: int,
        rate: float,
        replication_factor: int = 1,
    ) -> None:
        self.cluster = cluster
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.group = f"audit-{name}-{os.getpid()}"
        self.topic = f"audit-{name}-{os.getpid()}"
        self.partitions = partitions
        cluster.create_topic(self.topic, partitions, replication_factor)
        self.subscription = self.topic  # the members' --topic: a regex with member_args ["--whitelist"]
        self.added_topics: dict[str, set[Key]] = {}  # topics created mid-run -> their acked keys
        self.command_crashes = 0  # runs of `migrate switch` that died of a signal of their own
        self.member_args: list[str] = []  # extra harness.switch_member arguments of every member started
        self.members: list[AppMember] = []
        self.retired: list[AppMember] = []
        self.notes: list[tuple[float, str]] = []
        self._acked: set[Key] = set()
        self._born: dict[int, float] = {}  # partition -> its first ack (partitions added mid-run start late)
        self._lock = threading.Lock()
        self.producer = SteadyProducer(cluster.bootstrap_servers, {self.topic: partitions}, rate=rate, on_ack=self._ack)
        self.sampler = OwnershipSampler(self)
        self.start_at = self.end_at = 0.0

    def _ack(self, topic: str, epoch: int, partition: int, offset: int) -> None:
        with self._lock:
            if topic != self.topic:
                self.added_topics.setdefault(topic, set()).add((partition, offset))
                return
            self._acked.add((partition, offset))
            self._born.setdefault(partition, clock())

    def note(self, what: str) -> None:
        self.notes.append((clock(), what))
        print(f"  [{time.strftime('%H:%M:%S')}] {self.group}: {what}", flush=True)

    # ---- members ------------------------------------------------------------------------------
    def start_members(self, count: int, props: Mapping[str, object], tag: str) -> list[AppMember]:
        """`count` members at once (spawned together, then each waited for)."""
        fresh = [AppMember(self, f"{tag}{i}", props) for i in range(count)]
        for m in fresh:
            m.spawn()
        for m in fresh:
            m.wait_ready()
        self.members += fresh
        self.note(f"started {count} members {tag}* {dict(props)}")
        return fresh

    def replace_member(self, old: AppMember, props: Mapping[str, object], name: str) -> AppMember:
        """A rolling restart of one member: SIGTERM, wait for its exit, start its successor."""
        old.leave()
        self.members.remove(old)
        self.retired.append(old)
        new = AppMember(self, name, props)
        new.spawn()
        new.wait_ready()
        self.members.append(new)
        self.note(f"restarted {old.name} as {name}")
        return new

    def stop_members(self) -> None:
        for m in self.members:  # all at once, as an operator stopping the group; then each waited for
            m.terminate()
        for m in self.members:
            m.leave()
        self.retired += self.members
        self.members = []
        self.note("stopped every member")

    # ---- the cluster ------------------------------------------------------------------------------
    def cli(self, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        started = clock()
        done = subprocess.run(cli_command(*args), capture_output=True, text=True, env=python_env(), timeout=timeout)
        self.note(f"zkconsumer {' '.join(args)}: exit {done.returncode} in {clock() - started:.1f}s")
        return done

    def offsets_at_rest(self, rounds: int = 6, pause: float = 0.25) -> RestVerdict:
        """Whether Kafka's committed offsets equal ZooKeeper's, exactly: each round reads ZooKeeper,
        Kafka, ZooKeeper (a member commits ZooKeeper first, then Kafka), and a partition counts as
        equal once a round saw both ZooKeeper reads and the Kafka read between them agree."""
        zk = self.cluster.zk_client()
        reader = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": self.group})
        found: list[RestRound] = []
        try:
            keys = [KafkaTP(self.topic, p) for p in range(self.partitions)]
            reader.committed(keys, timeout=15)  # the coordinator's lookup, outside the rounds
            for i in range(rounds):
                before = committed_offsets(zk, self.group, self.topic)
                kafka = {tp.partition: tp.offset for tp in reader.committed(keys, timeout=15) if tp.offset >= 0}
                after = committed_offsets(zk, self.group, self.topic)
                found.append(RestRound(before, kafka, after))
                verdict = judge_rest(range(self.partitions), found)
                if len(verdict.equal) == self.partitions or i == rounds - 1:
                    return verdict
                time.sleep(pause)
        finally:
            reader.close()
            zk.stop()
            zk.close()
        raise AssertionError("rounds < 1")

    def release_checks(self) -> list[ReleaseCheck]:
        """Every release of the live switch the members logged: ZooKeeper's offset and Kafka's read back."""
        out = []
        for m in self.retired + self.members:
            try:
                text = m.log.read_text(errors="replace")
            except OSError:
                continue
            out += [c for c in parse_release_checks(m.name, text) if c.topic == self.topic]
        return out

    # ---- the run ------------------------------------------------------------------------------
    def begin(self) -> None:
        """Produce and sample; the judged window opens once every member has delivered once."""
        self.producer.start()
        self.sampler.start()
        deadline = clock() + 60
        while clock() < deadline and not all(m.out.exists() and m.out.stat().st_size > 0 for m in self.members):
            time.sleep(0.1)
        self.start_at = clock()
        self.note("window opens")

    def end(self, drain_timeout: float = 60.0) -> None:
        """Stop producing, wait until every acked message is delivered (or the timeout), close the window."""
        self.producer.stop()
        self.end_at = clock()
        self.note(f"producer stopped: {self.producer.acked} acked, {self.producer.failed} failed")
        deadline = clock() + drain_timeout
        while clock() < deadline:
            delivered = {d.key for d in self.deliveries()}
            if self._acked <= delivered:
                break
            time.sleep(1.0)

    def close(self) -> None:
        for m in self.members:
            if m.alive():
                m.leave()
        self.sampler.stop()
        self.producer.stop(flush_timeout=5)

    def deliveries(self, topic: str | None = None) -> list[Delivery]:
        """Every member's deliveries of `topic` (default: the run's topic)."""
        wanted = topic or self.topic
        out = []
        for m in self.retired + self.members:
            if not m.out.exists():
                continue
            with open(m.out, errors="replace") as f:
                for line in f:
                    d = parse_log_line(m.name, line)
                    if d is not None and line.split()[1] == wanted:
                        out.append(d)
        return out

    def figures(self, topic: str | None = None) -> Figures:
        """The audit of the run's topic, or of a topic created mid-run (its window: the whole run)."""
        with self._lock:
            acked, born = set(self._acked), dict(self._born)
            if topic is not None and topic != self.topic:
                acked, born = set(self.added_topics.get(topic, ())), {}
        return audit(self.deliveries(topic), acked, start=self.start_at, end=self.end_at, born=born)

    # ---- faults ------------------------------------------------------------------------------
    def kill_member(self) -> None:
        victim = self.members[0]
        victim.kill()
        self.members.remove(victim)
        self.retired.append(victim)
        self.note(f"kill -9 {victim.name} ({victim.consumer_id})")

    def switch_step(self) -> str:
        """The step the group's switch node says now."""
        zk = self.cluster.zk_client()
        try:
            path = znodes.switch_path(self.group)
            data = zk.get(path)[0] if zk.exists(path) else None
        finally:
            zk.stop()
            zk.close()
        return decode_switch_node(data, path)

    def wait_for_step(self, step: str, timeout: float = 60.0) -> None:
        deadline = clock() + timeout
        while (now := self.switch_step()) != step:
            if clock() > deadline:
                raise RuntimeError(f"the switch never reached step {step} within {timeout:.0f}s (at {now})")
            time.sleep(0.1)

    def group_leader(self, timeout: float = 60.0) -> AppMember:
        """The running member the brokers made their group's leader (the one that runs the assignor) in
        the latest generation any running member was told of; needs members started with
        member_args ["--log-group-leader"]."""
        deadline = clock() + timeout
        while True:
            led = [(m.leads_generation(), i, m) for i, m in enumerate(self.members) if m.alive()]
            best = max(led, default=(-1, 0, None), key=lambda t: (t[0], -t[1]))
            if best[2] is not None and best[0] >= 0:
                return best[2]
            if clock() > deadline:
                raise RuntimeError(
                    f"no member logged that it leads the brokers' group within {timeout:.0f}s "
                    "(members started with --log-group-leader?)"
                )
            time.sleep(0.2)

    def kill_group_leader(self) -> None:
        """kill -9 the member whose seat leads the brokers' group, once the switch is at `handover`."""
        self.wait_for_step("handover")
        victim = self.group_leader()
        generation = victim.leads_generation()
        victim.kill()
        self.members.remove(victim)
        self.retired.append(victim)
        self.note(f"kill -9 {victim.name} ({victim.consumer_id}), the brokers' group leader of generation {generation}")

    def expire_member(self) -> None:
        victim = self.members[0]
        expire_session(self.cluster.zookeeper_connect, victim.session())
        self.note(f"expired the ZooKeeper session of {victim.name}")

    def add_partitions(self, more: int) -> None:
        total = self.partitions + more
        kafka.add_partitions(self.cluster.bootstrap_servers, self.topic, total)
        self.partitions = total
        self.producer.set_partitions(self.topic, total)
        self.note(f"partitions added: {total} now")

    def add_topic(self, partitions: int) -> str:
        """Once the switch is at `handover`, create a topic the members' wildcard subscription matches
        (member_args ["--whitelist"], subscription f"{topic}.*") and produce into it too."""
        self.wait_for_step("handover")
        name = f"{self.topic}-new"
        self.cluster.create_topic(name, partitions, self.cluster.replication_factor)
        self.producer.resume(name, epoch=0, partitions=partitions)
        self.note(f"topic {name} created ({partitions} partitions) at handover")
        return name

    def restart_coordinator(self, offsets_partitions: int) -> None:
        """kill -9 the leader of the group's __consumer_offsets partition, then start it again (the coordinator moves)."""
        p = coordinator_partition(self.group, offsets_partitions)
        with self.sampler.broker_reads_paused():
            leader = self.cluster.kill_partition_leader("__consumer_offsets", p)
            self.note(f"killed broker {leader}, leader of __consumer_offsets-{p} (the group's coordinator)")
            self.cluster.restart_broker(leader)
            self.note(f"broker {leader} restarted")
            time.sleep(2.0)  # the coordinator moving back settles
