"""ConsumerConnector: the public façade of a group member; its session-time parts are a GroupMember (group_member.py)."""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from zkconsumer.broker_coordination import BrokerGroupMember, bootstrap_servers_for
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.config.checks import ConfigError
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.stream import KafkaStream, StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.rebalancer import Rebalancer
from zkconsumer.coordinator.subscription import (
    StaticSubscription,
    Subscription,
    TopicFilter,
    WildcardSubscription,
    make_consumer_id,
)
from zkconsumer.errors import (
    ConsumerError,
    ZkConsumerError,
    ZooKeeperAccessDenied,
    ZooKeeperUnavailable,
    is_retriable,
)
from zkconsumer.group_member import GroupMember
from zkconsumer.metrics import ConnectorCollector, Snapshot
from zkconsumer.zookeeper.auth import ZkAuth, zookeeper_auth
from zkconsumer.zookeeper.client import close_quietly, connect
from zkconsumer.zookeeper.deadline import Deadline
from zkconsumer.zookeeper.group import GroupZk

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)


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
        if not fetch and self.config.offsets_storage == "kafka" and not self.config.dual_commit_enabled:
            # With dual commit a member that fetches nothing commits beside ZooKeeper through an idle
            # fetcher's Consumer (NoFetcher); Kafka as the only store is left to reading members.
            raise ConfigError(
                "offsets.storage",
                "offsets.storage=kafka with dual.commit.enabled=false needs fetch=True; with fetch=False "
                "Kafka-side commits are made beside ZooKeeper only (dual.commit.enabled=true)",
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
        self._lock = threading.Lock()
        self._member: GroupMember | None = None
        # zkconsumer.coordination=broker: the brokers' group coordinator runs the group, through the
        # member below (zkconsumer/broker_coordination); no ZooKeeper session is kept.
        self._broker: BrokerGroupMember | None = None
        self._closed = False
        self._shutdown_done = threading.Event()
        self._unwritten: dict[tuple[str, int], int] = {}
        self.failure: BaseException | None = None
        if self.config.coordination == "broker":
            if not fetch:
                raise ConfigError("zkconsumer.coordination", "zkconsumer.coordination=broker needs fetch=True")
            return
        self.zk_auth = zookeeper_auth(self.config)  # a bad JAAS setting fails here, naming the property
        self._zk = _connect_zookeeper(self.config, self.zk_auth)
        self.group = GroupZk(
            self._zk,
            self.config.group_id,
            self.consumer_id,
            timeout_s=self.config.zookeeper_session_timeout_ms / 1000.0,
            transaction_max_bytes=self.config.zookeeper_transaction_max_bytes,
            identity=self.zk_auth.identity,
            acl=self.zk_auth.node_acl(),
        )
        self.cluster = ClusterMetadata(self.group.io)  # brokers, topics, topic incarnations
        self.assignment = Assignment()
        # What takes part in the group (threads, rebalancer, ...), _member above: built and set once by
        # the first create_message_streams*; what lives as long as the connector is here.

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
        `before_releasing_partitions` saves their progress (the MirrorMaker pattern). It waits for
        one step of a running rebalance at most (never for its back-offs or its release linger),
        and at most zookeeper.session.timeout.ms: then it raises CommitFailed (retriable)."""
        if self._broker is not None:
            self._broker.streams.mark_consumed()
            self._broker.commit(self.config.zookeeper_session_timeout_ms / 1000.0)
            return
        member = self._require_started()
        member.streams.mark_consumed()
        member.rebalancer.commit()

    def commit_positions(
        self, positions: Mapping[tuple[str, int], int], *, epochs: Mapping[str, int | None] | None = None
    ) -> dict[tuple[str, int], bool]:
        """Commit the next offset to read per partition, for progress tracked outside the streams.

        Only partitions this member owns are written (fenced by owner node); the result says
        which were. With `epochs` (topic -> incarnation the positions count in), a partition
        claimed in another incarnation of its topic is not written either. Use it with `fetch=False`.
        """
        if self.config.coordination == "broker":
            raise RuntimeError(
                "commit_positions() is for fetch=False members, which need zkconsumer.coordination=zookeeper"
            )
        return self._require_started().rebalancer.commit_positions(positions, epochs)

    def owned_positions(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> next offset to consume (-1: nothing committed yet) of what we own.
        Never blocks on ZooKeeper or a running rebalance."""
        if self.config.coordination == "broker":
            return self._broker.positions() if self._broker is not None else {}
        return self.assignment.positions()

    def ownership_confirmed(self) -> bool:
        """True while ZooKeeper vouches for what we own: our session confirmed recently enough that it
        cannot have expired (the lease the iterators' delivery gate checks), also through a short
        disconnection. After a freeze past the session timeout this is False although kazoo still
        says CONNECTED."""
        if self._broker is not None:  # the brokers vouch: librdkafka revokes (or reports lost) what is not ours
            return self._broker.failure is None and not self._closed
        member = self._member
        return member is not None and member.streams.gate.usable()

    def owned_partitions(self) -> dict[tuple[str, int], str]:
        """(topic, partition) -> thread id this member owns right now. Never blocks."""
        if self.config.coordination == "broker":
            return self._broker.owned() if self._broker is not None else {}
        return self.assignment.owned()

    def metrics(self) -> ConnectorCollector:
        """A prometheus_client collector for this connector: `REGISTRY.register(conn.metrics())`."""
        return ConnectorCollector(self._metrics_snapshot, self.config.client_id or "", self.config.group_id)

    def _metrics_snapshot(self) -> Snapshot:
        if self._broker is not None:
            return self._broker.snapshot()
        member = self._member
        return member.snapshot() if member is not None else Snapshot()

    @property
    def rebalancer(self) -> Rebalancer:
        return self._require_started().rebalancer

    @property
    def membership(self) -> Membership:
        return self._require_started().membership

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

    def __enter__(self) -> ConsumerConnector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # ---- joining and leaving -------------------------------------------------------------------
    def _join(self, subscription: Subscription, streams: StreamSet) -> None:
        if self.config.coordination == "broker":
            self._join_brokers(subscription, streams)
            return
        member = GroupMember(
            self.config,
            self.group,
            self.cluster,
            self.assignment,
            self.listener,
            subscription,
            streams,
            fetch=self._fetch,
            on_failure=self._die,
        )
        with self._lock:  # a shutdown either comes first (we refuse) or sees the member
            if self._closed:
                raise RuntimeError("this connector has been shut down")
            if self._member is not None:
                raise RuntimeError("create_message_streams* may be called only once per connector")
            self._member = member
        try:
            member.start()
        except BaseException:  # the first rebalance, or what comes before it, failed: leave before saying so
            self.shutdown()
            raise

    def _join_brokers(self, subscription: Subscription, streams: StreamSet) -> None:
        broker = BrokerGroupMember(
            self.config,
            self.consumer_id,
            subscription,
            streams,
            self.listener,
            bootstrap_servers=bootstrap_servers_for(self.config),
            on_failure=self._die,
        )
        with self._lock:
            if self._closed:
                raise RuntimeError("this connector has been shut down")
            if self._broker is not None:
                raise RuntimeError("create_message_streams* may be called only once per connector")
            self._broker = broker
        try:
            broker.start(max(30.0, 3 * self.config.zookeeper_session_timeout_ms / 1000.0))
        except BaseException:
            self.shutdown()
            raise

    def _require_started(self) -> GroupMember:
        member = self._member
        if member is None and self.config.coordination == "broker":
            raise RuntimeError("a broker-coordinated connector has no ZooKeeper rebalancer or membership")
        if member is None:
            raise RuntimeError("call create_message_streams() first")
        return member

    def _die(self, error: BaseException) -> None:
        """A background thread failed for good: stop delivering, make every iterator raise, and leave
        the group (closing the session deletes our member and owner nodes), instead of staying a
        zombie that holds partitions nobody consumes."""
        if self.failure is not None or self._closed:
            return
        self.failure = error
        kind = "failure" if is_retriable(error) or isinstance(error, ZkConsumerError) else "bug"
        log.error("%s: background %s, leaving the group: %r", self.consumer_id, kind, error)
        failure = error if isinstance(error, ConsumerError) else ConsumerError(repr(error))
        if self._broker is not None:  # its thread ended: nothing more is fetched
            self._broker.streams.fail(failure)
            threading.Thread(target=self.shutdown, name=f"{self.consumer_id}-leave", daemon=True).start()
            return
        self.assignment.begin_release(list(self.assignment.owned()))  # nothing more is handed out
        member = self._member  # set: only its parts report failures
        if member is not None:
            member.streams.fail(failure)
        threading.Thread(target=self.shutdown, name=f"{self.consumer_id}-leave", daemon=True).start()

    def _leave(self, timeout: float) -> dict[tuple[str, int], int]:
        log.info("%s shutting down", self.consumer_id)
        if self.config.coordination == "broker":
            return self._broker.stop(timeout) if self._broker is not None else {}
        deadline = Deadline(timeout)
        self.group.io.deadline = deadline  # bounds every ZooKeeper call from here on, on every thread
        member = self._member
        unwritten = member.stop(deadline, timeout) if member is not None else {}
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


def _connect_zookeeper(config: ConsumerConfig, auth: ZkAuth) -> KazooClient:
    try:
        return connect(
            config.zookeeper_connect,
            session_timeout_s=config.zookeeper_session_timeout_ms / 1000.0,
            connect_timeout_s=config.zookeeper_connection_timeout_ms / 1000.0,
            auth=auth,
        )
    except ZooKeeperAccessDenied:
        raise
    except Exception as exc:
        raise ZooKeeperUnavailable(
            f"cannot reach ZooKeeper at {config.zookeeper_connect} within "
            f"{config.zookeeper_connection_timeout_ms} ms: {exc}"
        ) from exc
