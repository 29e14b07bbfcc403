"""A group's nodes and the log ends into one sample of admin.group_lag (pure): what `groups status` would have seen."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from zkconsumer.admin import Record, Sample, Seen, ownership_of
from zkconsumer.coordinator.subscription import from_registration, thread_ids_for
from zkconsumer.errors import ZkDataError
from zkconsumer.exporter.group_watch import GroupNodes
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.znodes import Registration

ZKCONSUMER = "zkconsumer"
SCALA = "scala"


@dataclass(frozen=True)
class Topic:
    """A topic as /brokers/topics/<topic> says: its partitions and its node's czxid (None: no node)."""

    partitions: tuple[int, ...]
    epoch: int | None


@dataclass(frozen=True)
class GroupSample:
    """One sample of a group, with what the exporter shows beside admin.group_lag's Sample."""

    sample: Sample
    member_kinds: Mapping[str, str]  # consumer id -> "zkconsumer" | "scala"
    last_commit_ms: int | None  # the newest offset node write (ZooKeeper's clock)
    problems: tuple[str, ...]  # nodes that could not be decoded, each named


@dataclass(frozen=True)
class SampleMeta:
    """A sample's group-level part: what a GroupSample holds beside its partitions."""

    at_ms: int
    members: tuple[str, ...]
    member_kinds: Mapping[str, str]
    last_commit_ms: int | None
    problems: tuple[str, ...]


def subscribed_topics(
    group: str, members: Mapping[str, tuple[bytes, int]], all_topics: Iterable[str], problems: list[str]
) -> set[str]:
    """The topics the registrations subscribe to (a wildcard's matched against every topic)."""
    topics: set[str] = set()
    listed = list(all_topics)
    for cid, (data, _session) in sorted(members.items()):
        path = znodes.member_path(group, cid)
        try:
            subscription = from_registration(Registration.decode(data, path))
            topics.update(thread_ids_for(cid, subscription, listed))
        except (ZkDataError, ValueError) as exc:
            problems.append(str(exc) if path in str(exc) else f"{path}: {exc}")  # ZkDataError names it
    return topics


def group_sample(
    group: str,
    nodes: GroupNodes,
    topics: Mapping[str, Topic],
    wanted: Iterable[str],
    log_ends: Mapping[TopicPartition, int],
    at_ms: int,
    problems: Iterable[str] = (),
    *,
    subscribed: Collection[str] | None = None,
    retired_after_ms: int | None = None,
) -> GroupSample:
    """The sample `GroupSampler.sample` would take of these nodes (group_records, with its time)."""
    meta, records = group_records(
        group,
        nodes,
        topics,
        wanted,
        log_ends,
        at_ms,
        problems,
        subscribed=subscribed,
        retired_after_ms=retired_after_ms,
    )
    partitions = {key: Seen(at_ms, *record) for key, record in sorted(records.items())}
    return GroupSample(Sample(at_ms, partitions, meta.members), meta.member_kinds, meta.last_commit_ms, meta.problems)


def group_records(
    group: str,
    nodes: GroupNodes,
    topics: Mapping[str, Topic],
    wanted: Iterable[str],
    log_ends: Mapping[TopicPartition, int],
    at_ms: int,
    problems: Iterable[str] = (),
    *,
    subscribed: Collection[str] | None = None,
    retired_after_ms: int | None = None,
) -> tuple[SampleMeta, dict[TopicPartition, Record]]:
    """What `GroupSampler.sample` would see of these nodes: every partition of a topic the
    group has offset or owner nodes for or subscribes to (`wanted`: those it has nodes for or subscribes to; one
    missing from `topics` has no node), each with its committed offset, its offset node's last
    write, log end and owner. An offset written before its topic's node was created belongs to a
    deleted incarnation of the topic: no committed offset (as members read it).

    `subscribed`: the topics registered members subscribe to (None: not judged, every partition
    without owner is UNOWNED). A topic nobody subscribes to while members are registered is a
    retired one: its partitions without owner are UNSUBSCRIBED, and once its newest offset node is
    older than `retired_after_ms` (None: never) and none of it has an owner, it is left out."""
    problems = [*problems, *(f"{path}: not a partition number" for path in nodes.stray)]
    sessions = {cid: session for cid, (_data, session) in nodes.members.items()}
    keys = {(t, p) for t in wanted if t in topics for p in topics[t].partitions}
    keys |= set(nodes.offsets) | set(nodes.owners)
    if subscribed is not None and retired_after_ms is not None and sessions:
        keys -= _retired_keys(keys, nodes, set(subscribed), at_ms - retired_after_ms)
    records: dict[TopicPartition, Record] = {}
    last_commit: int | None = None
    for key in sorted(keys):  # problems named in partition order
        committed, written = None, None
        if key in nodes.offsets:
            data, mzxid, mtime = nodes.offsets[key]
            topic = topics.get(key[0])
            try:
                value = _offset(data, group, key)
            except ZkDataError as exc:
                problems.append(str(exc))
                value = -1
            if value >= 0 and not (topic is not None and topic.epoch is not None and mzxid < topic.epoch):
                committed, written = value, (mzxid, mtime)
                last_commit = mtime if last_commit is None else max(last_commit, mtime)
        owner, owner_session = None, None
        if key in nodes.owners:
            data, owner_session = nodes.owners[key]
            try:
                owner = znodes.decode_owner(data, znodes.owner_path(group, *key))
            except ZkDataError as exc:
                problems.append(str(exc))
                owner_session = None
        on_topic = subscribed is None or key[0] in subscribed
        ownership = ownership_of(owner, owner_session, sessions, on_topic)
        records[key] = (committed, written, log_ends.get(key), owner, ownership)
    kinds = {cid: ZKCONSUMER if cid in nodes.marked else SCALA for cid in sorted(nodes.members)}
    return SampleMeta(at_ms, tuple(sorted(nodes.members)), kinds, last_commit, tuple(problems)), records


def _retired_keys(
    keys: Iterable[TopicPartition], nodes: GroupNodes, subscribed: set[str], before_ms: int
) -> set[TopicPartition]:
    """The partitions of topics nobody subscribes to, owns, or committed to since `before_ms`."""
    newest: dict[str, int] = {}
    for (topic, _p), (_data, _mzxid, mtime) in nodes.offsets.items():
        newest[topic] = max(newest.get(topic, mtime), mtime)
    owned = {topic for topic, _p in nodes.owners}
    return {
        key
        for key in keys
        if key[0] not in subscribed and key[0] not in owned and newest.get(key[0], before_ms - 1) < before_ms
    }


def _offset(data: bytes, group: str, key: TopicPartition) -> int:
    """An offset node's value: plain ASCII digits read here, anything else judged (and named) by
    znodes.decode_offset, whose path is built only then."""
    if data.isdigit() and len(data) < 19:
        return int(data)
    return znodes.decode_offset(data, znodes.offset_path(group, *key))
