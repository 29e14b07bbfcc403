"""The migration's records: both sides of a group, the per-partition moves and blockers of a plan, where a migration stands."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zkconsumer.partitions import TopicPartition

TO_KAFKA, TO_ZOOKEEPER = "kafka", "zookeeper"
DIRECTIONS = (TO_KAFKA, TO_ZOOKEEPER)

# Per-partition actions. WRITING ones put `new` into the target store.
COPY = "copy"  # source ahead of target
SOURCE_ONLY = "source-only"  # target has no offset: copied
CLAMP = "clamp"  # source outside the log: the clamped value is copied
REWIND = "rewind"  # source behind target, --allow-rewind given
EQUAL = "already-equal"
TARGET_ONLY = "target-only-keep"  # nothing to copy: the target's offset stays, reported
REFUSE_REWIND = "refuse-rewind"  # source behind target: never without --allow-rewind
REFUSE_OUT_OF_RANGE = "refuse-out-of-range"  # source beyond the log end, no --clamp-to-log-end
REFUSE_OWNED = "refuse-owned"  # ZooKeeper target partition has an owner node: never raced
UNKNOWN_PARTITION = "skip-unknown-partition"  # the brokers have no such partition (topic deleted?)
NO_OFFSET = "no-offset-either-side"  # a partition of the topics with no offset in either store
WRITING = frozenset({COPY, SOURCE_ONLY, CLAMP, REWIND})

# Overrides, by the CLI flag that gives them.
FORCE_LIVE_TARGET, FORCE_LIVE_SOURCE = "--force-live-target", "--force-live-source"
ALLOW_REWIND, CLAMP_TO_LOG_END = "--allow-rewind", "--clamp-to-log-end"


@dataclass(frozen=True)
class Overrides:
    """The blockers the operator chose to pass, one field per override flag."""

    allow_rewind: bool = False
    force_live_target: bool = False
    force_live_source: bool = False
    clamp_to_log_end: bool = False

    def given(self, flag: str | None) -> bool:
        return {
            ALLOW_REWIND: self.allow_rewind,
            FORCE_LIVE_TARGET: self.force_live_target,
            FORCE_LIVE_SOURCE: self.force_live_source,
            CLAMP_TO_LOG_END: self.clamp_to_log_end,
        }.get(flag or "", False)


ZKCONSUMER, SCALA = "zkconsumer", "scala"  # a registered member with or without the zkconsumer marker

IDLE_KAFKA_STATES = frozenset({"Empty", "Dead"})  # Dead: the broker knows no such group (yet)


@dataclass(frozen=True)
class ZkSide:
    """The group under /consumers/<group>: member id -> kind (ZKCONSUMER or SCALA), owner thread per
    partition, valid committed offsets (none older than their topic), topics a Spark ingest job holds."""

    group: str
    members: Mapping[str, str] = field(default_factory=dict)
    owners: Mapping[TopicPartition, str] = field(default_factory=dict)
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    ingest_topics: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return bool(self.members or self.owners or self.ingest_topics)


def in_scope(keys: Iterable[TopicPartition], topics: Iterable[str] | None) -> list[TopicPartition]:
    """The keys of `topics` (None: every key), sorted once each."""
    wanted = None if topics is None else set(topics)
    return sorted(k for k in set(keys) if wanted is None or k[0] in wanted)


@dataclass(frozen=True)
class KafkaMember:
    """One member of the broker-coordinated group as the brokers describe it."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()

    def label(self) -> str:
        return f"{self.client_id}@{self.host.lstrip('/')}"


@dataclass(frozen=True)
class KafkaSide:
    """The broker-coordinated group of the same id: state as Kafka names it, members, committed offsets."""

    state: str = "Dead"
    members: tuple[KafkaMember, ...] = ()
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return bool(self.members) or self.state not in IDLE_KAFKA_STATES

    def describe(self, group: str) -> str:
        shown = ", ".join(m.label() for m in self.members[:5]) + (", ..." if len(self.members) > 5 else "")
        return f"broker group {group} is {self.state} with {len(self.members)} members" + (
            f" ({shown})" if shown else ""
        )


@dataclass(frozen=True)
class Move:
    """One partition in one direction: `new` is the offset written to the target (None: nothing)."""

    topic: str
    partition: int
    source: int | None
    target: int | None
    action: str
    new: int | None = None
    log_start: int | None = None
    log_end: int | None = None
    note: str = ""

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def writes(self) -> bool:
        return self.action in WRITING

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "source_offset": self.source,
            "target_offset": self.target,
            "new_offset": self.new,
            "action": self.action,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "note": self.note,
        }


@dataclass(frozen=True)
class Blocker:
    """Why the copy must not run. `override`: the flag that allows it anyway (None: nothing does)."""

    code: str
    message: str
    override: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "override": self.override,
            "partitions": [{"topic": t, "partition": p} for t, p in self.partitions],
        }


@dataclass(frozen=True)
class DirectionPlan:
    """Everything `migrate offsets --to <target>` would do; `blockers` are the ones not overridden."""

    group: str
    target: str
    moves: tuple[Move, ...]
    blockers: tuple[Blocker, ...]
    overridden: tuple[Blocker, ...]

    @property
    def source(self) -> str:
        return TO_ZOOKEEPER if self.target == TO_KAFKA else TO_KAFKA

    @property
    def blocked(self) -> bool:
        return bool(self.blockers)

    @property
    def writes(self) -> list[Move]:
        return [m for m in self.moves if m.writes]

    @property
    def unstarted(self) -> list[Move]:
        """Partitions with no offset in either store: the new consumers start them where their
        auto.offset.reset says (see start_advice)."""
        return [m for m in self.moves if m.action == NO_OFFSET]

    def start_advice(self) -> str | None:
        """What the consumers that take over must set for the partitions no store holds an offset
        of, so they do not skip what is produced to them before those consumers start."""
        unstarted = self.unstarted
        if not unstarted:
            return None
        names = ", ".join(f"{m.topic}-{m.partition}" for m in unstarted[:8]) + (", ..." if len(unstarted) > 8 else "")
        setting = "auto.offset.reset=earliest" if self.target == TO_KAFKA else "auto.offset.reset=smallest"
        return (
            f"{len(unstarted)} partition(s) have no committed offset in either store ({names}): the "
            f"consumers that take over start them where auto.offset.reset says. Set {setting} on them, "
            "or they skip what is produced to these partitions between the stop and their start (the "
            "default, latest/largest, starts at the log end)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "blocked": self.blocked,
            "blockers": [b.as_dict() for b in self.blockers],
            "overridden": [b.as_dict() for b in self.overridden],
            "writes": len(self.writes),
            "start_advice": self.start_advice(),
            "partitions": [m.as_dict() for m in self.moves],
        }


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    zookeeper_offset: int | None
    kafka_offset: int | None
    log_start: int | None
    log_end: int | None
    zookeeper_owner: str | None
    kafka_member: str | None

    @staticmethod
    def _lag(offset: int | None, end: int | None) -> int | None:
        return None if offset is None or end is None else max(0, end - offset)

    @property
    def zookeeper_lag(self) -> int | None:
        return self._lag(self.zookeeper_offset, self.log_end)

    @property
    def kafka_lag(self) -> int | None:
        return self._lag(self.kafka_offset, self.log_end)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "zookeeper_offset": self.zookeeper_offset,
            "kafka_offset": self.kafka_offset,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "zookeeper_lag": self.zookeeper_lag,
            "kafka_lag": self.kafka_lag,
            "zookeeper_owner": self.zookeeper_owner,
            "kafka_member": self.kafka_member,
        }


@dataclass(frozen=True)
class Step:
    """Where the group appears to be in the migration, judged from what both sides show now."""

    name: str
    detail: str
    next: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "detail": self.detail, "next": self.next}
