"""Driver-side batch planning: the group's partitions, committed offsets and owners from ZooKeeper, log ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from kazoo.client import KazooClient

from zkconsumer.cluster.broker_nodes import BrokerInfo
from zkconsumer.cluster.metadata import ClusterMetadata, bootstrap_servers, no_endpoint_message
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.errors import BrokersUnavailable, ZooKeeperAccessDenied, ZooKeeperUnavailable
from zkconsumer.spark.broker_offsets import all_answered, explicit_ends_for, explicit_starts_for, log_offsets
from zkconsumer.spark.offsets import Key, initial_position, settle
from zkconsumer.spark.options import OptionError, SourceOptions
from zkconsumer.zookeeper.auth import zookeeper_auth
from zkconsumer.zookeeper.client import close_quietly, connect
from zkconsumer.zookeeper.group import GroupZk

# Reads only: the planner never registers, so this id never appears under /consumers/<group>/ids.
PLANNER_ID = "zkconsumer-spark-planner"


@contextlib.contextmanager
def zookeeper(opts: SourceOptions) -> Iterator[KazooClient]:
    """A short-lived kazoo session for planning reads (bounded retries, closed on exit)."""
    cfg = opts.config
    auth = zookeeper_auth(cfg)
    try:
        client = connect(
            cfg.zookeeper_connect,
            session_timeout_s=cfg.zookeeper_session_timeout_ms / 1000.0,
            connect_timeout_s=cfg.zookeeper_connection_timeout_ms / 1000.0,
            auth=auth,
            command_deadline_s=30.0,
        )
    except ZooKeeperAccessDenied:
        raise  # a Kerberos or digest refusal as itself, not as a timeout
    except Exception as exc:
        raise ZooKeeperUnavailable(f"cannot reach ZooKeeper at {cfg.zookeeper_connect}: {exc}") from exc
    try:
        yield client
    finally:
        close_quietly(client, 10.0)


def bootstrap_of(brokers: list[BrokerInfo], config: ConsumerConfig) -> str:
    """host:port,... of every broker's endpoint for the configured listener or security protocol."""
    protocol, listener = config.broker_security_protocol, config.broker_listener
    bootstrap = bootstrap_servers(brokers, security_protocol=protocol, listener=listener)
    if not bootstrap:
        raise BrokersUnavailable(no_endpoint_message(brokers, security_protocol=protocol, listener=listener))
    return bootstrap


def subscribed_keys(cluster: ClusterMetadata, opts: SourceOptions) -> list[Key]:
    """Every (topic, partition) of the subscription, from /brokers/topics (as the members see it)."""
    topics = list(opts.topics) if opts.topic_filter is None else [t for t in cluster.all_topics() if opts.wants(t)]
    keys = sorted((t, p) for t, parts in cluster.partitions(topics).items() for p in parts)
    if opts.partitions is None:
        return keys
    missing = sorted(opts.partitions - set(keys))
    if missing:
        raise OptionError(
            "option 'partitions' names "
            + ", ".join(f"{t}/{p}" for t, p in missing)
            + ", not partitions of the subscribed topics now"
        )
    return sorted(opts.partitions)


@dataclass(frozen=True)
class PartitionPlan:
    """One partition of a bounded read: where it starts and ends, and the group state it came from."""

    key: Key
    committed: int  # -1: no offset node (or one older than the topic)
    committed_version: int | None  # the offset node's version when planned; None: no node
    owner: str | None  # owner thread id of a live member, if any
    low: int
    high: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class BatchPlan:
    bootstrap: str
    partitions: list[PartitionPlan]
    epochs: dict[str, int | None]  # topic -> its incarnation (topic node czxid) when planned
    created_ms: dict[str, int | None]  # topic -> when its node was created (ctime), for old markers

    @property
    def total(self) -> int:
        return sum(p.size for p in self.partitions)


def plan_batch(opts: SourceOptions) -> BatchPlan:
    """Start (explicit > committed > startingOffsets fallback) and end (explicit > log end) per partition."""
    with zookeeper(opts) as client:
        group = GroupZk(client, opts.group_id, PLANNER_ID, identity=zookeeper_auth(opts.config).identity)
        cluster = ClusterMetadata(group.io)
        keys = subscribed_keys(cluster, opts)
        nodes = cluster.topic_stats(t for t, _ in keys)
        epochs = {t: (stat.czxid if stat is not None else None) for t, stat in nodes.items()}
        versioned = group.read_offsets_versioned(keys, epochs)
        owners = {(t, p): thread for t in sorted({t for t, _ in keys}) for p, thread in group.owners(t).items()}
        bootstrap = opts.bootstrap_override or bootstrap_of(cluster.brokers(), opts.config)
        created_ms = {t: (stat.ctime if stat is not None else None) for t, stat in nodes.items()}
    offsets = log_offsets(opts, bootstrap)
    try:
        # A batch plans every partition or fails naming those the brokers left unanswered.
        spans = all_answered(offsets.spans(keys), bootstrap)
        starts = all_answered(explicit_starts_for(opts, keys, offsets.times), bootstrap)
        ends = all_answered(explicit_ends_for(opts, keys, offsets.times), bootstrap)
    finally:
        offsets.close()
    plans = []
    for key in keys:
        low, high = spans[key]
        start = settle(
            key,
            initial_position(
                key,
                versioned[key][0],
                explicit=starts,
                fallback=opts.starting,
                ignore_committed=opts.ignore_committed,
            ),
            low,
            high,
            fail_on_data_loss=opts.fail_on_data_loss,
        )
        end = ends.get(key, -1)
        end = high if end == -1 else end
        if end > high:
            raise OptionError(f"endingOffsets for {key[0]}/{key[1]} is {end}, past the log end {high}")
        committed, version = versioned[key]
        plans.append(PartitionPlan(key, committed, version, owners.get(key), low, high, start, max(start, end)))
    return BatchPlan(bootstrap, plans, epochs, created_ms)
