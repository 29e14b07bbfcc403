"""A consumer group's problems (pure): members, owner nodes and offsets against the log; the CLI and each member's watchdog use it."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.znodes import Registration

# Problem kinds: describe flags each on its row and verify reports (and fails on) every one.
# REBALANCE_PROBLEMS decide verify's VerifyConsumerRebalance sentence; the others are offset problems.
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
NEGATIVE_OFFSET = "negative-offset"
# Kinds only a member sees (its watchdog, ownership_problems): what it owns against what it fetches,
# and a partition held by another thread than the one the last assignment gave it to.
NOT_ASSIGNED = "owner-not-assigned"
OWNED_NOT_FETCHED = "owned-not-fetched"
FETCHED_NOT_OWNED = "fetched-not-owned"
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
    """One thing wrong: `kind` (one of the constants above), a line naming the node, and the partition if any."""

    kind: str
    detail: str
    topic: str | None = None
    partition: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "partition": self.partition, "detail": self.detail}


@dataclass(frozen=True)
class Owner:
    """An owner node: the thread id it holds and the session that created it (its ephemeralOwner)."""

    thread_id: str
    session: int


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


@dataclass
class PartitionState:
    """One partition of a group: its committed offset, owner, log start/end and the problems found on it."""

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
            return znodes.consumer_id_of_thread(self.owner.thread_id)
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
        if row.offset is not None and row.offset < 0:
            row.problems.append(
                Problem(
                    NEGATIVE_OFFSET,
                    f"offset {row.offset} is negative: members take it for no offset and start per auto.offset.reset",
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


def ownership_problems(
    partitions: Mapping[str, Iterable[int]],
    owners: Mapping[str, Mapping[int, str]],
    members: Collection[str],
    owned_here: Set[TopicPartition],
    fetched_here: Set[TopicPartition] | None,
    expected: Mapping[str, Mapping[int, str]] | None = None,
) -> list[Problem]:
    """What a rebalance should repair, as a member's watchdog sees it (coordinator/watchdog.find_problems).

    partitions: topic -> partition ids checked; owners: topic -> partition -> owner thread id as found
    in ZooKeeper; members: live consumer ids; owned_here / fetched_here: what this member believes it
    owns and what its fetcher has assigned (None: no fetcher); expected: topic -> partition -> the thread
    the last assignment gave it. The same kinds as `analyse` where they mean the same (UNOWNED, ZOMBIE,
    BAD_OWNER), and the member-local ones (NOT_ASSIGNED, OWNED_NOT_FETCHED, FETCHED_NOT_OWNED).
    """
    problems = []
    for topic, ids in sorted(partitions.items()):
        found = owners.get(topic, {})
        for partition in sorted(ids):
            thread = found.get(partition)
            name = f"{topic}-{partition}"
            if thread is None:
                problems.append(Problem(UNOWNED, f"{name} has no owner", topic, partition))
                continue
            try:
                owner = znodes.consumer_id_of_thread(thread)
            except ValueError:
                problems.append(
                    Problem(BAD_OWNER, f"{name} is owned by {thread!r}, which is not a thread id", topic, partition)
                )
                continue
            wanted = (expected or {}).get(topic, {}).get(partition)
            if owner not in members:
                detail = f"{name} is owned by {thread}, which is not a group member (zombie)"
                problems.append(Problem(ZOMBIE, detail, topic, partition))
            elif wanted is not None and wanted != thread:
                detail = f"{name} is held by {thread} but assigned to {wanted}"
                problems.append(Problem(NOT_ASSIGNED, detail, topic, partition))
    if fetched_here is not None and fetched_here != owned_here:
        for topic, partition in sorted(owned_here - fetched_here):
            detail = f"{topic}-{partition} is owned here but not fetched"
            problems.append(Problem(OWNED_NOT_FETCHED, detail, topic, partition))
        for topic, partition in sorted(fetched_here - owned_here):
            detail = f"{topic}-{partition} is fetched here but not owned"
            problems.append(Problem(FETCHED_NOT_OWNED, detail, topic, partition))
    return problems
