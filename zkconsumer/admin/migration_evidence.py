"""What a migration is planned on: both sides of one group as read now, and the log offsets of their partitions."""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.client import KazooClient

from zkconsumer.admin.broker_group import BrokerGroup, open_broker_group
from zkconsumer.admin.committed import read_offsets
from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.groups import group_exists
from zkconsumer.admin.log_offsets import BrokerAccess, Warn, log_warning, open_watermarks
from zkconsumer.admin.snapshot import read_owners
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.errors import AdminError, AdminUnavailable
from zkconsumer.migration import (
    DIRECTIONS,
    SCALA,
    ZKCONSUMER,
    DirectionPlan,
    KafkaSide,
    Overrides,
    ZkSide,
    in_scope,
    plan_direction,
)
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children, exists_many


@dataclass
class Evidence:
    """Both sides of one group as read now, the log offsets of their partitions, and warnings."""

    zk: ZkSide
    kafka: KafkaSide
    log: dict[TopicPartition, tuple[int, int]]
    broker: BrokerGroup
    zk_group_exists: bool
    notes: list[str] = field(default_factory=list)
    garbled: list[str] = field(default_factory=list)  # ZooKeeper offset nodes that could not be decoded
    # Every partition of the topics in scope as the brokers have them, offsets or not.
    partitions: list[TopicPartition] = field(default_factory=list)


def member_kinds(client: KazooClient, group: str) -> dict[str, str]:
    """consumer id -> ZKCONSUMER when its zkconsumer marker is held by the member's own session,
    SCALA otherwise (a Scala member, or another library that writes no marker)."""
    ids = children(client, znodes.ids_path(group))
    marked = set(children(client, znodes.zkconsumer_members_path(group)))
    member_stats = exists_many(client, {cid: znodes.member_path(group, cid) for cid in ids})
    marker_stats = exists_many(client, {cid: znodes.zkconsumer_member_path(group, cid) for cid in ids if cid in marked})
    kinds = {}
    for cid, stat in member_stats.items():
        if stat is None:  # left between the listing and the read
            continue
        marker = marker_stats.get(cid)
        kinds[cid] = ZKCONSUMER if marker is not None and marker.ephemeralOwner == stat.ephemeralOwner else SCALA
    return kinds


def read_zk_side(client: KazooClient, group: str, topics: list[str] | None) -> tuple[ZkSide, list[str], list[str]]:
    """The ZooKeeper side (valid offsets only), warnings about nodes that were left out, and the
    paths of offset nodes that could not be decoded."""
    wanted = (
        topics
        if topics is not None
        else sorted(
            set(children(client, znodes.owners_path(group))) | set(children(client, znodes.offsets_path(group)))
        )
    )
    owners, owner_problems = read_owners(client, group, wanted)
    found = read_offsets(client, group, wanted)
    notes = [
        f"{znodes.offset_path(group, *key)} is unreadable ({reason}): counted as no offset"
        for key, reason in sorted(found.garbled.items())
    ]
    notes += [
        f"{znodes.offset_path(group, *key)}: {found.stale_note(key)}; counted as no offset"
        for key in sorted(found.stale)
    ]
    notes += [f"{p.detail}" for p in owner_problems]
    ingest = tuple(sorted(children(client, znodes.ingest_locks_path(group))))
    side = ZkSide(group, member_kinds(client, group), {k: o.thread_id for k, o in owners.items()}, found.valid, ingest)
    return side, notes, [znodes.offset_path(group, *key) for key in sorted(found.garbled)]


@admin_errors
def gather(
    client: KazooClient, access: BrokerAccess, group: str, topics: list[str] | None, *, warn: Warn = log_warning
) -> Evidence:
    """Read ZooKeeper, the broker group (state, members, offsets) and the log offsets of every
    partition either side knows; AdminError when the group is on neither side or the brokers fail."""
    zk_group_exists = group_exists(client, group)  # AdminUsageError for an invalid name
    zk, notes, garbled = read_zk_side(client, group, topics) if zk_group_exists else (ZkSide(group), [], [])
    broker = open_broker_group(client, access, group, warn=warn)
    kafka = broker.describe(broker.committed())
    if not zk_group_exists and not kafka.offsets and not kafka.members:
        raise AdminError(
            f"unknown group {group!r}: no {znodes.group_path(group)} in ZooKeeper and no offsets or "
            f"members on the brokers at {broker.bootstrap}"
        )
    if topics is not None:
        kafka = KafkaSide(kafka.state, kafka.members, {k: o for k, o in kafka.offsets.items() if k[0] in topics})
    assigned = {k for m in kafka.members for k in m.assignment}
    known = in_scope(set(zk.offsets) | set(kafka.offsets) | set(zk.owners) | assigned, topics)
    # Partitions of those topics that neither store has an offset of are part of the move too:
    # the consumers taking over must be told how to start them.
    every = ClusterMetadata(client).partitions(topics if topics is not None else sorted({t for t, _ in known}))
    partitions = sorted((t, p) for t, parts in every.items() for p in parts)
    keys = sorted(set(known) | set(partitions))
    log: dict[TopicPartition, tuple[int, int]] = {}
    if keys:
        with open_watermarks(client, access, quiet=True, warn=warn) as marks:
            log = marks.offsets(keys)
            if not marks.available:
                raise AdminUnavailable(f"cannot plan group {group}'s offsets without the log offsets: {marks.reason}")
            if marks.unanswered:  # a partition left out of the plan would start wherever auto.offset.reset says
                listed = "; ".join(f"{t}-{p}: {why}" for (t, p), why in sorted(marks.unanswered.items())[:10])
                raise AdminUnavailable(
                    f"cannot plan group {group}'s offsets: the brokers at {marks.bootstrap} gave no log "
                    f"offsets for {len(marks.unanswered)} partition(s) they have ({listed})"
                )
    return Evidence(zk, kafka, log, broker, zk_group_exists, notes, garbled, partitions)


def direction_plans(evidence: Evidence, overrides: Overrides, topics: list[str] | None) -> dict[str, DirectionPlan]:
    """The plan of each direction (to Kafka, to ZooKeeper) over the same evidence."""
    return {
        target: plan_direction(
            evidence.zk, evidence.kafka, evidence.log, target, overrides, topics, evidence.partitions
        )
        for target in DIRECTIONS
    }
