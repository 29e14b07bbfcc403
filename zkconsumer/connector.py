"""ConsumerConnector: the public façade that wires ZooKeeper, the fetcher, streams and threads together."""
from __future__ import annotations

import collections
import logging
import socket
import threading
import time
import uuid
from typing import Callable, Mapping

from kazoo.client import KazooClient, KazooState

from zkconsumer.config import ConfigError, ConsumerConfig
from zkconsumer.coordinator import Coordinator, NoFetcher, PartitionFetcher
from zkconsumer.fetch_settings import FetchSettings
from zkconsumer.fetcher import Fetcher
from zkconsumer.group import GroupZk
from zkconsumer.listener import ConsumerRebalanceFailed, ConsumerRebalanceListener
from zkconsumer.metrics import ConnectorCollector, Snapshot
from zkconsumer.offsets import OffsetStore, PeriodicTask
from zkconsumer.rebalance import RebalanceWorker
from zkconsumer.stream import ConsumerError, KafkaStream, StreamSet
from zkconsumer.watchdog import Watchdog
from zkconsumer.subscription import (StaticSubscription, Subscription, TopicFilter, WildcardSubscription,
                                     encode_registration, make_consumer_id)

log = logging.getLogger(__name__)

# librdkafka settings our delivery semantics depend on: a passthrough may not change them.
_RESERVED_LIBRDKAFKA = {"group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
                        "enable.partition.eof"}


class ConsumerConnector:
    """A member of a legacy ZooKeeper-coordinated consumer group (Scala's ZookeeperConsumerConnector).

    Example::

        with ConsumerConnector({"zookeeper.connect": "zk:2181/kafka", "group.id": "billing"}) as conn:
            streams = conn.create_message_streams({"orders": 2})
            for msg in streams["orders"][0]:
                handle(msg.topic, msg.partition, msg.offset, msg.key, msg.value)

    Streams may be drained from separate threads. `shutdown()` (or leaving the `with`
    block) ends every iterator, commits, and leaves the group; it is safe from any thread.
    """

    def __init__(self, config: ConsumerConfig | Mapping[str, object], *,
                 listener: ConsumerRebalanceListener | None = None, fetch: bool = True) -> None:
        """`fetch=False` makes a member that owns partitions but reads none: its streams stay
        empty and progress is committed with `commit_positions()` (a Spark driver, say)."""
        self.config = config if isinstance(config, ConsumerConfig) else ConsumerConfig.from_mapping(config)
        if not fetch and self.config.offsets_storage == "kafka":
            raise ConfigError("offsets.storage", "offsets.storage=kafka needs fetch=True (it commits "
                              "through the fetcher's Kafka connection)")
        self._fetch = fetch
        self.listener = listener or ConsumerRebalanceListener()
        self.consumer_id = make_consumer_id(self.config.group_id, self.config.consumer_id,
                                            hostname=socket.gethostname(), now_ms=int(time.time() * 1000),
                                            uuid_int=uuid.uuid4().int)
        self._zk = self._connect_zookeeper()
        self.group = GroupZk(self._zk, self.config.group_id, self.consumer_id)
        self._lock = threading.Lock()
        self._subscription: Subscription | None = None
        self._streams: StreamSet | None = None
        self._coordinator: Coordinator | None = None
        self._worker: RebalanceWorker | None = None
        self._autocommit: PeriodicTask | None = None
        self._watchdog: Watchdog | None = None
        self._lease: PeriodicTask | None = None
        self._closed = False
        self._watched_topics: set[str] = set()
        self._once = _SkipFirst()

    # ---- public API ----------------------------------------------------------------------------
    def create_message_streams(self, topic_count_map: Mapping[str, int]) -> dict[str, list[KafkaStream]]:
        """Subscribe to topics with a number of streams each; returns topic -> streams."""
        subscription = StaticSubscription.of(dict(topic_count_map))
        streams = StreamSet(self.consumer_id, static=dict(subscription.topic_counts),
                            capacity=self.config.queued_max_message_chunks,
                            consumer_timeout_ms=self.config.consumer_timeout_ms)
        self._join(subscription, streams)
        return {topic: list(s) for topic, s in streams.by_topic.items()}

    def create_message_streams_by_filter(self, topic_filter: TopicFilter, num_streams: int = 1) -> list[KafkaStream]:
        """Subscribe to every topic a Whitelist/Blacklist accepts, now and later."""
        subscription = WildcardSubscription(topic_filter, num_streams)
        streams = StreamSet(self.consumer_id, wildcard_streams=num_streams,
                            capacity=self.config.queued_max_message_chunks,
                            consumer_timeout_ms=self.config.consumer_timeout_ms)
        self._join(subscription, streams)
        return list(streams.wildcard)

    def commit_offsets(self) -> None:
        """Commit every stream's progress, counting the last message each handed out as finished."""
        coordinator = self._require_started()
        coordinator.streams.mark_consumed()
        coordinator.commit()

    def commit_positions(self, positions: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], bool]:
        """Commit the next offset to read per partition, for progress tracked outside the streams.

        Only partitions this member owns are written (fenced by owner node); the result says
        which were. Use it with `fetch=False`.
        """
        return self._require_started().commit_positions(positions)

    def owned_positions(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> next offset to consume (-1: nothing committed yet) of what we own."""
        coordinator = self._coordinator
        if coordinator is None:
            return {}
        with coordinator.lock:  # never a rebalance's half-installed state
            return {k: i.consumed_offset for k, i in coordinator.owned.items()}

    def owned_partitions(self) -> dict[tuple[str, int], str]:
        """(topic, partition) -> thread id this member owns right now."""
        coordinator = self._coordinator
        if coordinator is None:
            return {}
        with coordinator.lock:
            return {k: i.thread_id for k, i in coordinator.owned.items()}

    def metrics(self) -> ConnectorCollector:
        """A prometheus_client collector for this connector: `REGISTRY.register(conn.metrics())`."""
        return ConnectorCollector(self._metrics_snapshot, self.config.client_id or "", self.config.group_id)

    def _metrics_snapshot(self) -> Snapshot:
        coordinator, worker, watchdog, streams = self._coordinator, self._worker, self._watchdog, self._streams
        if coordinator is None:
            return Snapshot()
        with coordinator.lock:
            owned = collections.Counter(topic for topic, _ in coordinator.owned)
        stats, offsets = coordinator.stats, coordinator.offsets
        return Snapshot(
            rebalances_succeeded=stats.succeeded, rebalances_failed=stats.failed,
            rebalance_last_seconds=stats.last_seconds,
            rebalance_failing_runs=worker.failed_runs if worker is not None else 0,
            owned=dict(owned),
            queued_chunks={s.queue.name: len(s.queue) for s in streams.all()} if streams is not None else {},
            zookeeper_commits=offsets.zookeeper_writes, kafka_commits=offsets.kafka_writes,
            watchdog_alerts=watchdog.alerts if watchdog is not None else 0,
            ownership_problems=len(watchdog.problems) if watchdog is not None else 0)

    @property
    def coordinator(self) -> Coordinator:
        return self._require_started()

    def shutdown(self) -> None:
        """Idempotent, from any thread: end the iterators, commit, leave the group."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        log.info("%s shutting down", self.consumer_id)
        if self._coordinator is not None:
            self._coordinator.begin_shutdown()
        for task in (self._lease, self._watchdog, self._worker, self._autocommit):
            if task is not None:
                task.stop()
        if self._coordinator is not None:
            self._coordinator.shutdown()
        self.group.close()
        try:
            self._zk.stop()  # closes the session: our ephemeral nodes vanish at once
            self._zk.close()
        except Exception:  # noqa: BLE001 - already disconnected; nothing left to clean
            log.debug("closing ZooKeeper failed", exc_info=True)

    def __enter__(self) -> "ConsumerConnector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # ---- wiring --------------------------------------------------------------------------------
    def _connect_zookeeper(self) -> KazooClient:
        cfg = self.config
        auth = [("digest", cfg.zookeeper_digest)] if cfg.zookeeper_digest else None
        hosts = cfg.zookeeper_connect
        client = KazooClient(hosts=hosts, timeout=cfg.zookeeper_session_timeout_ms / 1000.0, auth_data=auth,
                             connection_retry={"max_tries": -1, "delay": 0.2, "max_delay": 2.0},
                             command_retry={"max_tries": 5, "delay": 0.1, "max_delay": 2.0,
                                            "deadline": cfg.zookeeper_session_timeout_ms / 1000.0 * 2})
        try:
            client.start(timeout=cfg.zookeeper_connection_timeout_ms / 1000.0)
        except Exception as exc:
            client.close()
            raise ConnectionError(f"cannot reach ZooKeeper at {hosts} within "
                                  f"{cfg.zookeeper_connection_timeout_ms} ms: {exc}") from exc
        return client

    def _join(self, subscription: Subscription, streams: StreamSet) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("this connector has been shut down")
            if self._subscription is not None:
                raise RuntimeError("create_message_streams* may be called only once per connector")
            self._subscription = subscription
            self._streams = streams
        cfg = self.config
        offsets = OffsetStore(self.group, storage=cfg.offsets_storage, dual_commit=cfg.dual_commit_enabled,
                              kafka_consumer=lambda: coordinator.fetcher.consumer if coordinator.fetcher else None,
                              backoff_ms=cfg.offsets_channel_backoff_ms,
                              timeout_ms=cfg.offsets_channel_socket_timeout_ms)
        coordinator = Coordinator(
            cfg, self.consumer_id, self.group, streams, offsets, self._make_fetcher,
            registration=lambda: encode_registration(subscription, int(time.time() * 1000), cfg.compat),
            listener=self.listener)
        self._coordinator = coordinator
        self._worker = RebalanceWorker(self.consumer_id, self._rebalance,
                                       recheck_s=cfg.rebalance_recheck_ms / 1000.0, on_crash=self._fail,
                                       backoff_s=cfg.rebalance_backoff_ms / 1000.0)
        self.group.ensure_paths()
        coordinator.register()
        self._zk.add_listener(self._on_session_state)
        self._watch(subscription)
        if not self._rebalance("consumer started"):
            self.shutdown()
            raise ConsumerRebalanceFailed(f"{self.consumer_id}: initial rebalance failed "
                                          f"({coordinator.stats.last_error}); the connector was shut down")
        self._worker.start()
        self._lease = PeriodicTask(f"{self.consumer_id}-session-lease", cfg.zookeeper_session_timeout_ms / 4000.0,
                                   coordinator.renew_lease)
        self._lease.start()
        if cfg.watchdog_interval_ms > 0:
            self._watchdog = Watchdog(self.consumer_id, interval_s=cfg.watchdog_interval_ms / 1000.0,
                                      check=coordinator.health_problems, trigger=self._worker.trigger)
            self._watchdog.start()
        if cfg.auto_commit_enable:
            self._autocommit = PeriodicTask(f"{self.consumer_id}-autocommit", cfg.auto_commit_interval_ms / 1000.0,
                                            lambda: coordinator.commit(retries=cfg.offsets_commit_max_retries))
            self._autocommit.start()

    def _make_fetcher(self, bootstrap: str) -> PartitionFetcher:
        if not self._fetch:
            return NoFetcher()
        cfg = self.config
        overrides = cfg.librdkafka_overrides
        for key in sorted(_RESERVED_LIBRDKAFKA & overrides.keys()):
            log.warning("ignoring librdkafka.%s: zkconsumer manages it", key)
            overrides.pop(key)
        settings = FetchSettings(
            bootstrap_servers=bootstrap, group_id=cfg.group_id, client_id=cfg.client_id,
            fetch_message_max_bytes=cfg.fetch_message_max_bytes, fetch_min_bytes=cfg.fetch_min_bytes,
            fetch_wait_max_ms=cfg.fetch_wait_max_ms, socket_timeout_ms=cfg.socket_timeout_ms,
            socket_receive_buffer_bytes=cfg.socket_receive_buffer_bytes, auto_offset_reset=cfg.auto_offset_reset,
            queued_max_message_chunks=cfg.queued_max_message_chunks, overrides=overrides)
        fetcher = Fetcher(settings, name=self.consumer_id, on_error=self._fail)
        fetcher.start()
        return fetcher

    def _watch(self, subscription: Subscription) -> None:
        worker, coordinator, once = self._worker, self._coordinator, self._once
        assert worker is not None and coordinator is not None
        self.group.watch_members(once("members", lambda _ids: worker.trigger("group membership changed")))
        self.group.watch_brokers(once("brokers", lambda _ids: coordinator.waiting_for_brokers
                                      and worker.trigger("brokers changed")))
        if isinstance(subscription, WildcardSubscription):
            self.group.watch_topic_list(once("topic list", self._on_topic_list))

    def _on_topic_list(self, topics: list[str]) -> None:
        subscription, coordinator, worker = self._subscription, self._coordinator, self._worker
        assert isinstance(subscription, WildcardSubscription) and coordinator and worker
        cfg = self.config
        wanted = {t for t in topics if subscription.topic_filter.is_topic_allowed(
            t, exclude_internal=cfg.exclude_internal_topics, internal_topics=cfg.compat.internal_topics)}
        if wanted != coordinator.my_topics:  # only a change of *our* topic set matters
            worker.trigger("subscribed topic set changed")

    def _rebalance(self, reason: str) -> bool:
        assert self._coordinator is not None
        ok = self._coordinator.synced_rebalance(reason)
        self._ensure_topic_watches()
        return ok

    def _ensure_topic_watches(self) -> None:
        """A data watch per subscribed topic catches added partitions (and creation/deletion)."""
        worker, coordinator = self._worker, self._coordinator
        assert worker is not None and coordinator is not None
        for topic in sorted(coordinator.my_topics - self._watched_topics):
            self._watched_topics.add(topic)
            trigger = self._once(f"topic {topic}", lambda t=topic: worker.trigger(f"topic {t} changed"))

            def on_change(epoch: int | None, topic: str = topic, trigger: Callable[[], None] = trigger) -> None:
                coordinator.topic_epoch_seen(topic, epoch)  # also on the first call: it may be news
                trigger()
            self.group.watch_topic(topic, on_change, still_wanted=lambda: not self._closed)

    def _on_session_state(self, state: str) -> None:
        # Runs on kazoo's session thread: must not block or call ZooKeeper (hand off instead).
        if self._closed:
            return  # our own shutdown closed the session
        coordinator, worker = self._coordinator, self._worker
        if state == KazooState.LOST:
            log.warning("%s: ZooKeeper session lost; delivery paused until re-registered", self.consumer_id)
            if coordinator is not None:
                coordinator.connection_suspended()
            if worker is not None:
                worker.trigger("ZooKeeper session expired")
        elif state == KazooState.SUSPENDED:
            log.warning("%s: disconnected from ZooKeeper; delivery paused until the session is confirmed",
                        self.consumer_id)
            if coordinator is not None:
                coordinator.connection_suspended()
        else:
            if coordinator is not None and not coordinator.connection_restored() and worker is not None:
                log.info("%s: reconnected with a new ZooKeeper session", self.consumer_id)
                worker.trigger("reconnected with a new ZooKeeper session")

    def _fail(self, error: BaseException) -> None:
        """A background thread broke: every iterator raises it (nothing dies silently)."""
        log.error("%s: background failure: %s", self.consumer_id, error)
        if self._streams is not None:
            self._streams.fail(error if isinstance(error, ConsumerError) else ConsumerError(str(error)))

    def _require_started(self) -> Coordinator:
        if self._coordinator is None:
            raise RuntimeError("call create_message_streams() first")
        return self._coordinator


class _SkipFirst:
    """Wraps watch callbacks so the call kazoo makes at registration does not trigger a rebalance."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def __call__(self, name: str, fn: Callable[..., object]) -> Callable[..., None]:
        def wrapped(*args: object) -> None:
            if name not in self._seen:
                self._seen.add(name)
                return
            fn(*args)
        return wrapped
