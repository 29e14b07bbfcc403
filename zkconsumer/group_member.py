"""GroupMember: a connector's session-time parts (worker, membership, offsets, rebalancer, threads), built, started and stopped as one."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from zkconsumer.broker_coordination.settings import consumer_settings
from zkconsumer.broker_coordination.shadow import ShadowGroupMember
from zkconsumer.cluster.metadata import ClusterMetadata, bootstrap_servers
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.fetcher import CurrentFetcher, Fetcher, FetchSettings, NoFetcher, PartitionFetcher
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.periodic import PeriodicTask
from zkconsumer.coordinator.rebalancer import Rebalancer
from zkconsumer.coordinator.subscription import Subscription, encode_registration
from zkconsumer.coordinator.switch_follow import SwitchFollower
from zkconsumer.coordinator.watchdog import Watchdog
from zkconsumer.coordinator.worker import RebalanceWorker
from zkconsumer.errors import ZOOKEEPER_FAILURES, BrokersUnavailable, ConsumerRebalanceFailed, ZkConsumerError, describe
from zkconsumer.metrics import Snapshot
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.version import __version__
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.deadline import Deadline
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger("zkconsumer.connector")  # the connector's logger: these lines are the connector's

# librdkafka settings our delivery semantics depend on: a passthrough may not change them.
_RESERVED_LIBRDKAFKA = {
    "group.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "enable.partition.eof",
}
# Of the shutdown's time left after the final commit, what the live switch's Kafka copy of it may take:
# the rest is the seat's leave and the session's close.
LEAVING_SHARE = 0.75


class GroupMember:
    """What a ConsumerConnector is in the group between create_message_streams* and shutdown.

    Built whole here, as kafka-python's KafkaConsumer builds its coordinator and fetcher: the
    rebalance thread (worker), the session (membership), the member's fetcher (made by the first
    rebalance that finds brokers), the offset store, the rebalancer, the lease and auto-commit
    threads and the watchdog. `start` joins the group (the first rebalance runs on the caller's
    thread) and then starts the threads; `stop` takes everything down in the order a leave needs.
    Each runs once. The session and the cluster metadata are the connector's: it opens them
    before and closes them after.

    Every part that fails for good in the background reports to `on_failure` (the connector stops
    delivery, fails the iterators and leaves).
    """

    def __init__(
        self,
        config: ConsumerConfig,
        group: GroupZk,
        cluster: ClusterMetadata,
        assignment: Assignment,
        listener: ConsumerRebalanceListener,
        subscription: Subscription,
        streams: StreamSet,
        *,
        fetch: bool,
        on_failure: Callable[[BaseException], None],
        make_fetcher: Callable[[str], PartitionFetcher] | None = None,
    ) -> None:
        """`fetch=False`: own partitions without reading them (NoFetcher). `make_fetcher`: what makes
        the fetcher for a bootstrap list instead of confluent-kafka's (the simulation's in-memory log)."""
        cfg = config
        self.config, self.group, self.assignment, self.streams = cfg, group, assignment, streams
        self.cluster = cluster
        self.consumer_id = group.consumer_id
        self._fetch, self._on_failure = fetch, on_failure
        self._lock = threading.Lock()  # start's threads against stop: a stop sees all of them started or none
        self._stopped = False
        self.worker = RebalanceWorker(
            self.consumer_id,
            self._rebalance,
            recheck_s=cfg.rebalance_recheck_ms / 1000.0,
            on_crash=on_failure,
            backoff_s=cfg.rebalance_backoff_ms / 1000.0,
        )
        self.membership = Membership(
            group,
            assignment,
            streams.gate,
            registration=lambda: encode_registration(subscription, int(time.time() * 1000), cfg.compat),
            clock=streams.gate.clock,  # one lease clock for the stamps and the gate that checks them
            session_timeout_s=cfg.zookeeper_session_timeout_ms / 1000.0,
            tick_s=cfg.zookeeper_tick_ms / 1000.0,
            trigger=self.worker.trigger,
            on_closed=on_failure,
            marker=znodes.encode_zkconsumer_marker(__version__),
        )
        self.fetchers = CurrentFetcher(make_fetcher or self._make_fetcher)
        self.offsets = OffsetStore(
            group,
            cluster=cluster,
            storage=cfg.offsets_storage,
            dual_commit=cfg.dual_commit_enabled,
            fetcher=self.fetchers,
            backoff_ms=cfg.offsets_channel_backoff_ms,
            timeout_ms=cfg.offsets_channel_socket_timeout_ms,
        )
        self.rebalancer = Rebalancer(
            cfg, group, cluster, self.membership, assignment, streams, self.offsets, self.fetchers, listener
        )
        self.switch = SwitchFollower(
            group,
            lambda field: znodes.encode_zkconsumer_marker(__version__, field),
            self._make_seat,
            self.worker.trigger,
            lambda: set(assignment.owned()) | set(assignment.releasing()),
        )
        self.membership.set_marker(self.switch.marker_now)
        self.rebalancer.switch = self.switch
        self.rebalancer.commits.mirror = self.switch.mirror
        self.tasks = self._periodic_tasks()
        self.watchdog = (  # none with zkconsumer.watchdog.interval.ms=0
            Watchdog(
                self.consumer_id,
                interval_s=cfg.watchdog_interval_ms / 1000.0,
                check=self.rebalancer.health_problems,
                trigger=self.worker.trigger,
                on_error=on_failure,
                activity=self.worker.activity,
            )
            if cfg.watchdog_interval_ms > 0
            else None
        )

    def _periodic_tasks(self) -> list[PeriodicTask]:
        cfg, membership, rebalancer = self.config, self.membership, self.rebalancer
        tasks = [
            PeriodicTask(
                f"{self.consumer_id}-session-lease",
                membership.lease.renewal_interval_s,
                membership.renew_lease,
                on_error=self._on_failure,
            )
        ]
        if cfg.auto_commit_enable:
            tasks.append(
                PeriodicTask(
                    f"{self.consumer_id}-autocommit",
                    cfg.auto_commit_interval_ms / 1000.0,
                    lambda: rebalancer.commit(retries=cfg.offsets_commit_max_retries),
                    on_error=self._on_failure,
                )
            )
        return tasks

    def start(self) -> None:
        """Register, run the first rebalance on this thread, then start the threads (unless a stop
        came meanwhile). A first rebalance that fails raises ConsumerRebalanceFailed, the threads
        not started: the caller shuts down. Failures before it (the group's paths, say) are raised as they are."""
        self.follow()
        try:
            ok = self._rebalance("consumer started")
        except Exception as exc:
            if isinstance(exc, ZkConsumerError):  # a setting to fix (access denied, ...): it says what
                raise ConsumerRebalanceFailed(
                    f"{self.consumer_id}: initial rebalance failed: {exc}; the connector was shut down"
                ) from exc
            raise ConsumerRebalanceFailed(
                f"{self.consumer_id}: initial rebalance failed with a bug ({exc!r}); the connector was shut down"
            ) from exc
        if not ok:
            raise ConsumerRebalanceFailed(
                f"{self.consumer_id}: initial rebalance failed "
                f"({self.rebalancer.stats.last_error}); the connector was shut down"
            )
        with self._lock:
            if self._stopped:
                return
            self.worker.start()
            for task in self.tasks:
                task.start()
            if self.watchdog is not None:
                self.watchdog.start()

    def follow(self) -> None:
        """Start's first step: follow the session's events and ownership signals, make the group's
        paths. (The simulation calls it and then drives the attempts and periodic work itself.)"""
        self.membership.start()
        self.group.ensure_paths()

    def stop(self, deadline: Deadline, timeout: float) -> dict[TopicPartition, int]:
        """Leave within `deadline` (docs/design.md, "Errors, threads and leaving"): a running rebalance
        gives up at its next step; the threads stop (the watchdog's read-only check is not waited for);
        the rebalancer stops delivery, commits and closes the fetcher; then the session stops being
        followed. Returns the offsets it could not commit. Parts never started stop at once."""
        with self._lock:
            self._stopped = True
        self.rebalancer.begin_shutdown()
        for task in self.tasks:
            task.stop(timeout=deadline.remaining(timeout))
        if self.watchdog is not None:  # read-only: not waited for (a check of thousands of nodes is slow)
            self.watchdog.stop(timeout=min(1.0, deadline.remaining(timeout)))
        self.worker.stop(timeout=deadline.remaining(timeout))
        unwritten = self.rebalancer.shutdown(deadline.remaining(timeout))
        switch = self.rebalancer.switch  # the follower __init__ gave the rebalancer (None: parts built without one)
        if switch is not None:
            self._carry_on_leaving(switch, deadline.remaining(timeout) * LEAVING_SHARE)
            switch.stop(deadline.remaining(timeout))  # after the carry: it commits as the seat
        self.membership.stop()
        return unwritten

    def _carry_on_leaving(self, switch: SwitchFollower, timeout: float) -> None:
        """Live switch, at shutdown: the owner nodes still ours go with the session, and a member restarted
        with `zkconsumer.coordination=broker` reads Kafka: carry ZooKeeper's offsets of them there first
        (SwitchFollower.carry_on_leaving). ZooKeeper's, read now: the final commit may have failed."""
        held = list(self.assignment.releasing())  # the shutdown moved everything it owned there
        if not held or switch.seat is None:
            return
        try:
            zookeeper = self.group.read_offsets(held, self.rebalancer.decider.topic_epochs)
        except ZOOKEEPER_FAILURES as exc:
            log.warning(
                "%s: leaving without carrying the offsets of %s to Kafka: ZooKeeper's cannot be read (%s)",
                self.consumer_id,
                partitions_text(sorted(held)),
                describe(exc),
            )
            return
        switch.carry_on_leaving(zookeeper, timeout, self.rebalancer.commits.ownership_unconfirmed_on_leaving)

    def snapshot(self) -> Snapshot:
        """The member's counters, as the connector's metrics collector reads them."""
        rebalancer, offsets, watchdog = self.rebalancer, self.offsets, self.watchdog
        stats = rebalancer.stats
        return Snapshot(
            rebalances_succeeded=stats.succeeded,
            rebalances_failed=stats.failed,
            rebalance_last_seconds=stats.last_seconds,
            rebalance_failing_runs=self.worker.failed_runs,
            owned=self.assignment.counts_by_topic(),
            queued_chunks={s.queue.name: len(s.queue) for s in self.streams.all()},
            zookeeper_commits=offsets.zookeeper_writes,
            kafka_commits=offsets.kafka_writes,
            commit_failures=offsets.failures,
            kafka_commits_rejected=offsets.kafka_rejected,
            kafka_commit_errors=offsets.kafka_failed,
            watchdog_alerts=watchdog.alerts if watchdog is not None else 0,
            ownership_problems=len(watchdog.problems) if watchdog is not None else 0,
            ignored_peers=rebalancer.decider.peers.count,
        )

    def _rebalance(self, reason: str) -> bool:
        ok = self.rebalancer.synced_rebalance(reason)
        self.switch.publish(ok)  # the live switch's step this member acts on, into its marker
        return ok

    def _make_seat(
        self, topics: list[str], on_change: Callable[[str], None], holding: Callable[[], set[TopicPartition]]
    ) -> ShadowGroupMember:
        """Our seat in the brokers' group for the live switch (docs/live-switch.md)."""
        cfg = self.config
        given = cfg.librdkafka_overrides.get("bootstrap.servers")
        found = given or bootstrap_servers(
            self.cluster.brokers(), security_protocol=cfg.broker_security_protocol, listener=cfg.broker_listener
        )
        if not found:
            raise BrokersUnavailable("the live switch's seat in the brokers' group finds no broker endpoint")
        return ShadowGroupMember(
            self.consumer_id,
            topics,
            consumer_settings(cfg, found),
            on_change=on_change,
            on_failure=self._on_failure,
            holding=holding,
        )

    def _make_fetcher(self, bootstrap: str) -> PartitionFetcher:
        if not self._fetch:
            # Kafka-side offsets (dual commit) go through an idle fetcher's Consumer: it is given no
            # partition, so it fetches nothing, and commits take the reading member's path.
            kafka_side = self.config.offsets_storage == "kafka"
            return NoFetcher(self._new_fetcher(bootstrap) if kafka_side else None)
        return self._new_fetcher(bootstrap)

    def _new_fetcher(self, bootstrap: str) -> Fetcher:
        cfg = self.config
        overrides = cfg.librdkafka_overrides
        for key in sorted(_RESERVED_LIBRDKAFKA & overrides.keys()):
            log.warning("ignoring librdkafka.%s: zkconsumer manages it", key)
            overrides.pop(key)
        # what pre-0.10 brokers need (broker_nodes.client_settings), unless the user's overrides say otherwise
        settings = FetchSettings.from_config(cfg, bootstrap, {**self.fetchers.broker_settings, **overrides})
        fetcher = Fetcher(settings, name=self.consumer_id, on_error=self._on_failure, reader_turns=cfg.fetch_in_reader)
        fetcher.start()
        return fetcher
