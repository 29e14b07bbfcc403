"""The I/O of `zkconsumer migrate`: read both sides of a group, write the target store, read it back."""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.client import KazooClient

from zkconsumer.admin.committed import read_offsets
from zkconsumer.admin.groups import group_exists
from zkconsumer.admin.offsets_write import PlannedWrite
from zkconsumer.admin.snapshot import read_owners
from zkconsumer.cli.broker_group import BrokerGroup, is_membership_refusal, membership_refusal, open_broker_group
from zkconsumer.cli.brokers import BrokerAccess, open_watermarks
from zkconsumer.cli.common import EXIT_USAGE, CliError, children
from zkconsumer.cli.output.plans import execute_plan as write_zookeeper_guarded
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.migration.plan import DIRECTIONS, TO_KAFKA, DirectionPlan, Overrides, mismatches, plan_direction
from zkconsumer.migration.sides import SCALA, ZKCONSUMER, KafkaSide, ZkSide, in_scope
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import exists_many


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


def gather(client: KazooClient, access: BrokerAccess, group: str, topics: list[str] | None) -> Evidence:
    """Read ZooKeeper, the broker group (state, members, offsets) and the log offsets of every
    partition either side knows; CliError when the group is on neither side or the brokers fail."""
    try:
        zk_group_exists = group_exists(client, group)
    except ValueError:
        raise CliError(f"invalid group name {group!r}", EXIT_USAGE) from None
    zk, notes, garbled = read_zk_side(client, group, topics) if zk_group_exists else (ZkSide(group), [], [])
    broker = open_broker_group(client, access, group)
    kafka = broker.describe(broker.committed())
    if not zk_group_exists and not kafka.offsets and not kafka.members:
        raise CliError(
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
        with open_watermarks(client, access, quiet=True) as marks:
            log = marks.offsets(keys)
            if not marks.available:
                raise CliError(f"cannot plan group {group}'s offsets without the log offsets: {marks.reason}")
            if marks.unanswered:  # a partition left out of the plan would start wherever auto.offset.reset says
                listed = "; ".join(f"{t}-{p}: {why}" for (t, p), why in sorted(marks.unanswered.items())[:10])
                raise CliError(
                    f"cannot plan group {group}'s offsets: the brokers at {marks.bootstrap} gave no log "
                    f"offsets for {len(marks.unanswered)} partition(s) they have ({listed})"
                )
    return Evidence(zk, kafka, log, broker, zk_group_exists, notes, garbled, partitions)


@dataclass
class Outcome:
    """What --execute did: key -> status per planned write, and the error line (None: all verified)."""

    statuses: dict[TopicPartition, str]
    error: str | None


def execute(client: KazooClient, evidence: Evidence, plan: DirectionPlan) -> Outcome:
    """Write every planned offset to the target store, then read them back.

    Kafka: one alter_consumer_group_offsets request, per-partition errors checked; an error that
    means "the group has members" is explained with the group's state and members, described
    again. ZooKeeper: the guarded writer (one transaction per partition that fails if an owner
    node exists), stopping at the first ZooKeeper error.
    """
    group = plan.group
    todo = {m.key: m.new for m in plan.writes if m.new is not None}
    if not todo:
        return Outcome({}, None)
    refusal = None
    if plan.target == TO_KAFKA:
        answers = evidence.broker.alter(todo)
        if is_membership_refusal(answers):
            try:
                refusal = membership_refusal(group, answers, evidence.broker.describe())
            except CliError as exc:  # the per-partition report below must survive a failed describe
                refusal = (
                    f"the brokers refused offset changes of group {group} as a group with members "
                    f"(describing it failed: {exc})"
                )
        answers = {k: None if e is None else f"refused by the broker: {e}" for k, e in answers.items()}
    else:
        rows = [PlannedWrite(group, m.topic, m.partition, m.target, m.new) for m in plan.writes]
        stopped = write_zookeeper_guarded(client, rows, description="copying offsets to ZooKeeper")
        answers = {
            (r.topic, r.partition): None
            if r.written
            else (f"refused: {r.refused}" if r.refused else f"not written: {r.failed}")
            for r in rows
        }
        if stopped is not None:
            refusal = f"writing group {group}'s offsets to ZooKeeper stopped: {stopped}"
    written = [m for m in plan.writes if answers[m.key] is None]
    statuses = {key: answer for key, answer in answers.items() if answer is not None}
    try:
        read_back = read_target(client, evidence.broker, plan) if written else {}
    except CliError as exc:  # written, but not verified: say so per partition instead of losing the report
        statuses.update({m.key: f"written, not verified: {exc}" for m in written})
        read_back = None
    for move, got in mismatches(written, read_back) if read_back is not None else ():
        statuses[move.key] = f"mismatch: wrote {move.new}, read back {'nothing' if got is None else got}"
    statuses.update({m.key: "written" for m in written if m.key not in statuses})
    bad = [m for m in plan.writes if statuses[m.key] != "written"]
    if not bad:
        return Outcome(statuses, None)
    listed = "; ".join(f"{m.topic}-{m.partition} {statuses[m.key]}" for m in bad)
    error = (
        f"{len(bad)} of group {group}'s {len(plan.writes)} partitions did not read back from {plan.target} "
        f"as written: {listed}"
    )
    return Outcome(statuses, f"{refusal}. {error}" if refusal else error)


def read_target(client: KazooClient, broker: BrokerGroup, plan: DirectionPlan) -> dict[TopicPartition, int]:
    """The target store's committed offsets of the plan's partitions, read afresh."""
    if plan.target == TO_KAFKA:
        return broker.committed()
    return read_offsets(client, plan.group, sorted({m.topic for m in plan.moves})).valid


EXIT_BLOCKED = 3  # a blocker for the asked direction: nothing was written


def checked_topics(topics: tuple[str, ...]) -> list[str] | None:
    for topic in topics:
        try:
            znodes.topic_path(topic)
        except ValueError:
            raise CliError(f"invalid topic name {topic!r}", EXIT_USAGE) from None
    return sorted(set(topics)) if topics else None


def direction_plans(evidence: Evidence, overrides: Overrides, topics: list[str] | None) -> dict[str, DirectionPlan]:
    return {
        target: plan_direction(
            evidence.zk, evidence.kafka, evidence.log, target, overrides, topics, evidence.partitions
        )
        for target in DIRECTIONS
    }
