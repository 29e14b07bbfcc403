"""Simulated group members: the real membership, rebalancer and iterators over the in-memory ZooKeeper and log.

Nothing here runs a thread or reads a real clock: a driver (see sim_schedule) decides which
member does what next, so every interleaving is reproducible from a seed. The members are built by
the production builder, GroupMember (Membership, Rebalancer, OffsetStore, the watchdog), over
GroupZk, Assignment and a StreamSet, with none of its threads started; only the Kafka fetcher is
replaced, by `SimFetcher` over `SimLog`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.zkmodel import ZkModel
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import StaticSubscription
from zkconsumer.errors import ConsumerTimeout, is_retriable
from zkconsumer.group_member import GroupMember
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(__name__)

Key = tuple[str, int]


class SimLog:
    """In-memory partition logs: topic -> partition -> number of messages (offsets 0..n-1)."""

    def __init__(self) -> None:
        self.ends: dict[Key, int] = {}

    def produce(self, key: Key, count: int = 1) -> None:
        self.ends[key] = self.ends.get(key, 0) + count

    def end(self, key: Key) -> int:
        return self.ends.get(key, 0)


class SimFetcher:
    """The PartitionFetcher contract over SimLog: `pump()` moves one chunk per partition into its queue."""

    consumer: object | None = None  # a test doing offsets.storage=kafka sets one
    settings = None  # no brokers to describe the broker-side group with

    def __init__(self, log_: SimLog, chunk: int = 3) -> None:
        self._log = log_
        self._chunk = chunk
        self._infos: dict[Key, PartitionTopicInfo] = {}
        self.closed = False

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        self._infos = {}
        self.add(infos)

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        for info in infos:
            if info.fetched_offset < 0:  # nothing committed: auto.offset.reset=smallest
                info.fetched_offset = info.consumed_offset = 0
            self._infos[info.key] = info

    def remove(self, keys: Sequence[Key]) -> None:
        for key in keys:
            self._infos.pop(key, None)

    def stop_fetching(self) -> None:
        self._infos = {}

    def assigned(self) -> set[Key] | None:
        return set(self._infos)

    def close(self, timeout: float = 10.0) -> None:
        self.closed = True
        self._infos = {}

    def set_deadline(self, deadline: object) -> None:
        pass  # the simulation's fetcher makes no calls to bound

    def pump(self) -> None:
        for key, info in list(self._infos.items()):
            end = self._log.end(key)
            if not info.active or info.fetched_offset >= end:
                continue
            upto = min(end, info.fetched_offset + self._chunk)
            messages = [
                Message(topic=key[0], partition=key[1], offset=o, value=b"") for o in range(info.fetched_offset, upto)
            ]
            if info.queue.offer(Chunk(info, messages)):
                info.fetched_offset = upto


@dataclass
class Delivery:
    member: str
    thread: str
    key: Key
    offset: int
    at_ms: int


@dataclass
class SimMember:
    """One member: the production pieces wired as ConsumerConnector wires them, minus its threads."""

    name: str
    model: ZkModel
    group_id: str
    topic: str
    streams_count: int
    log_: SimLog
    session_timeout_ms: int
    on_delivery: Callable[[SimMember, Delivery], None]  # checks the invariants at the very moment
    on_bug: Callable[[str, BaseException], None]
    # Fault points where an attempt makes no ZooKeeper call (the listener's callbacks): the driver
    # may let the world move on there (pause(member, where)): expire the session, run other members.
    pause: Callable[[SimMember, str], None] = lambda _m, _where: None
    incremental: bool = True  # rebalance.incremental
    transaction_max_bytes: int = 1 << 19  # small: a claim goes out in several transactions
    alive: bool = True
    frozen: bool = False
    left: bool = False
    # The lease clock: None is the model's. `production_clock` builds the lease with zkconsumer's
    # own default clock instead, read through the OS (a host-suspend test, sim_host, stands a
    # simulated host's clocks in for the OS's).
    clock: Callable[[], float] | None = None
    production_clock: bool = False
    retrying: bool = False  # a failed run waits for its retry (the worker's back-off)
    # The link drops (client.suspensions) up to which a successful rebalance has since read every
    # owned node again: from there on the member holds a watch on each node it owns.
    watching_since: int = -1
    # zkconsumer.release.linger.ms; with it, `linger_wait(member, seconds)` stands in for the
    # linger's real-time wait (the driver lets logical time pass, and the world act, meanwhile).
    release_linger_ms: int = 0
    linger_wait: Callable[[SimMember, float], None] | None = None

    def __post_init__(self) -> None:
        self.consumer_id = f"{self.group_id}_{self.name}"
        self.config = ConsumerConfig.from_mapping(
            {
                "zookeeper.connect": "sim:2181",
                "group.id": self.group_id,
                "consumer.id": self.name,
                "zookeeper.session.timeout.ms": self.session_timeout_ms,
                "rebalance.max.retries": 1,
                # One attempt per rebalance() call: the schedule, not a real-time wait, lets holders go.
                "zkconsumer.rebalance.watched.wait.ms": 0,
                "rebalance.backoff.ms": 0,
                "offsets.channel.backoff.ms": 0,
                "auto.offset.reset": "smallest",
                "consumer.timeout.ms": 0,
                "offsets.commit.max.retries": 1,
                "zkconsumer.release.linger.ms": self.release_linger_ms,
                "zkconsumer.rebalance.incremental": self.incremental,
            }
        )  # lingers only where the driver stands in for their wait (a Scala joiner's schedule)
        self.client: Any = self.model.client(self.name, timeout=self.session_timeout_ms / 1000.0)
        self.client.start()
        clock = self.clock or (lambda: self.model.now_ms / 1000.0)
        timing: dict[str, Any] = {} if self.production_clock else {"clock": clock}
        subscription = StaticSubscription.of({self.topic: self.streams_count})
        self.streams = StreamSet(
            self.consumer_id, static={self.topic: self.streams_count}, capacity=2, consumer_timeout_ms=0, **timing
        )
        guard = getattr(self.streams, "_guard", None)
        if guard is not None:  # its thread would wait in real time; consume() does its work instead
            guard.stop(timeout=5.0)
        self.group = GroupZk(
            self.client,
            self.group_id,
            self.consumer_id,
            timeout_s=0.0,
            transaction_max_bytes=self.transaction_max_bytes,
        )
        self.assignment = Assignment()
        self.fetcher = SimFetcher(self.log_)
        self.cluster = ClusterMetadata(self.group.io)
        # Built as ConsumerConnector builds a member (GroupMember), with the model's log for a fetcher;
        # its threads are never started: the schedule runs attempts, commits, renewals and checks.
        self.member = GroupMember(
            self.config,
            self.group,
            self.cluster,
            self.assignment,
            PausingListener(self),
            subscription,
            self.streams,
            fetch=True,
            on_failure=lambda error: self.on_bug(f"{self.name} background", error),
            make_fetcher=lambda _bootstrap: self.fetcher,
        )
        self.membership = self.member.membership
        self.offsets = self.member.offsets
        self.rebalancer = self.member.rebalancer
        watchdog = self.member.watchdog
        assert watchdog is not None  # zkconsumer.watchdog.interval.ms keeps its default
        self.watchdog = watchdog
        if self.linger_wait is not None:
            self.rebalancer.linger.wait = self._linger  # type: ignore[method-assign]
            # A leave's linger sleeps in real time (Rebalancer.shutdown): not modelled, none.
            self.rebalancer.linger.leaving = lambda *_args: 0.0  # type: ignore[method-assign]
        self._guard("start", self.member.follow)  # a fault on the paths' creation: the rebalance makes them
        self.trigger("consumer started")

    def _linger(self) -> bool:
        """ReleaseLinger.wait in logical time: the driver lets the linger's remaining time pass."""
        left = self.rebalancer.linger.remaining()
        if left > 0 and self.linger_wait is not None:
            self.linger_wait(self, left)
        return True

    @property
    def pending(self) -> list[str]:
        """The rebalance triggers not yet run (the member's worker's, which the schedule runs)."""
        return self.member.worker.pending

    def trigger(self, reason: str) -> None:
        self.member.worker.trigger(reason)

    def tracked(self) -> set[Key]:
        """Every partition whose owner node this member accounts for: owned, releasing or orphan."""
        return set(self.assignment.owned()) | set(self.assignment.releasing())

    def thread_ids(self) -> list[str]:
        return [f"{self.consumer_id}-{i}" for i in range(self.streams_count)]

    def _guard(self, what: str, fn: Callable[[], object]) -> object:
        """Run one production step; retriable failures are expected under faults, anything else is a bug."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified
            if is_retriable(exc) or _blocked(exc):
                return None
            self.on_bug(f"{self.name} {what}", exc)
            return None

    # ---- the steps a driver schedules ------------------------------------------------------------
    def rebalance(self) -> None:
        if not self.pending and not self.retrying:
            return
        reasons = list(self.pending) or ["retry after a failed rebalance"]
        self.pending.clear()
        self.retrying = False
        # kazoo runs state listeners at once, so a rebalance after a link drop reads past the caches
        # GroupZk forgets there; the model queues them: one that has not run yet leaves the caches.
        began = self.client.suspensions if not self.model.pending_listeners(self.client) else -1
        ok = self._guard("rebalance", lambda: self.rebalancer.synced_rebalance(", ".join(reasons)))
        if ok is not True:
            # The worker's back-off retry: no trigger is pending meanwhile (the watchdog checks then).
            self.retrying = True
        elif self.client.suspensions == began:
            self.watching_since = began

    def hears_of_owner_nodes(self, path: str | None = None) -> bool:
        """Whether a change to an owner node it holds (`path`, or every one it owns) reaches it:
        connected, not frozen, no link drop (which takes every watch with it) since a rebalance last
        read its owned nodes again, and a data watch armed on the node now (a successful rebalance
        that never read them, or a watch that fired and was not re-armed yet, hears nothing); or,
        hearing nothing, delivers nothing until it has read them again (a same-session reconnect)."""
        if not (self.client.connected and not self.frozen):
            return False
        if self.membership.holding_for_reread:
            # Reconnected in the same session, its watches gone: it hears nothing, but delivers
            # nothing either until its owner nodes are read again (issue 51, finding 2).
            return True
        if self.watching_since != self.client.suspensions:
            return False
        paths = [path] if path is not None else [znodes.owner_path(self.group_id, *k) for k in self.assignment.owned()]
        return all(self.client._data_w.get(p) for p in paths)

    def consume(self, budget: int) -> None:
        self.streams.gate.enforce_lease()  # what the LeaseGuard thread does in a real member
        self.fetcher.pump()
        for stream in self.streams.all():
            for _ in range(budget):
                try:
                    msg = next(stream.iterator)
                except (ConsumerTimeout, StopIteration):
                    break
                self.on_delivery(
                    self,
                    Delivery(self.name, stream.name, (msg.topic(), msg.partition()), msg.offset(), self.model.now_ms),
                )
            self.fetcher.pump()

    def commit(self) -> None:
        self.streams.mark_consumed()
        self._guard("commit", lambda: self.rebalancer.commit())

    def renew_lease(self) -> None:
        self._guard("lease", self.membership.renew_lease)

    def check_health(self) -> None:
        self._guard("watchdog", self.watchdog.run_once)

    def leave(self) -> None:
        """A clean shutdown, as ConsumerConnector.shutdown does it."""
        self.rebalancer.begin_shutdown()
        self._guard("shutdown", lambda: self.rebalancer.shutdown(1.0))
        self.membership.stop()
        self.client.stop()
        self.alive, self.left = False, True


class PausingListener(ConsumerRebalanceListener):
    """The listener's callbacks are where an attempt waits on the application, making no ZooKeeper
    call: the driver's pause point."""

    def __init__(self, member: SimMember) -> None:
        self.member = member

    def before_releasing_partitions(self, partitions: Mapping[str, set[int]]) -> None:
        self.member.pause(self.member, "before_releasing_partitions")

    def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, str]]) -> None:
        self.member.pause(self.member, "before_starting_fetchers")


def _blocked(exc: BaseException) -> bool:
    from harness.zkmodel import SimBlocked

    return isinstance(exc, SimBlocked)


def owner_nodes(model: ZkModel, group_id: str, topic: str) -> dict[int, tuple[str, int]]:
    """partition -> (thread id, ephemeral owner session) as the model holds them right now."""
    folder = znodes.owners_path(group_id, topic)
    if not model.exists(folder):
        return {}
    return {
        int(c): (model.data(f"{folder}/{c}").decode(), model.stat(f"{folder}/{c}").ephemeralOwner)
        for c in model.children(folder)
    }


def committed(model: ZkModel, group_id: str, key: Key) -> int | None:
    path = znodes.offset_path(group_id, *key)
    return int(model.data(path)) if model.exists(path) else None
