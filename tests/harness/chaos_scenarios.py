"""Chaos scenarios on a LocalCluster: the environment (producer, checker, members) and one driver per fault."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kazoo.exceptions import NoNodeError

from harness.chaos import Checker, ConvergenceError, Report, wait_converged
from harness.chaos_members import (
    InProcessMember,
    ProcessMember,
    expire_session,
    garble_registration,
    start_members,
)
from harness.chaos_producer import SteadyProducer
from harness.chaos_proxy import TcpProxy
from harness.chaos_scala import ScalaChaosMember
from zkconsumer.cluster import broker_nodes
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes

log = logging.getLogger(__name__)

Kind = Literal["inproc", "process", "scala"]
Member = InProcessMember | ProcessMember | ScalaChaosMember
Forked = (ProcessMember, ScalaChaosMember)  # members in a process of their own


@dataclass
class ChaosSettings:
    """Member properties and the bounds the scenarios hold the group to."""

    session_timeout_ms: int = 4000
    rebalance_backoff_ms: int = 300
    rebalance_max_retries: int = 30
    auto_commit_interval_ms: int = 1000
    strategy: str = "range"
    rate: float = 160.0  # messages/s over every partition
    converge_timeout_s: float = 45.0
    deliver_timeout_s: float = 60.0
    member_nice: int | None = None  # nice value of member processes (None: the driver's own)
    scala_release: str = "1.1.1"  # the release of Scala members (harness.scala.RELEASES)
    extra: dict[str, object] = field(default_factory=dict)
    scala_extra: dict[str, object] = field(default_factory=dict)  # over props(), for Scala members only

    def props(self, zookeeper: str, group: str) -> dict[str, object]:
        return {
            "zookeeper.connect": zookeeper,
            "group.id": group,
            "zookeeper.session.timeout.ms": self.session_timeout_ms,
            "rebalance.backoff.ms": self.rebalance_backoff_ms,
            "rebalance.max.retries": self.rebalance_max_retries,
            "auto.commit.interval.ms": self.auto_commit_interval_ms,
            "partition.assignment.strategy": self.strategy,
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 200,
            **self.extra,
        }


class ChaosEnv:
    """One group under fault injection: topics with continuous production, a Checker, members.

    Example::

        with ChaosEnv(cluster, "g1", {"orders": 8}, tmp_path) as env:
            env.join(2)
            env.settle()
            kill_member(env, env.join(1, "process")[0])
            report = env.finish()
        assert report.ok, report.describe()
    """

    def __init__(
        self,
        cluster,
        group: str,
        topics: dict[str, int],
        workdir: Path,  # type: ignore[no-untyped-def]
        settings: ChaosSettings | None = None,
        *,
        replication: int = 1,
    ) -> None:
        self.cluster = cluster
        self.group = group
        self.topics = dict(topics)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.settings = settings or ChaosSettings()
        self.replication = replication
        self.checker = Checker(cluster.zookeeper_connect, group, topics, zk_data_dir=cluster.zookeeper.data_dir)
        self.producer: SteadyProducer | None = None
        self.members: list[Member] = []
        self.epochs = {t: 0 for t in topics}
        self.convergence: list[tuple[str, float | None]] = []
        self.failures: list[str] = []
        self.zk = cluster.zk_client()
        self._names = itertools.count()
        self.garbage_nodes: list[str] = []  # garbled registrations we wrote (removed by close)
        self._begun = False

    # ---- lifecycle --------------------------------------------------------------------------------
    def start(self) -> ChaosEnv:
        for topic, partitions in self.topics.items():
            if self.zk.exists(znodes.topic_path(topic)) is None:
                kafka.create_topic(self.cluster.bootstrap_servers, topic, partitions, self.replication)
        self.checker.start()
        self.producer = SteadyProducer(
            self.cluster.bootstrap_servers, self.topics, rate=self.settings.rate, on_ack=self.checker.acked
        )
        self.producer.start()
        return self

    def __enter__(self) -> ChaosEnv:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finish(self) -> Report:
        """Stop producing, wait until everything acked is delivered, shut every member down, judge."""
        assert self.producer is not None
        self.producer.stop()
        for member in self.members:
            if isinstance(member, ProcessMember) and member.stopped:
                member.cont()
        missing = self.checker.wait_delivered(self.settings.deliver_timeout_s)
        if missing:
            log.warning(
                "%d acknowledged messages still undelivered after %.0fs", len(missing), self.settings.deliver_timeout_s
            )
        self.checker.end()
        self._check_processes()
        for member in self.live:
            member.leave()
        self.checker.observer.wait_ticks()
        self.checker.stop()
        report = self.checker.verify(self.convergence, dump=self.workdir / "history.pickle")
        report.errors += self.failures
        if self.producer.failed:
            log.info(
                "producer: %d sends failed (never acknowledged; last: %s)",
                self.producer.failed,
                self.producer.last_error,
            )
        return report

    def close(self) -> None:
        """Tear everything down (after finish(), or after a failure half-way)."""
        for member in self.members:
            try:
                if isinstance(member, Forked) and member.exited() is None:
                    if member.stopped:
                        member.kill()
                    else:
                        member.leave(timeout=10)
                elif isinstance(member, InProcessMember) and member.alive:
                    member.leave()
            except Exception:  # noqa: BLE001 - best effort
                log.warning("could not stop %s", member.describe(), exc_info=True)
        for member in self.members:
            if member.proxy is not None:
                member.proxy.stop()
        if self.producer is not None:
            self.producer.stop(flush_timeout=5)
        self.checker.stop()
        for path in self.garbage_nodes:
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass
        self.zk.stop()
        self.zk.close()

    # ---- members ----------------------------------------------------------------------------------
    def new_member(self, kind: Kind = "inproc", *, proxied: bool = False) -> Member:
        """A member (not started); `proxied` routes its ZooKeeper traffic through a TcpProxy of its own."""
        proxy = TcpProxy("127.0.0.1", self.cluster.zookeeper.port).start() if proxied else None
        zookeeper = f"{proxy.address}{self.cluster.chroot or ''}" if proxy else self.cluster.zookeeper_connect
        props = self.settings.props(zookeeper, self.group)
        streams = {t: 1 for t in self.topics}
        member: Member
        if kind == "inproc":
            member = InProcessMember(props, streams, self.checker.sink, self.checker.note)
        elif kind == "scala":
            member = ScalaChaosMember(
                zookeeper,
                self.group,
                {**props, **self.settings.scala_extra},
                streams,
                self.workdir,
                f"member-{next(self._names)}",
                self.checker.note,
                release=self.settings.scala_release,
            )
        else:
            member = ProcessMember(
                zookeeper,
                self.group,
                props,
                streams,
                self.workdir,
                f"member-{next(self._names)}",
                self.checker.note,
                nice=self.settings.member_nice,
            )
        member.proxy = proxy
        return member

    def join(self, count: int = 1, kind: Kind = "inproc", *, proxied: bool = False) -> list[Member]:
        """Start `count` members at once and wait until each has joined (its first rebalance)."""
        started = start_members(lambda: self.new_member(kind, proxied=proxied), count)
        for member in started:
            if isinstance(member, Forked):
                self.checker.follow(member.out, member.consumer_id)
        self.members += started
        return started

    @property
    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive]

    def live_ids(self, *, excluding: Member | None = None) -> set[str]:
        return {m.consumer_id for m in self.live if m is not excluding}

    def _check_processes(self) -> None:
        for member in self.members:
            if isinstance(member, Forked) and member.alive and member.exited() is not None:
                member.alive = False
                self.failures.append(
                    f"member {member.describe()} exited with {member.exited()}:\n{member.log_tail(15)}"
                )

    # ---- pacing -----------------------------------------------------------------------------------
    def converge(self, what: str, *, excluding: Member | None = None, timeout: float | None = None) -> float | None:
        """Invariant 4: seconds until the live members own exactly what the assignor says (None: never)."""
        self._check_processes()
        try:
            seconds = wait_converged(
                self.zk,
                self.group,
                self.topics,
                members=self.live_ids(excluding=excluding),
                strategy=self.settings.strategy,
                timeout=timeout or self.settings.converge_timeout_s,
            )
        except ConvergenceError as exc:
            log.error("%s", exc)
            self.failures.append(f"after {what}: {exc}")
            seconds = None
        self.convergence.append((what, seconds))
        return seconds

    def settle(self, what: str = "start", dwell: float = 1.0) -> None:
        """Converge, then judge ownership gaps from here on (first call) and let traffic flow a while."""
        self.converge(what)
        if not self._begun:
            self._begun = True
            self.checker.begin()
        time.sleep(dwell)

    @contextmanager
    def fault(self, what: str, dwell: float = 1.5) -> Iterator[None]:
        """Run the fault in the with-block; afterwards converge (timed from the block's end) and dwell."""
        self.checker.note("fault", None, what)
        yield
        self.converge(what)
        time.sleep(dwell)


# ---- scenario drivers (each leaves the group converged or records why not) -------------------------
def pick(env: ChaosEnv, kind: Kind | None = None) -> Member:
    candidates = [m for m in env.live if kind is None or m.kind == kind]
    if not candidates:
        raise RuntimeError(f"no live {kind or ''} member to pick")
    return candidates[0]


def join_members(env: ChaosEnv, count: int = 1, kind: Kind = "inproc", *, proxied: bool = False) -> list[Member]:
    with env.fault(f"{count} join{'s at once' if count > 1 else ''}"):
        return env.join(count, kind, proxied=proxied)


def leave_member(env: ChaosEnv, member: Member | None = None) -> None:
    member = member or pick(env)
    with env.fault("clean leave"):
        member.leave()


def kill_member(env: ChaosEnv, member: ProcessMember | None = None) -> None:
    member = member or pick(env, "process")  # type: ignore[assignment]
    assert isinstance(member, ProcessMember)
    with env.fault("kill -9 of a member"):
        member.kill()


def expire_member(env: ChaosEnv, member: Member | None = None) -> None:
    member = member or pick(env)
    session = member.session()
    assert session is not None, f"no session known for {member.describe()}"
    with env.fault("session expiry of a member"):
        env.checker.note("expire", member.consumer_id)
        expire_session(env.cluster.zookeeper_connect, session)
        env.checker.note("session closed", member.consumer_id)


def stall_member(env: ChaosEnv, member: ProcessMember | None = None, seconds: float | None = None) -> None:
    """SIGSTOP a member for longer than its session timeout: the group must move on without it,
    and once continued it must deliver nothing of what it lost, then rejoin."""
    member = member or pick(env, "process")  # type: ignore[assignment]
    assert isinstance(member, ProcessMember)
    seconds = seconds if seconds is not None else env.settings.session_timeout_ms / 1000.0 * 2 + 1
    env.checker.note("fault", None, "stalled member")
    member.stop()
    env.converge("stall: group without the stalled member", excluding=member)
    time.sleep(max(0.0, seconds - env.settings.session_timeout_ms / 1000.0))
    with env.fault("stalled member continued"):
        member.cont()


def cut_member(env: ChaosEnv, member: Member | None = None, seconds: float | None = None) -> None:
    """Cut one member's ZooKeeper link (Kafka stays reachable) past its session timeout: it must stop
    delivering before the group hands its partitions to others, then rejoin once the link heals."""
    member = member or next((m for m in env.live if m.proxy is not None), None)
    assert member is not None and member.proxy is not None, "cut_member needs a member joined with proxied=True"
    timeout = env.settings.session_timeout_ms / 1000.0
    seconds = seconds if seconds is not None else timeout * 2 + 1
    env.checker.note("fault", None, "zookeeper link of a member cut")
    env.checker.note("cut", member.consumer_id)
    member.proxy.cut()
    env.converge("cut: group without the cut-off member", excluding=member)
    time.sleep(max(0.0, seconds - timeout))
    with env.fault("zookeeper link healed"):
        env.checker.note("heal", member.consumer_id)
        member.proxy.heal()


def restart_zookeeper(env: ChaosEnv) -> None:
    with env.fault("zookeeper restart", dwell=2.0):
        env.checker.note("zk-restart")
        env.cluster.restart_zookeeper()


def bounce_broker(env: ChaosEnv, broker_id: int, down_s: float = 3.0) -> None:
    with env.fault(f"kill -9 and restart of broker {broker_id}", dwell=2.0):
        env.checker.note("broker-kill", None, str(broker_id))
        env.cluster.brokers[broker_id].kill()
        time.sleep(down_s)
        # Recovering ~80 logs after a kill -9 took 134 s under a CPU hog: be as patient as an operator.
        env.cluster.restart_broker(broker_id, timeout=300.0)


def add_partitions(env: ChaosEnv, topic: str, extra: int = 2) -> None:
    total = env.topics[topic] + extra
    assert env.producer is not None
    with env.fault(f"{topic}: {env.topics[topic]} -> {total} partitions"):
        kafka.add_partitions(env.cluster.bootstrap_servers, topic, total, zk=env.zk)  # zk: brokers before 1.0
        env.topics[topic] = total
        env.producer.set_partitions(topic, total)


def recreate_topic(env: ChaosEnv, topic: str, timeout: float = 60.0, *, converge: bool = True, burst: int = 0) -> None:
    """Delete the topic (once everything produced to it was delivered) and create it again.

    burst: messages per partition sent the moment the new topic exists (it outgrows the old
    one's positions before anyone fetches). converge=False: for a group with no live member."""
    assert env.producer is not None
    env.producer.pause(topic)
    # Bounded: once an incarnation lost messages for good, later re-creations must not wait long.
    late = env.checker.wait_delivered(min(30.0, env.settings.deliver_timeout_s), topic=topic)
    if late:
        env.failures.append(f"{len(late)} messages of {topic} undelivered before its deletion")
    with env.fault(f"{topic} deleted and created again") if converge else nullcontext():
        env.checker.note("topic-delete", None, topic)
        kafka.delete_topic(env.cluster.bootstrap_servers, topic)
        kafka.wait_topic_deleted(env.zk, topic, timeout)
        deadline = time.monotonic() + timeout
        # The old incarnation is gone: whatever is committed from here on belongs to the new one.
        env.epochs[topic] += 1
        env.checker.new_epoch(topic, env.epochs[topic])
        while True:
            try:
                kafka.create_topic(env.cluster.bootstrap_servers, topic, env.topics[topic], env.replication)
                break
            except Exception as exc:  # noqa: BLE001 - "marked for deletion" until the brokers finish
                if "TOPIC_ALREADY_EXISTS" in str(exc) and env.zk.exists(znodes.topic_path(topic)) is not None:
                    # An earlier attempt of ours that reported a failure, or an auto-creation.
                    data, _ = env.zk.get(znodes.topic_path(topic))
                    size = len(broker_nodes.decode_topic_partitions(data, znodes.topic_path(topic)))
                    if size == env.topics[topic]:
                        break
                    raise RuntimeError(
                        f"topic {topic} was re-created by someone else with {size} partitions "
                        f"(auto.create.topics?): {exc}"
                    ) from exc
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topic {topic} could not be created again: {exc}") from exc
                time.sleep(0.5)
        env.producer.resume(topic, epoch=env.epochs[topic], partitions=env.topics[topic])
        if burst:
            env.producer.burst(topic, burst)


def recreate_topic_during_pause(
    env: ChaosEnv, topic: str, member: ProcessMember | None = None, burst: int = 400
) -> None:
    """Re-create the topic (with a burst) while a member is frozen, well within its session: it
    notices only on waking, with fetch positions and consumed offsets of the old topic."""
    member = member or pick(env, "process")  # type: ignore[assignment]
    assert isinstance(member, ProcessMember) and env.producer is not None
    env.producer.pause(topic)
    env.checker.wait_delivered(min(30.0, env.settings.deliver_timeout_s), topic=topic)  # recreate_topic reports
    env.checker.note("fault", None, f"{topic} re-created while a member paused")
    member.stop()
    try:
        recreate_topic(env, topic, burst=burst, converge=False)
    finally:
        member.cont()
    env.converge(f"{topic} re-created while a member paused")


def garble_peer(env: ChaosEnv) -> str:
    """An undecodable registration appears in the group; every member must skip it and keep working."""
    with env.fault("garbled peer registration"):
        path = garble_registration(env.zk, env.group)
        env.garbage_nodes.append(path)
    return path
