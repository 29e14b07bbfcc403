"""A consistent snapshot of one group: members and registrations, owners with their sessions, committed offsets, log offsets."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.committed import read_offsets
from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.groups import group_topics
from zkconsumer.cluster import broker_nodes
from zkconsumer.config.compat import DEFAULT
from zkconsumer.coordinator.subscription import from_registration, thread_ids_for
from zkconsumer.errors import ZkDataError
from zkconsumer.group_problems import (
    BAD_OWNER,
    REBALANCE_PROBLEMS,
    Member,
    Owner,
    PartitionState,
    Problem,
    analyse,
    duplicate_subscription_keys,
    member_problems,
)
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children, get_many
from zkconsumer.zookeeper.znodes import Registration


@dataclass
class GroupSnapshot:
    group: str
    members: dict[str, Member]
    partitions: list[PartitionState]
    problems: list[Problem]  # group-level ones (registrations); partition ones live on each PartitionState
    taken_at: float
    log_offsets_reason: str | None = None
    offsets_written: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)  # see ZkOffsets.written

    def all_problems(self) -> list[Problem]:
        return self.problems + [p for row in self.partitions for p in row.problems]

    def rebalance_problems(self) -> list[Problem]:
        """The problems that mean the group is not correctly balanced right now (verify fails on them)."""
        return [p for p in self.all_problems() if p.kind in REBALANCE_PROBLEMS]

    def owned_by(self, consumer_id: str) -> list[PartitionState]:
        return [row for row in self.partitions if row.consumer_id == consumer_id]

    def idle_members(self) -> list[Member]:
        owning = {row.consumer_id for row in self.partitions}
        return [m for cid, m in sorted(self.members.items()) if cid not in owning]

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "members": [
                {
                    "consumer_id": m.consumer_id,
                    "subscription": m.subscription_text(),
                    "pattern": m.registration.pattern if m.registration else None,
                    "registered_at": m.registered_at(),
                    "session": f"0x{m.session:x}",
                    "threads": sum(len(t) for t in m.threads.values()),
                    "owned_partitions": len(self.owned_by(m.consumer_id)),
                }
                for m in sorted(self.members.values(), key=lambda m: m.consumer_id)
            ],
            "partitions": [row.as_dict() for row in self.partitions],
            "idle_members": [m.consumer_id for m in self.idle_members()],
            "total_lag": sum(row.lag or 0 for row in self.partitions),
            "problems": [p.as_dict() for p in self.all_problems()],
            "log_offsets_unavailable": self.log_offsets_reason,
        }


def read_members(
    client: KazooClient, group: str, all_topics: list[str], *, exclude_internal: bool = True
) -> tuple[dict[str, Member], dict[str, list[str]]]:
    """consumer id -> Member, and consumer id -> duplicated subscription keys."""
    ids = children(client, znodes.ids_path(group))
    found = get_many(client, {cid: znodes.member_path(group, cid) for cid in ids})
    members: dict[str, Member] = {}
    duplicates: dict[str, list[str]] = {}
    for cid, (data, stat) in sorted(found.items()):
        path = znodes.member_path(group, cid)
        try:
            registration = Registration.decode(data, path)
            subscription = from_registration(registration)
            threads = thread_ids_for(cid, subscription, all_topics, exclude_internal=exclude_internal, compat=DEFAULT)
            members[cid] = Member(cid, stat.ephemeralOwner, registration, threads)
        except (ZkDataError, ValueError) as exc:
            members[cid] = Member(cid, stat.ephemeralOwner, None, {}, error=str(exc))
        duplicates[cid] = duplicate_subscription_keys(data)
    return members, duplicates


def read_owners(
    client: KazooClient, group: str, topics: Iterable[str]
) -> tuple[dict[TopicPartition, Owner], list[Problem]]:
    paths: dict[TopicPartition, str] = {}
    problems = []
    for topic in topics:
        folder = znodes.owners_path(group, topic)
        for child in children(client, folder):
            if not child.lstrip("-").isdigit():
                problems.append(Problem(BAD_OWNER, f"stray node {folder}/{child}", topic, None))
                continue
            paths[(topic, int(child))] = f"{folder}/{child}"
    owners = {}
    for key, (data, stat) in get_many(client, paths).items():
        try:
            owners[key] = Owner(znodes.decode_owner(data, znodes.owner_path(group, *key)), stat.ephemeralOwner)
        except ZkDataError as exc:
            problems.append(Problem(BAD_OWNER, str(exc), *key))
    return owners, problems


def read_partitions(client: KazooClient, topics: Iterable[str]) -> dict[str, list[int]]:
    """topic -> partitions listed in /brokers/topics/T (none for a missing or garbled topic node)."""
    wanted = set(topics)
    found = get_many(client, {t: znodes.topic_path(t) for t in wanted})
    out = {}
    for topic in sorted(wanted):
        try:
            data, _ = found[topic]
            out[topic] = sorted(broker_nodes.decode_topic_partitions(data, znodes.topic_path(topic)))
        except (KeyError, ZkDataError):
            out[topic] = []
    return out


def _snapshot_topics(client: KazooClient, group: str, members: Mapping[str, Member]) -> list[str]:
    """The topics the group has offsets or owners of, and those its members subscribe to."""
    topics = group_topics(client, group)
    for member in members.values():
        topics.update(member.threads)
    return sorted(topics)


@admin_errors
def take_snapshot(
    client: KazooClient,
    group: str,
    watermarks: Any = None,
    *,
    exclude_internal: bool = True,
    topics: Iterable[str] | None = None,
) -> GroupSnapshot:
    """Everything describe/verify/top show about one group; watermarks (a Watermarks) adds log offsets."""
    taken_at = time.time()
    all_topics = sorted(children(client, znodes.BROKER_TOPICS))
    members, duplicates = read_members(client, group, all_topics, exclude_internal=exclude_internal)
    wanted = _snapshot_topics(client, group, members) if topics is None else sorted(set(topics))
    owners, owner_problems = read_owners(client, group, wanted)
    found = read_offsets(client, group, wanted)
    partitions = read_partitions(client, wanted)
    keys = {(t, p) for t, ps in partitions.items() for p in ps} | set(owners) | set(found.valid)
    log_offsets: dict[TopicPartition, tuple[int, int]] = {}
    reason = "not requested"
    if watermarks is not None:
        log_offsets = watermarks.offsets(keys) if watermarks.available else {}
        reason = watermarks.reason
    rows = analyse(
        members,
        owners,
        found.valid,
        partitions,
        log_offsets,
        bad_offsets=found.garbled,
        stale_offsets={k: found.stale_note(k) for k in found.stale},
        bad_owner_nodes=[p for p in owner_problems if p.partition is not None],
        log_offsets_known=reason is None,
    )
    problems = member_problems(members, duplicates) + [p for p in owner_problems if p.partition is None]
    return GroupSnapshot(group, members, rows, problems, taken_at, reason, found.written)
