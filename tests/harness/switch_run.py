"""One audited migration run on a real cluster: producer, member processes, ownership sampler, faults, figures.

The parts of scripts/bench/live_switch.py (and its smoke, tests/cluster/test_live_switch_bench_smoke.py):
`AuditRun` owns one group on one fresh topic of a running LocalCluster. It produces numbered
messages at a set rate (harness.chaos_producer), runs members as processes (harness.switch_member:
the ConsumerConnector application API), samples ownership every 100 ms (ZooKeeper's owner nodes
and the brokers' group through DescribeGroups), does the faults, runs the `zkconsumer` CLI as an
operator would, and in the end hands the delivery logs to harness.switch_audit.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTP
from confluent_kafka.admin import AdminClient

from harness import python_env
from harness.chaos_members import expire_session
from harness.chaos_producer import SteadyProducer
from harness.members import committed_offsets
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
from zkconsumer.migration.switch import decode_switch_node
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.process import die_with_parent
from zkconsumer.zookeeper import znodes

SAMPLE_PERIOD = 0.1
# librdkafka's cgrp debug line (harness.switch_member --log-group-leader) in the member that leads the group
_LEADS = re.compile(r"JoinGroup response: GenerationId (\d+),.* LeaderId \S+ \(me\)")


def clock() -> float:
    """CLOCK_MONOTONIC: the clock harness.switch_member stamps deliveries with."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


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


class AppMember:
    """harness.switch_member in a child process (SIGTERM: clean shutdown; kill(): kill -9)."""

    def __init__(self, run: AuditRun, name: str, props: Mapping[str, object]) -> None:
        self.name = name
        self.out = run.workdir / f"{name}.deliveries"
        self.log = run.workdir / f"{name}.log"
        self.consumer_id = ""
        self._args = [
            sys.executable,
            "-m",
            "harness.switch_member",
            f"--zookeeper={run.cluster.zookeeper_connect}",
            f"--group={run.group}",
            f"--topic={run.subscription}",
            f"--out={self.out}",
            *run.member_args,
            *(f"--property={k}={v}" for k, v in props.items()),
        ]
        self.proc: subprocess.Popen[str] | None = None
        self._terminated = False

    def spawn(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self._args,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=python_env(),
                # the death signal is tied to the forking thread: only the main thread's children get it
                preexec_fn=die_with_parent if threading.current_thread() is threading.main_thread() else None,
            )

    def wait_ready(self, timeout: float = 90.0) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            raise RuntimeError(f"member {self.name} did not join within {timeout:.0f}s; log tail:\n{self.log_tail()}")
        self.consumer_id = json.loads(line)["consumer_id"]

    def session(self) -> tuple[int, bytes]:
        sid, password = Path(str(self.out) + ".session").read_text().split()
        return int(sid, 16), bytes.fromhex(password)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def terminate(self) -> None:
        """SIGTERM once (the member shuts down cleanly: commits, leaves the group)."""
        if self.proc is not None and self.proc.poll() is None and not self._terminated:
            self.proc.send_signal(signal.SIGTERM)
            self._terminated = True

    def leave(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"member {self.name} did not shut down within {timeout:.0f}s") from None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def leads_generation(self) -> int:
        """The last generation of the brokers' group this member was told it leads (-1: none), from its
        log's JoinGroup answers (harness.switch_member --log-group-leader)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return -1
        return max((int(m.group(1)) for m in _LEADS.finditer(text)), default=-1)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class Sample:
    at: float
    zk_owned: frozenset[int]
    broker_state: str
    broker_assigned: frozenset[int]


@dataclass
class OwnershipSampler:
    """Every 100 ms: the owner nodes in ZooKeeper and the brokers' group (DescribeGroups); one thread."""

    run: AuditRun
    samples: list[Sample] = field(default_factory=list)
    errors: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._broker_reads = threading.Lock()  # held by a DescribeGroups in flight, or by a pause
        self._zk = self.run.cluster.zk_client()
        self._admin: AdminClient | None = AdminClient({"bootstrap.servers": self.run.cluster.bootstrap_servers})
        self._thread = threading.Thread(target=self._loop, name="switch-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._zk.stop()
        self._zk.close()
        # librdkafka handles are destroyed here, while the brokers still run: a destroy left to the
        # interpreter's exit, after the cluster stopped, can wait on brokers that are gone.
        self._admin = None

    @contextlib.contextmanager
    def broker_reads_paused(self) -> Iterator[None]:
        """No DescribeGroups in flight (one under way is waited for) until the block ends: librdkafka
        2.16 aborts or crashes the process when the connection to the coordinator drops under a
        coordinator request (confluentinc/librdkafka#4605), so the sampler waits out a coordinator's
        kill and restart, leaving a gap in its samples."""
        with self._broker_reads:
            yield

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_PERIOD):
            if not self._broker_reads.acquire(blocking=False):
                continue  # paused
            try:
                self.samples.append(self._sample())
            except Exception:  # noqa: BLE001 - a coordinator moving, ZooKeeper slow: counted, not fatal
                self.errors += 1
            finally:
                self._broker_reads.release()

    def _sample(self) -> Sample:
        at = clock()
        folder = znodes.owners_path(self.run.group, self.run.topic)
        owned = frozenset(int(c) for c in self._zk.get_children(folder)) if self._zk.exists(folder) else frozenset()
        assert self._admin is not None
        # A request left to time out inside librdkafka while it looks up the coordinator aborted the
        # process (librdkafka 2.x: rd_kafka_enq_once_del_source_return: `eonce->refcnt > 0`): give
        # each request the time to answer, and let a slow answer show as a gap between samples.
        future = self._admin.describe_consumer_groups([self.run.group], request_timeout=15.0)[self.run.group]
        group = future.result(timeout=20.0)
        assigned = frozenset(
            tp.partition
            for m in group.members or []
            for tp in (m.assignment.topic_partitions if m.assignment else [])
            if tp.topic == self.run.topic
        )
        return Sample(at, owned, str(group.state).rsplit(".", 1)[-1], assigned)

    def unowned_max(self, start: float, end: float) -> float:
        """The longest a partition went with neither an owner node nor a brokers' assignment, within
        [start, end] (by samples: 0.1 s resolution; a partition still unowned at `end` counts until then)."""
        since: dict[int, float] = {}
        worst = 0.0
        for s in self.samples:
            if not start <= s.at <= end:
                continue
            held = s.zk_owned | s.broker_assigned
            for p in range(self.run.partitions):
                if p in held:
                    if p in since:
                        worst = max(worst, s.at - since.pop(p))
                elif p not in since:
                    since[p] = s.at
        return max([worst, *(end - t for t in since.values())])


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
