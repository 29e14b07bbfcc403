"""Read one group's whole ZooKeeper state and find its problems (unowned, zombie, out-of-range...)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from zkconsumer import zkdata
from zkconsumer.cli.committed import read_offsets
from zkconsumer.cli.common import children
from zkconsumer.compat import DEFAULT
from zkconsumer.subscription import from_registration, thread_ids_for
from zkconsumer.zkdata import Registration, ZkDataError

TopicPartition = tuple[str, int]

# Problem kinds. REBALANCE_PROBLEMS make `verify` fail; the others are flagged by describe only.
UNOWNED = "unowned"
ZOMBIE = "zombie-owner"
NOT_SUBSCRIBED = "owner-not-subscribed"
FOREIGN_SESSION = "owner-session-mismatch"
BAD_OWNER = "bad-owner"
BAD_REGISTRATION = "bad-registration"
DUPLICATE_SUBSCRIPTION = "duplicate-subscription"
DUPLICATE_MEMBER = "duplicate-member"
AFTER_END = "offset-after-log-end"
BEFORE_START = "offset-before-log-start"
BAD_OFFSET = "bad-offset"
STALE_OFFSET = "offset-older-than-topic"
NO_PARTITION = "unknown-partition"
REBALANCE_PROBLEMS = frozenset(
    {
        UNOWNED,
        ZOMBIE,
        NOT_SUBSCRIBED,
        FOREIGN_SESSION,
        BAD_OWNER,
        BAD_REGISTRATION,
        DUPLICATE_SUBSCRIPTION,
        DUPLICATE_MEMBER,
    }
)


@dataclass(frozen=True)
class Problem:
    kind: str
    detail: str
    topic: str | None = None
    partition: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "partition": self.partition, "detail": self.detail}


@dataclass
class Member:
    """One registered consumer: its registration (or why it is unreadable) and its threads per topic."""

    consumer_id: str
    session: int
    registration: Registration | None
    threads: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    def subscription_text(self) -> str:
        if self.registration is None:
            return f"unreadable: {self.error}"
        counts = ",".join(f"{key}:{n}" for key, n in self.registration.subscription)
        return counts if self.registration.pattern == "static" else f"{self.registration.pattern} {counts}"

    def registered_at(self) -> str | None:
        stamp = self.registration.timestamp if self.registration else None
        if stamp is None or not stamp.isdigit():
            return stamp
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(int(stamp) / 1000))


@dataclass(frozen=True)
class Owner:
    thread_id: str
    session: int


@dataclass
class PartitionState:
    topic: str
    partition: int
    offset: int | None  # None: no offset node (Scala reads -1)
    owner: Owner | None
    log_start: int | None = None
    log_end: int | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset < 0 or self.log_end is None:
            return None
        return max(0, self.log_end - self.offset)

    @property
    def consumer_id(self) -> str | None:
        if self.owner is None:
            return None
        try:
            return zkdata.consumer_id_of_thread(self.owner.thread_id)
        except ValueError:
            return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "current_offset": self.offset,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "lag": self.lag,
            "owner": None if self.owner is None else self.owner.thread_id,
            "consumer_id": self.consumer_id,
            "problems": [p.kind for p in self.problems],
        }


@dataclass
class GroupSnapshot:
    group: str
    members: dict[str, Member]
    partitions: list[PartitionState]
    problems: list[Problem]  # group-level ones (registrations); partition ones live on each PartitionState
    taken_at: float
    log_offsets_reason: str | None = None

    def all_problems(self) -> list[Problem]:
        return self.problems + [p for row in self.partitions for p in row.problems]

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


# ---------------------------------------------------------------- pure analysis


def duplicate_subscription_keys(data: bytes) -> list[str]:
    """Keys that occur more than once in a registration's "subscription" object (Scala keeps the last)."""
    dupes_of: dict[int, list[str]] = {}

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        keys = [key for key, _ in pairs]
        dupes_of[id(obj)] = sorted({key for key in keys if keys.count(key) > 1})
        return obj

    try:
        doc = json.loads(bytes(data).decode("utf-8"), object_pairs_hook=hook)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return []
    sub = doc.get("subscription") if isinstance(doc, dict) else None
    return dupes_of.get(id(sub), []) if isinstance(sub, dict) else []


def analyse(
    members: Mapping[str, Member],
    owners: Mapping[TopicPartition, Owner],
    offsets: Mapping[TopicPartition, int | None],
    partitions: Mapping[str, Iterable[int]],
    log_offsets: Mapping[TopicPartition, tuple[int, int]],
    *,
    bad_offsets: Mapping[TopicPartition, str] = {},
    stale_offsets: Mapping[TopicPartition, str] = {},
    bad_owner_nodes: Iterable[Problem] = (),
    log_offsets_known: bool = True,
) -> list[PartitionState]:
    """One PartitionState per partition of interest, with its problems.

    Partitions of interest: every partition the brokers list for a topic in `partitions`, plus any
    partition that has an owner or offset node (e.g. of a deleted topic).
    """
    subscribed: dict[str, set[str]] = {}
    for member in members.values():
        for topic, threads in member.threads.items():
            subscribed.setdefault(topic, set()).update(threads)
    broker_keys = {(t, p) for t, ps in partitions.items() for p in ps}
    keys = sorted(broker_keys | set(owners) | set(offsets) | set(bad_offsets) | set(stale_offsets))
    rows = []
    for key in keys:
        topic, partition = key
        owner = owners.get(key)
        row = PartitionState(topic, partition, offsets.get(key), owner)
        if key in log_offsets:
            row.log_start, row.log_end = log_offsets[key]
        if key in bad_offsets:
            row.problems.append(Problem(BAD_OFFSET, bad_offsets[key], topic, partition))
        if key in stale_offsets:
            row.problems.append(Problem(STALE_OFFSET, stale_offsets[key], topic, partition))
        if key not in broker_keys:
            row.problems.append(Problem(NO_PARTITION, f"{topic}-{partition} is not in /brokers/topics", *key))
        if owner is None:
            if subscribed.get(topic) and key in broker_keys:
                row.problems.append(
                    Problem(
                        UNOWNED,
                        f"{topic}-{partition} has no owner although "
                        f"{len(subscribed[topic])} threads subscribe to {topic}",
                        *key,
                    )
                )
        else:
            cid = row.consumer_id
            owning = members.get(cid) if cid else None
            if cid is None:
                row.problems.append(Problem(BAD_OWNER, f"owner data {owner.thread_id!r} is not a thread id", *key))
            elif owning is None:
                row.problems.append(
                    Problem(
                        ZOMBIE,
                        f"owner {owner.thread_id} belongs to {cid}, which is not a "
                        f"registered member (session 0x{owner.session:x})",
                        *key,
                    )
                )
            else:
                if owning.registration is not None and owner.thread_id not in owning.threads.get(topic, ()):
                    row.problems.append(
                        Problem(
                            NOT_SUBSCRIBED, f"owner {owner.thread_id} is not one of {cid}'s threads for {topic}", *key
                        )
                    )
                if owner.session != owning.session:
                    row.problems.append(
                        Problem(
                            FOREIGN_SESSION,
                            f"owner node of {owner.thread_id} is held by session 0x{owner.session:x}, "
                            f"its member by 0x{owning.session:x} (duplicate consumer id?)",
                            *key,
                        )
                    )
        if row.offset is not None and row.offset >= 0 and row.log_end is not None and log_offsets_known:
            if row.offset > row.log_end:
                row.problems.append(
                    Problem(AFTER_END, f"offset {row.offset} is beyond the log end {row.log_end}", *key)
                )
            elif row.log_start is not None and row.offset < row.log_start:
                row.problems.append(
                    Problem(
                        BEFORE_START,
                        f"offset {row.offset} is before the log start {row.log_start} (messages deleted)",
                        *key,
                    )
                )
        rows.append(row)
    for problem in bad_owner_nodes:
        for row in rows:
            if (row.topic, row.partition) == (problem.topic, problem.partition):
                row.problems.append(problem)
    return rows


def member_problems(members: Mapping[str, Member], duplicate_keys: Mapping[str, list[str]]) -> list[Problem]:
    """Group-level problems: unreadable registrations, duplicate subscription keys, one session twice."""
    problems = []
    by_session: dict[int, list[str]] = {}
    for cid, member in sorted(members.items()):
        by_session.setdefault(member.session, []).append(cid)
        if member.error is not None:
            problems.append(
                Problem(BAD_REGISTRATION, f"{cid}: {member.error} (Scala members fail every rebalance on it)")
            )
        if duplicate_keys.get(cid):
            problems.append(
                Problem(
                    DUPLICATE_SUBSCRIPTION,
                    f"{cid} subscribes to {duplicate_keys[cid]} more than once in its registration",
                )
            )
    for session, cids in sorted(by_session.items()):
        if len(cids) > 1:
            problems.append(
                Problem(
                    DUPLICATE_MEMBER,
                    f"one ZooKeeper session 0x{session:x} registered {len(cids)} members: {', '.join(cids)}",
                )
            )
    return problems


# ---------------------------------------------------------------- reading ZooKeeper


def read_members(
    client: KazooClient, group: str, all_topics: list[str], *, exclude_internal: bool = True
) -> tuple[dict[str, Member], dict[str, list[str]]]:
    """consumer id -> Member, and consumer id -> duplicated subscription keys."""
    ids = children(client, zkdata.ids_path(group))
    asyncs = {cid: client.get_async(zkdata.member_path(group, cid)) for cid in ids}
    members: dict[str, Member] = {}
    duplicates: dict[str, list[str]] = {}
    for cid, result in sorted(asyncs.items()):
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        path = zkdata.member_path(group, cid)
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
    asyncs = {}
    problems = []
    for topic in topics:
        folder = zkdata.owners_path(group, topic)
        for child in children(client, folder):
            if not child.lstrip("-").isdigit():
                problems.append(Problem(BAD_OWNER, f"stray node {folder}/{child}", topic, None))
                continue
            asyncs[(topic, int(child))] = client.get_async(f"{folder}/{child}")
    owners = {}
    for key, result in asyncs.items():
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        try:
            owners[key] = Owner(zkdata.decode_owner(data, zkdata.owner_path(group, *key)), stat.ephemeralOwner)
        except ZkDataError as exc:
            problems.append(Problem(BAD_OWNER, str(exc), *key))
    return owners, problems


def read_partitions(client: KazooClient, topics: Iterable[str]) -> dict[str, list[int]]:
    """topic -> partitions listed in /brokers/topics/T (none for a missing or garbled topic node)."""
    asyncs = {t: client.get_async(zkdata.topic_path(t)) for t in set(topics)}
    out = {}
    for topic, result in sorted(asyncs.items()):
        try:
            data, _ = result.get()
            out[topic] = sorted(zkdata.decode_topic_partitions(data, zkdata.topic_path(topic)))
        except (NoNodeError, ZkDataError):
            out[topic] = []
    return out


def group_topics(client: KazooClient, group: str, members: Mapping[str, Member]) -> list[str]:
    """Union of owners/ and offsets/ children and the members' subscribed topics."""
    topics = set(children(client, zkdata.owners_path(group))) | set(children(client, zkdata.offsets_path(group)))
    for member in members.values():
        topics.update(member.threads)
    return sorted(topics)


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
    all_topics = sorted(children(client, zkdata.BROKER_TOPICS))
    members, duplicates = read_members(client, group, all_topics, exclude_internal=exclude_internal)
    wanted = group_topics(client, group, members) if topics is None else sorted(set(topics))
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
    return GroupSnapshot(group, members, rows, problems, taken_at, reason)
