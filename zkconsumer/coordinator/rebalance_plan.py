"""Rebalance planning (pure): group view -> assignment -> what to release, keep and claim."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from zkconsumer.config.compat import Compat
from zkconsumer.coordinator.assignors import AssignmentInput, GroupAssignment, assign_group, hash_ties, owned_by
from zkconsumer.coordinator.subscription import from_registration, thread_ids_for
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.znodes import Registration

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GroupView:
    """What one attempt read from ZooKeeper: the members and the topics they care about."""

    registrations: Mapping[str, Registration]
    all_topics: tuple[str, ...]
    partitions: Mapping[str, list[int]] = field(default_factory=dict)


def member_threads(view: GroupView, *, exclude_internal: bool, compat: Compat) -> dict[str, dict[str, list[str]]]:
    """consumer id -> topic -> thread ids, reading every registration as a Scala reader would."""
    out: dict[str, dict[str, list[str]]] = {}
    for cid, reg in view.registrations.items():
        sub = from_registration(reg, compat=compat)
        out[cid] = thread_ids_for(cid, sub, view.all_topics, exclude_internal=exclude_internal, compat=compat)
    return out


def subscribed_topics(threads: Mapping[str, Mapping[str, list[str]]]) -> set[str]:
    """Every topic at least one member subscribes to (0.10.2+: all of them count)."""
    return {topic for per_topic in threads.values() for topic in per_topic}


def assignment_input(
    threads: Mapping[str, Mapping[str, list[str]]], partitions: Mapping[str, list[int]]
) -> AssignmentInput:
    consumers_for_topic: dict[str, list[str]] = {}
    for per_topic in threads.values():
        for topic, ids in per_topic.items():
            consumers_for_topic.setdefault(topic, []).extend(ids)
    return AssignmentInput(consumers_for_topic=consumers_for_topic, partitions_for_topic=partitions)


@dataclass(frozen=True)
class Decision:
    """The group-wide assignment and this member's share of it."""

    group: GroupAssignment  # every partition -> owning thread id
    mine: Mapping[TopicPartition, str]

    def by_topic(self) -> dict[str, dict[int, str]]:
        """topic -> partition -> thread, topics and partitions ascending."""
        return self.group.by_topic()


def decide(
    consumer_id: str,
    strategy: str,
    threads: Mapping[str, Mapping[str, list[str]]],
    partitions: Mapping[str, list[int]],
    compat: Compat,
) -> Decision:
    """Run the strategy exactly as every Scala member would, and take our share."""
    inp = assignment_input(threads, partitions)
    if strategy == "roundrobin":
        for a, b in hash_ties(inp, compat.roundrobin_key_format):
            log.warning(
                "roundrobin: %s and %s hash alike; Scala orders such pairs by HashMap "
                "order, so members may disagree on them",
                a,
                b,
            )
    group = assign_group(strategy, inp, compat)
    return Decision(group=group, mine=owned_by(group, consumer_id))


@dataclass(frozen=True)
class Plan:
    """Ownership changes between what we own now and what the decision gives us."""

    release: Mapping[TopicPartition, str]
    keep: Mapping[TopicPartition, str]
    claim: Mapping[TopicPartition, str]


def plan(
    owned: Mapping[TopicPartition, str], target: Mapping[TopicPartition, str], *, stop_the_world: bool = True
) -> Plan:
    """Legacy order releases everything and claims everything; incremental keeps what stays."""
    if stop_the_world:
        return Plan(release=dict(owned), keep={}, claim=dict(target))
    keep = {k: v for k, v in owned.items() if target.get(k) == v}
    return Plan(
        release={k: v for k, v in owned.items() if k not in keep},
        keep=keep,
        claim={k: v for k, v in target.items() if k not in keep},
    )
