"""Pure planning of a group's offsets copied between ZooKeeper and the brokers: per-partition actions, blockers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zkconsumer.migration.actions import CLAMP as CLAMP
from zkconsumer.migration.actions import COPY as COPY
from zkconsumer.migration.actions import DIRECTIONS as DIRECTIONS
from zkconsumer.migration.actions import EQUAL as EQUAL
from zkconsumer.migration.actions import NO_OFFSET as NO_OFFSET
from zkconsumer.migration.actions import REFUSE_OUT_OF_RANGE as REFUSE_OUT_OF_RANGE
from zkconsumer.migration.actions import REFUSE_OWNED as REFUSE_OWNED
from zkconsumer.migration.actions import REFUSE_REWIND as REFUSE_REWIND
from zkconsumer.migration.actions import REWIND as REWIND
from zkconsumer.migration.actions import SOURCE_ONLY as SOURCE_ONLY
from zkconsumer.migration.actions import TARGET_ONLY as TARGET_ONLY
from zkconsumer.migration.actions import TO_KAFKA as TO_KAFKA
from zkconsumer.migration.actions import TO_ZOOKEEPER as TO_ZOOKEEPER
from zkconsumer.migration.actions import UNKNOWN_PARTITION as UNKNOWN_PARTITION
from zkconsumer.migration.actions import WRITING as WRITING
from zkconsumer.migration.blocker import Blocker as Blocker
from zkconsumer.migration.move import Move as Move
from zkconsumer.migration.overrides import ALLOW_REWIND as ALLOW_REWIND
from zkconsumer.migration.overrides import CLAMP_TO_LOG_END as CLAMP_TO_LOG_END
from zkconsumer.migration.overrides import FORCE_LIVE_SOURCE as FORCE_LIVE_SOURCE
from zkconsumer.migration.overrides import FORCE_LIVE_TARGET as FORCE_LIVE_TARGET
from zkconsumer.migration.overrides import Overrides as Overrides
from zkconsumer.migration.sides import (
    KafkaSide,
    ZkSide,
    in_scope,
)
from zkconsumer.partitions import TopicPartition


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


_NO_OVERRIDES = Overrides()  # frozen: one shared default


def plan_move(
    key: TopicPartition,
    source: int | None,
    target: int | None,
    log: tuple[int, int] | None,
    overrides: Overrides,
    target_owner: str | None = None,
) -> Move:
    """One partition's action (see the module's action names). Offsets below the log start are
    clamped up to it (those messages are gone; a consumer there would be reset by
    auto.offset.reset, to the log end with `largest`); offsets beyond the log end are refused
    unless clamp_to_log_end, as they mean a truncated or re-created log, or the wrong cluster."""
    start, end = log if log is not None else (None, None)

    def move(action: str, note: str = "", new: int | None = None) -> Move:
        return Move(key[0], key[1], source, target, action, new, start, end, note)

    if source is None:
        return move(TARGET_ONLY, "no offset on the source side: the target's is left")
    if start is None or end is None:
        return move(UNKNOWN_PARTITION, "the brokers have no such partition: not copied")
    value, note, clamped = source, "", False
    if source > end:
        if not overrides.clamp_to_log_end:
            return move(REFUSE_OUT_OF_RANGE, f"source offset {source} is beyond the log end {end}")
        value, note, clamped = end, f"source offset {source} is beyond the log end: clamped to {end}", True
    elif source < start:
        value, clamped = start, True
        note = f"source offset {source} is before the log start (deleted): clamped to {start}"
    if target is not None and value == target:
        return move(EQUAL, note)
    if target is not None and value < target:
        note = f"target {target} is ahead of {value}" + (f"; {note}" if note else "")
        if not overrides.allow_rewind:
            return move(REFUSE_REWIND, note)
        action = REWIND
    else:
        action = CLAMP if clamped else (SOURCE_ONLY if target is None else COPY)
    if target_owner is not None:
        return move(REFUSE_OWNED, f"owned by {target_owner} in ZooKeeper: not raced")
    return move(action, note, value)


def plan_direction(
    zk: ZkSide,
    kafka: KafkaSide,
    log: Mapping[TopicPartition, tuple[int, int]],
    target: str,
    overrides: Overrides = _NO_OVERRIDES,
    topics: Iterable[str] | None = None,
    partitions: Iterable[TopicPartition] = (),
) -> DirectionPlan:
    """What copying every committed offset of the source store into the target store does.
    `partitions`: every partition of the topics as the brokers have them; those with no offset in
    either store are listed too (NO_OFFSET), since the consumers taking over must be told how to
    start them."""
    if target not in DIRECTIONS:
        raise ValueError(f"target must be one of {DIRECTIONS}, got {target!r}")
    topics = None if topics is None else sorted(set(topics))
    to_kafka = target == TO_KAFKA
    source_offsets, target_offsets = (zk.offsets, kafka.offsets) if to_kafka else (kafka.offsets, zk.offsets)
    keys = in_scope(set(source_offsets) | set(target_offsets), topics)
    bare = in_scope(set(partitions) - set(keys), topics)
    moves = tuple(
        sorted(
            [
                plan_move(
                    k,
                    source_offsets.get(k),
                    target_offsets.get(k),
                    log.get(k),
                    overrides,
                    None if to_kafka else zk.owners.get(k),
                )
                for k in keys
            ]
            + [_no_offset(k, log.get(k)) for k in bare],
            key=lambda m: m.key,
        )
    )
    found = _liveness_blockers(zk, kafka, target, topics) + _partition_blockers(zk.group, moves, target)
    return DirectionPlan(
        zk.group,
        target,
        moves,
        tuple(b for b in found if not overrides.given(b.override)),
        tuple(b for b in found if overrides.given(b.override)),
    )


def _no_offset(key: TopicPartition, log: tuple[int, int] | None) -> Move:
    start, end = log if log is not None else (None, None)
    return Move(key[0], key[1], None, None, NO_OFFSET, None, start, end, "no offset in either store")


def _zk_members_text(zk: ZkSide) -> str:
    names = [f"{cid} ({kind})" for cid, kind in sorted(zk.members.items())]
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _liveness_blockers(zk: ZkSide, kafka: KafkaSide, target: str, topics: list[str] | None) -> list[Blocker]:
    group = zk.group
    out: list[Blocker] = []
    side = "target" if target == TO_ZOOKEEPER else "source"
    flag = FORCE_LIVE_TARGET if side == "target" else FORCE_LIVE_SOURCE
    why = (
        "they would commit over the copied offsets"
        if side == "target"
        else "they still consume and commit, so the copy would fall behind"
    )
    if zk.members:
        out.append(
            Blocker(
                f"{side}-zookeeper-members",
                f"ZooKeeper group {group} has {len(zk.members)} registered members under "
                f"/consumers/{group}/ids: {_zk_members_text(zk)}; {why}; stop them first"
                + (" (each makes a final commit)" if side == "source" else ""),
                flag,
            )
        )
    owned = in_scope(zk.owners, topics)
    if owned and side == "source":  # a target's owned partitions are refused one by one (refuse-owned)
        shown = ", ".join(f"{t}-{p} by {zk.owners[(t, p)]}" for t, p in owned[:5]) + (", ..." if len(owned) > 5 else "")
        out.append(
            Blocker(
                "source-zookeeper-owned",
                f"ZooKeeper group {group} still owns {len(owned)} partitions under /consumers/{group}/owners: {shown}",
                flag,
                tuple(owned),
            )
        )
    ingest = [t for t in zk.ingest_topics if topics is None or t in topics]
    if ingest:
        out.append(
            Blocker(
                f"{side}-zookeeper-ingest",
                f"a Spark ingest job of group {group} runs for {', '.join(sorted(ingest))} (lock under "
                f"/consumers/{group}/zkconsumer/ingest); {why}",
                flag,
            )
        )
    kafka_side = "target" if target == TO_KAFKA else "source"
    if kafka.live:
        consequence = (
            "the broker rejects offset changes of a group with members (UNKNOWN_MEMBER_ID) and they "
            "would commit over them"
            if kafka_side == "target"
            else "they still consume and commit, so the copy would fall behind"
        )
        out.append(
            Blocker(
                f"{kafka_side}-kafka-group-active",
                f"{kafka.describe(group)}: {consequence}; stop them first",
                FORCE_LIVE_TARGET if kafka_side == "target" else FORCE_LIVE_SOURCE,
            )
        )
    return out


def _partition_blockers(group: str, moves: Iterable[Move], target: str) -> list[Blocker]:
    out = []
    by_action: dict[str, list[Move]] = {}
    for move in moves:
        by_action.setdefault(move.action, []).append(move)

    def shown(rows: list[Move]) -> str:
        return ", ".join(f"{m.topic}-{m.partition} ({m.note})" for m in rows[:5]) + (", ..." if len(rows) > 5 else "")

    if by_action.get(REFUSE_REWIND):
        rows = by_action[REFUSE_REWIND]
        out.append(
            Blocker(
                "rewind-refused",
                f"copying group {group}'s offsets to {target} would move "
                f"{len(rows)} partitions backwards: {shown(rows)}",
                ALLOW_REWIND,
                tuple(m.key for m in rows),
            )
        )
    if by_action.get(REFUSE_OUT_OF_RANGE):
        rows = by_action[REFUSE_OUT_OF_RANGE]
        out.append(
            Blocker(
                "offset-beyond-log-end",
                f"group {group} has {len(rows)} source offsets beyond the log end: {shown(rows)}",
                CLAMP_TO_LOG_END,
                tuple(m.key for m in rows),
            )
        )
    if by_action.get(REFUSE_OWNED):
        rows = by_action[REFUSE_OWNED]
        out.append(
            Blocker(
                "target-zookeeper-owned",
                f"{len(rows)} partitions to write have an owner node under "
                f"/consumers/{group}/owners: {shown(rows)}; the writer never "
                "races an owner, stop it first",
                None,
                tuple(m.key for m in rows),
            )
        )
    return out


def mismatches(written: Iterable[Move], read_back: Mapping[TopicPartition, int]) -> list[tuple[Move, int | None]]:
    """The written moves whose target did not read back as `new`, with what it read back."""
    return [(m, read_back.get(m.key)) for m in written if read_back.get(m.key) != m.new]


def spark_starting_offsets(
    partitions: Mapping[str, Iterable[int]], offsets: Mapping[TopicPartition, int]
) -> tuple[dict[str, dict[str, int]], list[TopicPartition]]:
    """Spark's Kafka source `startingOffsets` JSON object ({"topic": {"0": 23}}) for every partition
    of `partitions`, and the partitions with no committed offset, which get -2 (earliest): Spark
    wants every partition of the subscribed topics named."""
    out: dict[str, dict[str, int]] = {}
    missing = []
    for topic in sorted(partitions):
        out[topic] = {}
        for partition in sorted(set(partitions[topic])):
            offset = offsets.get((topic, partition))
            if offset is None or offset < 0:
                missing.append((topic, partition))
                offset = -2
            out[topic][str(partition)] = offset
    return out, missing
