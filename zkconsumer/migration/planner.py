"""Pure planning of a migration: per-partition moves and blockers of a direction, the step a group has reached."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkconsumer.migration.model import (
    ALLOW_REWIND,
    CLAMP,
    CLAMP_TO_LOG_END,
    COPY,
    DIRECTIONS,
    EQUAL,
    FORCE_LIVE_SOURCE,
    FORCE_LIVE_TARGET,
    NO_OFFSET,
    REFUSE_OUT_OF_RANGE,
    REFUSE_OWNED,
    REFUSE_REWIND,
    REWIND,
    SOURCE_ONLY,
    TARGET_ONLY,
    TO_KAFKA,
    TO_ZOOKEEPER,
    UNKNOWN_PARTITION,
    Blocker,
    DirectionPlan,
    KafkaSide,
    Move,
    Overrides,
    PartitionRow,
    Step,
    ZkSide,
    in_scope,
)
from zkconsumer.partitions import TopicPartition

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


def partition_rows(
    zk: ZkSide,
    kafka: KafkaSide,
    log: Mapping[TopicPartition, tuple[int, int]],
    topics: Iterable[str] | None = None,
    partitions: Iterable[TopicPartition] = (),
) -> list[PartitionRow]:
    """One row per partition either side knows (offset, owner or assignment), and per partition of
    those topics that neither has an offset of (`partitions`: as the brokers have them), with lag
    on both sides."""
    assigned = {k: m.label() for m in kafka.members for k in m.assignment}
    keys = in_scope(set(zk.offsets) | set(kafka.offsets) | set(zk.owners) | set(assigned) | set(partitions), topics)
    rows = []
    for key in keys:
        start, end = log.get(key, (None, None))
        rows.append(
            PartitionRow(
                key[0],
                key[1],
                zk.offsets.get(key),
                kafka.offsets.get(key),
                start,
                end,
                zk.owners.get(key),
                assigned.get(key),
            )
        )
    return rows


def _zk_live_text(zk: ZkSide) -> str:
    parts = [f"{len(zk.members)} ZooKeeper members"] if zk.members else []
    parts += [f"owners of {len(zk.owners)} partitions"] if zk.owners and not zk.members else []
    parts += ["a Spark ingest job"] if zk.ingest_topics else []
    return " and ".join(parts)


def migration_step(zk: ZkSide, kafka: KafkaSide, topics: Iterable[str] | None = None) -> Step:
    """Best effort: zookeeper-live, dual-commit-live, mixed, stopped, copied, kafka-live or no-offsets.

    Nothing records how members store offsets; a dual-commit member commits to the broker group
    with no generation, leaving it Empty, so "ZooKeeper live and Kafka holding an offset for every
    partition ZooKeeper holds one for" is read as dual commit. "copied" means both stores agree on
    every partition and nothing runs; it looks the same after a rollback.
    """
    zk_keys, kafka_keys = set(in_scope(zk.offsets, topics)), set(in_scope(kafka.offsets, topics))
    if zk.live and kafka.live:
        return Step(
            "mixed",
            f"{_zk_live_text(zk)} and {kafka.describe(zk.group)} run at once: both "
            "consume the same partitions, and dual-commit members' Kafka commits fail with "
            "UNKNOWN_MEMBER_ID",
            "stop one side",
        )
    if zk.live:
        if zk_keys and zk_keys <= kafka_keys:
            return Step(
                "dual-commit-live",
                "ZooKeeper members run and the broker group holds an offset for every "
                "partition ZooKeeper does (dual commit, it seems)",
                "stop the ZooKeeper group (each member makes a final commit), then `migrate offsets --to "
                "kafka --execute`",
            )
        return Step(
            "zookeeper-live",
            f"{_zk_live_text(zk)} run; the broker group holds offsets "
            f"of {len(zk_keys & kafka_keys)} of their {len(zk_keys)} partitions",
            "switch members to dual commit (offsets.storage=kafka, dual.commit.enabled=true) or stop them",
        )
    if kafka.live:
        return Step(
            "kafka-live",
            f"{kafka.describe(zk.group)}; no ZooKeeper member runs",
            "done; to roll back, stop them and `migrate offsets --to zookeeper --execute`",
        )
    if not zk_keys and not kafka_keys:
        return Step("no-offsets", "nothing runs and neither store holds an offset", "nothing to copy")
    if zk_keys == kafka_keys and all(zk.offsets[k] == kafka.offsets[k] for k in zk_keys):
        return Step(
            "copied",
            "nothing runs and both stores hold the same offsets",
            "start the broker-coordinated consumers (or, to roll back, the ZooKeeper ones)",
        )
    return Step(
        "stopped",
        "nothing runs; the stores differ",
        "`migrate offsets --to kafka --execute` (or --to zookeeper to roll back)",
    )
