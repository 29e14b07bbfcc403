"""How a ConsumerConnector builds, starts and stops its parts: session, membership, rebalancer, fetcher, threads."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.fetch_settings import FetchSettings
from zkconsumer.consumer.fetcher import Fetcher
from zkconsumer.consumer.partition_fetcher import NoFetcher, PartitionFetcher
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.ownership_doubt import follow_ownership_signals
from zkconsumer.coordinator.periodic import PeriodicTask
from zkconsumer.coordinator.rebalancer import Rebalancer
from zkconsumer.coordinator.subscription import Subscription, encode_registration
from zkconsumer.coordinator.watchdog import Watchdog
from zkconsumer.coordinator.worker import RebalanceWorker
from zkconsumer.errors import (
    ConsumerError,
    ConsumerRebalanceFailed,
    ZkConsumerError,
    ZooKeeperAccessDenied,
    is_retriable,
)
from zkconsumer.offsets.broker_group import admin_config, describe_broker_group
from zkconsumer.offsets.dual_commit import BrokerGroupView
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.version import __version__
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.auth import ZkAuth
from zkconsumer.zookeeper.client import Deadline, close_quietly, connect
from zkconsumer.zookeeper.group import GroupZk

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger("zkconsumer.connector")  # the connector's logger: these lines are the connector's

# librdkafka settings our delivery semantics depend on: a passthrough may not change them.
_RESERVED_LIBRDKAFKA = {
    "group.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "enable.partition.eof",
}


class ConnectorWiring:
    """ConsumerConnector's wiring half (a base of zkconsumer.connector.ConsumerConnector)."""

    # Set by ConsumerConnector.__init__.
    config: ConsumerConfig
    _fetch: bool
    listener: ConsumerRebalanceListener
    consumer_id: str
    zk_auth: ZkAuth
    _zk: KazooClient
    group: GroupZk
    cluster: ClusterMetadata
    assignment: Assignment
    _lock: threading.Lock
    _subscription: Subscription | None
    _streams: StreamSet | None
    _membership: Membership | None
    _rebalancer: Rebalancer | None
    _worker: RebalanceWorker | None
    _tasks: list[PeriodicTask]
    _watchdog: Watchdog | None
    _closed: bool
    failure: BaseException | None

    if TYPE_CHECKING:

        def shutdown(self, timeout: float = 30.0) -> dict[tuple[str, int], int]: ...

    def _connect_zookeeper(self) -> KazooClient:
        cfg = self.config
        try:
            return connect(
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
            on_closed=self._die,
            marker=znodes.encode_zkconsumer_marker(__version__),
        )
        offsets = OffsetStore(
            self.group,
            cluster=self.cluster,
            storage=cfg.offsets_storage,
            dual_commit=cfg.dual_commit_enabled,
            kafka_consumer=lambda: rebalancer.fetcher.consumer if rebalancer.fetcher else None,
            backoff_ms=cfg.offsets_channel_backoff_ms,
            timeout_ms=cfg.offsets_channel_socket_timeout_ms,
            describe_group=lambda timeout_s: self._describe_broker_group(rebalancer, timeout_s),
        )
        rebalancer = Rebalancer(
            cfg,
            self.group,
            self.cluster,
            membership,
            self.assignment,
            streams,
            offsets,
            self._make_fetcher,
            self.listener,
        )
        self._worker, self._membership, self._rebalancer = worker, membership, rebalancer
        follow_ownership_signals(self.group, self.assignment, worker.trigger)
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
                lambda: membership.session_timeout_s() / 4.0,  # a reconnect may be granted a shorter session
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
        settings = FetchSettings.from_config(cfg, bootstrap, overrides)
        fetcher = Fetcher(settings, name=self.consumer_id, on_error=self._die, reader_turns=cfg.fetch_in_reader)
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

    def _leave(self, timeout: float) -> dict[tuple[str, int], int]:
        log.info("%s shutting down", self.consumer_id)
        deadline = Deadline(timeout)
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
        if not close_quietly(self._zk, max(0.1, deadline.remaining(timeout))):
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
