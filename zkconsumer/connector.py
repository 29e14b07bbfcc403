"""ConsumerConnector: the public façade that wires membership, rebalancer, fetcher, streams and threads."""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from zkconsumer import __version__, zkdata, zkio
from zkconsumer.assignment import Assignment
from zkconsumer.broker_group import admin_config, describe_broker_group
from zkconsumer.config import ConfigError, ConsumerConfig
from zkconsumer.dual_commit import BrokerGroupView
from zkconsumer.errors import (
    ConsumerError,
    ConsumerRebalanceFailed,
    ZkConsumerError,
    ZooKeeperAccessDenied,
    is_retriable,
)
from zkconsumer.fetch_settings import FetchSettings
from zkconsumer.fetcher import Fetcher
from zkconsumer.group import GroupZk
from zkconsumer.listener import ConsumerRebalanceListener
from zkconsumer.membership import Membership
from zkconsumer.metrics import ConnectorCollector, Snapshot
from zkconsumer.offsets import OffsetStore, PeriodicTask
from zkconsumer.partition_fetcher import NoFetcher, PartitionFetcher
from zkconsumer.rebalancer import Rebalancer
from zkconsumer.stream import KafkaStream, StreamSet
from zkconsumer.subscription import (
    StaticSubscription,
    Subscription,
    TopicFilter,
    WildcardSubscription,
    encode_registration,
    make_consumer_id,
)
from zkconsumer.watchdog import Watchdog
from zkconsumer.worker import RebalanceWorker
from zkconsumer.zk_auth import zookeeper_auth

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

# librdkafka settings our delivery semantics depend on: a passthrough may not change them.
_RESERVED_LIBRDKAFKA = {
    "group.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "enable.partition.eof",
}


class ConsumerConnector:
    """A member of a legacy ZooKeeper-coordinated consumer group (Scala's ZookeeperConsumerConnector).

    Example::

        with ConsumerConnector({"zookeeper.connect": "zk:2181/kafka", "group.id": "billing"}) as conn:
            streams = conn.create_message_streams({"orders": 2})
            for msg in streams["orders"][0]:
                handle(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value())

    Streams may be drained from separate threads. `shutdown()` (or leaving the `with` block)
    ends every iterator, commits, and leaves the group; it is safe from any thread. If a
    background thread fails with a bug, the member leaves the group and every iterator raises
    ConsumerError: it never stays in the group owning partitions it does not consume.
    """

    def __init__(
        self,
        config: ConsumerConfig | Mapping[str, object],
        *,
        listener: ConsumerRebalanceListener | None = None,
        fetch: bool = True,
    ) -> None:
        """`fetch=False` makes a member that owns partitions but reads none: its streams stay
        empty and progress is committed with `commit_positions()` (a Spark driver, say)."""
        self.config = config if isinstance(config, ConsumerConfig) else ConsumerConfig.from_mapping(config)
        if not fetch and self.config.offsets_storage == "kafka":
            raise ConfigError(
                "offsets.storage",
                "offsets.storage=kafka needs fetch=True (it commits through the fetcher's Kafka connection)",
            )
        self._fetch = fetch
        self.listener = listener or ConsumerRebalanceListener()
        self.consumer_id = make_consumer_id(
            self.config.group_id,
            self.config.consumer_id,
            hostname=socket.gethostname(),
            now_ms=int(time.time() * 1000),
            uuid_int=uuid.uuid4().int,
        )
        self.zk_auth = zookeeper_auth(self.config)  # a bad JAAS setting fails here, naming the property
        self._zk = self._connect_zookeeper()
        self.group = GroupZk(
            self._zk,
            self.config.group_id,
            self.consumer_id,
            timeout_s=self.config.zookeeper_session_timeout_ms / 1000.0,
            transaction_max_bytes=self.config.zookeeper_transaction_max_bytes,
            identity=self.zk_auth.identity,
            acl=self.zk_auth.node_acl(),
        )
        self.assignment = Assignment()
        self._lock = threading.Lock()
        self._subscription: Subscription | None = None
        self._streams: StreamSet | None = None
        self._membership: Membership | None = None
        self._rebalancer: Rebalancer | None = None
        self._worker: RebalanceWorker | None = None
        self._tasks: list[PeriodicTask] = []
        self._watchdog: Watchdog | None = None
        self._closed = False
        self._shutdown_done = threading.Event()
        self._unwritten: dict[tuple[str, int], int] = {}
        self.failure: BaseException | None = None

    # ---- public API ----------------------------------------------------------------------------
    def create_message_streams(self, topic_count_map: Mapping[str, int]) -> dict[str, list[KafkaStream]]:
        """Subscribe to topics with a number of streams each; returns topic -> streams."""
        subscription = StaticSubscription.of(dict(topic_count_map))
        streams = StreamSet(
            self.consumer_id,
            static=dict(subscription.topic_counts),
            capacity=self.config.queued_max_message_chunks,
            consumer_timeout_ms=self.config.consumer_timeout_ms,
        )
        self._join(subscription, streams)
        return {topic: list(s) for topic, s in streams.by_topic.items()}

    def create_message_streams_by_filter(self, topic_filter: TopicFilter, num_streams: int = 1) -> list[KafkaStream]:
        """Subscribe to every topic a Whitelist/Blacklist accepts, now and later."""
        subscription = WildcardSubscription(topic_filter, num_streams)
        streams = StreamSet(
            self.consumer_id,
            wildcard_streams=num_streams,
            capacity=self.config.queued_max_message_chunks,
            consumer_timeout_ms=self.config.consumer_timeout_ms,
        )
        self._join(subscription, streams)
        return list(streams.wildcard)

    def commit_offsets(self) -> None:
        """Commit every stream's progress, counting the last message each handed out as finished.

        Also commits partitions being released right now, so calling it from
        `before_releasing_partitions` saves their progress (the MirrorMaker pattern)."""
        rebalancer = self._require_started()
        rebalancer.streams.mark_consumed()
        rebalancer.commit()

    def commit_positions(
        self, positions: Mapping[tuple[str, int], int], *, epochs: Mapping[str, int | None] | None = None
    ) -> dict[tuple[str, int], bool]:
        """Commit the next offset to read per partition, for progress tracked outside the streams.

        Only partitions this member owns are written (fenced by owner node); the result says
        which were. With `epochs` (topic -> incarnation the positions count in), a partition
        claimed in another incarnation of its topic is not written either. Use it with `fetch=False`.
        """
        return self._require_started().commit_positions(positions, epochs)

    def owned_positions(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> next offset to consume (-1: nothing committed yet) of what we own.
        Never blocks on ZooKeeper or a running rebalance."""
        return self.assignment.positions()

    def ownership_confirmed(self) -> bool:
        """True while ZooKeeper vouches for what we own: connected, and our session confirmed recently
        enough that it cannot have expired (the lease the iterators' delivery gate checks). After a
        freeze past the session timeout this is False although kazoo still says CONNECTED."""
        streams = self._streams
        return streams is not None and streams.gate.usable()

    def owned_partitions(self) -> dict[tuple[str, int], str]:
        """(topic, partition) -> thread id this member owns right now. Never blocks."""
        return self.assignment.owned()

    def metrics(self) -> ConnectorCollector:
        """A prometheus_client collector for this connector: `REGISTRY.register(conn.metrics())`."""
        return ConnectorCollector(self._metrics_snapshot, self.config.client_id or "", self.config.group_id)

    def _metrics_snapshot(self) -> Snapshot:
        rebalancer, worker, watchdog, streams = self._rebalancer, self._worker, self._watchdog, self._streams
        if rebalancer is None:
            return Snapshot()
        stats, offsets = rebalancer.stats, rebalancer.offsets
        return Snapshot(
            rebalances_succeeded=stats.succeeded,
            rebalances_failed=stats.failed,
            rebalance_last_seconds=stats.last_seconds,
            rebalance_failing_runs=worker.failed_runs if worker is not None else 0,
            owned=self.assignment.counts_by_topic(),
            queued_chunks={s.queue.name: len(s.queue) for s in streams.all()} if streams is not None else {},
            zookeeper_commits=offsets.zookeeper_writes,
            kafka_commits=offsets.kafka_writes,
            commit_failures=offsets.failures,
            kafka_commits_rejected=offsets.kafka_rejected,
            kafka_commit_errors=offsets.kafka_failed,
            watchdog_alerts=watchdog.alerts if watchdog is not None else 0,
            ownership_problems=len(watchdog.problems) if watchdog is not None else 0,
            ignored_peers=rebalancer.peers.count,
        )

    @property
    def rebalancer(self) -> Rebalancer:
        return self._require_started()

    @property
    def membership(self) -> Membership:
        self._require_started()
        assert self._membership is not None
        return self._membership

    def shutdown(self, timeout: float = 30.0) -> dict[tuple[str, int], int]:
        """End the iterators, commit (if auto-commit), leave the group, within `timeout` seconds even
        with ZooKeeper down. Idempotent, from any thread. Returns the offsets it could not commit
        (empty: everything was written); they are also logged."""
        with self._lock:
            first = not self._closed
            self._closed = True
        if not first:  # another thread is leaving (or left): wait for it, and say what it said
            self._shutdown_done.wait(timeout)
            return dict(self._unwritten)
        try:
            self._unwritten = self._leave(timeout)
        finally:
            self._shutdown_done.set()
        return dict(self._unwritten)

    def _leave(self, timeout: float) -> dict[tuple[str, int], int]:
        log.info("%s shutting down", self.consumer_id)
        deadline = zkio.Deadline(timeout)
        self.group.io.deadline = deadline  # bounds every ZooKeeper call from here on, on every thread
        if self._rebalancer is not None:
            self._rebalancer.begin_shutdown()
        for task in self._tasks:
            task.stop(timeout=deadline.remaining(timeout))
        if self._watchdog is not None:  # read-only: not waited for (a check of thousands of nodes is slow)
            self._watchdog.stop(timeout=min(1.0, deadline.remaining(timeout)))
        if self._worker is not None:
            self._worker.stop(timeout=deadline.remaining(timeout))
        unwritten: dict[tuple[str, int], int] = {}
        if self._rebalancer is not None:
            unwritten = self._rebalancer.shutdown(deadline.remaining(timeout))
        if self._membership is not None:
            self._membership.stop()
        if not zkio.close_quietly(self._zk, max(0.1, deadline.remaining(timeout))):
            log.warning(
                "%s: closing the ZooKeeper session did not finish in time; its nodes expire with the session",
                self.consumer_id,
            )
        if unwritten:
            log.warning(
                "%s: left without committing %s",
                self.consumer_id,
                ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(unwritten.items())),
            )
        return unwritten

    def __enter__(self) -> ConsumerConnector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # ---- wiring --------------------------------------------------------------------------------
    def _connect_zookeeper(self) -> KazooClient:
        cfg = self.config
        try:
            return zkio.connect(
                cfg.zookeeper_connect,
                session_timeout_s=cfg.zookeeper_session_timeout_ms / 1000.0,
                connect_timeout_s=cfg.zookeeper_connection_timeout_ms / 1000.0,
                auth=self.zk_auth,
            )
        except ZooKeeperAccessDenied:
            raise
        except Exception as exc:
            raise ConnectionError(
                f"cannot reach ZooKeeper at {cfg.zookeeper_connect} within "
                f"{cfg.zookeeper_connection_timeout_ms} ms: {exc}"
            ) from exc

    def _join(self, subscription: Subscription, streams: StreamSet) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("this connector has been shut down")
            if self._subscription is not None:
                raise RuntimeError("create_message_streams* may be called only once per connector")
            self._subscription = subscription
            self._streams = streams
        cfg = self.config
        worker = RebalanceWorker(
            self.consumer_id,
            self._rebalance,
            recheck_s=cfg.rebalance_recheck_ms / 1000.0,
            on_crash=self._die,
            backoff_s=cfg.rebalance_backoff_ms / 1000.0,
        )
        membership = Membership(
            self.group,
            self.assignment,
            streams.gate,
            registration=lambda: encode_registration(subscription, int(time.time() * 1000), cfg.compat),
            session_timeout_s=cfg.zookeeper_session_timeout_ms / 1000.0,
            trigger=worker.trigger,
            marker=zkdata.encode_zkconsumer_marker(__version__),
        )
        offsets = OffsetStore(
            self.group,
            storage=cfg.offsets_storage,
            dual_commit=cfg.dual_commit_enabled,
            kafka_consumer=lambda: rebalancer.fetcher.consumer if rebalancer.fetcher else None,
            backoff_ms=cfg.offsets_channel_backoff_ms,
            timeout_ms=cfg.offsets_channel_socket_timeout_ms,
            describe_group=lambda timeout_s: self._describe_broker_group(rebalancer, timeout_s),
        )
        rebalancer = Rebalancer(
            cfg, self.group, membership, self.assignment, streams, offsets, self._make_fetcher, self.listener
        )
        self._worker, self._membership, self._rebalancer = worker, membership, rebalancer
        self.group.ensure_paths()
        membership.start()
        try:
            ok = self._rebalance("consumer started")
        except Exception as exc:
            self.shutdown()
            if isinstance(exc, ZkConsumerError):  # a setting to fix (access denied, ...): it says what
                raise ConsumerRebalanceFailed(
                    f"{self.consumer_id}: initial rebalance failed: {exc}; the connector was shut down"
                ) from exc
            raise ConsumerRebalanceFailed(
                f"{self.consumer_id}: initial rebalance failed with a bug ({exc!r}); the connector was shut down"
            ) from exc
        if not ok:
            self.shutdown()
            raise ConsumerRebalanceFailed(
                f"{self.consumer_id}: initial rebalance failed "
                f"({rebalancer.stats.last_error}); the connector was shut down"
            )
        tasks = [
            PeriodicTask(
                f"{self.consumer_id}-session-lease",
                membership.session_timeout_s() / 4.0,
                membership.renew_lease,
                on_error=self._die,
            )
        ]
        if cfg.auto_commit_enable:
            tasks.append(
                PeriodicTask(
                    f"{self.consumer_id}-autocommit",
                    cfg.auto_commit_interval_ms / 1000.0,
                    lambda: rebalancer.commit(retries=cfg.offsets_commit_max_retries),
                    on_error=self._die,
                )
            )
        watchdog = None
        if cfg.watchdog_interval_ms > 0:
            watchdog = Watchdog(
                self.consumer_id,
                interval_s=cfg.watchdog_interval_ms / 1000.0,
                check=rebalancer.health_problems,
                trigger=worker.trigger,
                on_error=self._die,
                activity=worker.activity,
            )
        with self._lock:  # a shutdown from another thread either sees all of them or none
            if self._closed:
                return
            self._tasks, self._watchdog = tasks, watchdog
            worker.start()
            for task in tasks:
                task.start()
            if watchdog is not None:
                watchdog.start()

    def _make_fetcher(self, bootstrap: str) -> PartitionFetcher:
        if not self._fetch:
            return NoFetcher()
        cfg = self.config
        overrides = cfg.librdkafka_overrides
        for key in sorted(_RESERVED_LIBRDKAFKA & overrides.keys()):
            log.warning("ignoring librdkafka.%s: zkconsumer manages it", key)
            overrides.pop(key)
        settings = FetchSettings(
            bootstrap_servers=bootstrap,
            group_id=cfg.group_id,
            client_id=cfg.client_id,
            fetch_message_max_bytes=cfg.fetch_message_max_bytes,
            fetch_min_bytes=cfg.fetch_min_bytes,
            fetch_wait_max_ms=cfg.fetch_wait_max_ms,
            socket_timeout_ms=cfg.socket_timeout_ms,
            socket_receive_buffer_bytes=cfg.socket_receive_buffer_bytes,
            auto_offset_reset=cfg.auto_offset_reset,
            queued_max_message_chunks=cfg.queued_max_message_chunks,
            overrides=overrides,
        )
        fetcher = Fetcher(settings, name=self.consumer_id, on_error=self._die)
        fetcher.start()
        return fetcher

    def _describe_broker_group(self, rebalancer: Rebalancer, timeout_s: float) -> BrokerGroupView | None:
        settings = getattr(rebalancer.fetcher, "settings", None)
        if not isinstance(settings, FetchSettings):
            return None
        return describe_broker_group(admin_config(settings.consumer_config()), self.config.group_id, timeout_s)

    def _rebalance(self, reason: str) -> bool:
        assert self._rebalancer is not None
        return self._rebalancer.synced_rebalance(reason)

    def _die(self, error: BaseException) -> None:
        """A background thread failed for good: stop delivering, make every iterator raise, and leave
        the group (closing the session deletes our member and owner nodes), instead of staying a
        zombie that holds partitions nobody consumes."""
        if self.failure is not None or self._closed:
            return
        self.failure = error
        kind = "failure" if is_retriable(error) or isinstance(error, ZkConsumerError) else "bug"
        log.error("%s: background %s, leaving the group: %r", self.consumer_id, kind, error)
        self.assignment.begin_release(list(self.assignment.owned()))  # nothing more is handed out
        if self._streams is not None:
            self._streams.fail(error if isinstance(error, ConsumerError) else ConsumerError(repr(error)))
        threading.Thread(target=self.shutdown, name=f"{self.consumer_id}-leave", daemon=True).start()

    def _require_started(self) -> Rebalancer:
        if self._rebalancer is None:
            raise RuntimeError("call create_message_streams() first")
        return self._rebalancer
