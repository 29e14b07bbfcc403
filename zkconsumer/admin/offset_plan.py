"""Plans of offset writes (import, reset): every row checked against the cluster before anything is written.

A row is refused when its topic or partition does not exist, or its new offset lies outside
[log start, log end] of the partition as the brokers report it (a negative one included); with
--clamp such an offset is moved to the nearer end instead, and the row says so. Any refused row
stops the plan before the first write (AdminUsageError, a bad request), naming every bad row.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient

from zkconsumer.admin.committed import ZkOffsets, read_offsets
from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.groups import member_count
from zkconsumer.admin.kafka_commits import KafkaCommits, open_kafka_commits
from zkconsumer.admin.log_offsets import BrokerAccess, Warn, log_warning, open_watermarks
from zkconsumer.admin.offset_targets import Target, clamp, range_problem, reset_offset
from zkconsumer.admin.offsets_write import PlannedWrite
from zkconsumer.admin.snapshot import read_owners
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.errors import AdminRefused, AdminUnavailable, AdminUsageError
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes


@dataclass(frozen=True)
class WantedOffset:
    """A partition a command wants to write: `offset` from a file (import), or None for the reset target's."""

    group: str
    topic: str
    partition: int
    offset: int | None = None
    source: str = ""  # where it came from ("line 3"), for messages

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    def name(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}group {self.group}, topic {self.topic}, partition {self.partition}"


@dataclass
class OffsetPlan:
    """The checked rows of a plan (refused ones marked), and the Kafka side of each group that commits there."""

    rows: list[PlannedWrite]
    kafka: dict[str, KafkaCommits]  # group -> its Kafka side, for groups that commit there

    @property
    def groups(self) -> list[str]:
        return sorted({row.group for row in self.rows})


def topic_layout(client: KazooClient, topics: Iterable[str]) -> dict[str, tuple[list[int], int | None]]:
    """topic -> (partitions under /brokers/topics, incarnation czxid); ([], None) for a missing topic."""
    return ClusterMetadata(client).topics(topics)


def describe_partitions(partitions: list[int]) -> str:
    if not partitions:
        return "none"
    if partitions == list(range(partitions[0], partitions[-1] + 1)):
        return f"{partitions[0]}-{partitions[-1]}" if len(partitions) > 1 else str(partitions[0])
    return ",".join(map(str, partitions))


def refusal(bad: list[str], total: int, *, clampable: bool) -> AdminUsageError:
    """The plan refused: each bad row a detail, then the summary; nothing was written."""
    hint = " Fix them, or pass --clamp to move the offsets into the log." if clampable else ""
    return AdminUsageError(
        f"refusing to write: {len(bad)} of {total} offsets are invalid (listed above); nothing was written.{hint}",
        details=bad,
    )


def structural_problems(wanted: list[WantedOffset], layout: Mapping[str, tuple[list[int], int | None]]) -> list[str]:
    """Rows whose topic or partition does not exist, and partitions given twice with different offsets."""
    bad = []
    seen: dict[tuple[str, str, int], WantedOffset] = {}
    for row in wanted:
        partitions, epoch = layout.get(row.topic, ([], None))
        if epoch is None:
            bad.append(f"{row.name()}: topic {row.topic} does not exist (no {znodes.topic_path(row.topic)})")
        elif row.partition not in partitions:
            bad.append(
                f"{row.name()}: topic {row.topic} has no partition {row.partition} "
                f"(its partitions: {describe_partitions(partitions)})"
            )
        first = seen.setdefault((row.group, row.topic, row.partition), row)
        if first is not row and first.offset != row.offset:
            bad.append(
                f"{row.name()}: offset {row.offset} conflicts with {first.source or 'an earlier row'} ({first.offset})"
            )
    return bad


def refuse_live_groups(client: KazooClient, groups: Iterable[str], force: bool, warn: Warn = log_warning) -> None:
    live = {g: member_count(client, g) for g in groups}
    live = {g: n for g, n in live.items() if n}
    if live and not force:
        names = ", ".join(f"{g} ({n} members)" for g, n in sorted(live.items()))
        raise AdminRefused(
            f"refusing to change offsets of groups with live members: {names}; stop the consumers "
            "first, or pass --force (partitions they own are still refused)"
        )
    for group, count in sorted(live.items()):
        warn(f"group {group} has {count} live members (--force): their partitions are refused, others are written")


def kafka_side(
    client: KazooClient,
    brokers: BrokerAccess,
    group: str,
    layout: Mapping[str, tuple[list[int], int | None]],
    zookeeper_only: bool,
    stack: contextlib.ExitStack,
    warn: Warn = log_warning,
) -> tuple[dict[TopicPartition, int], KafkaCommits | None]:
    """The group's Kafka-committed offsets for every partition of the topics in `layout` (empty: the
    group does not commit to Kafka, or --zookeeper-only), and the KafkaCommits to write them with."""
    if zookeeper_only:
        return {}, None
    commits = stack.enter_context(open_kafka_commits(client, brokers, group, warn=warn))
    keys = {(t, p) for t, (ps, _) in layout.items() for p in ps}
    return commits.committed(keys), commits


def describe_current(row: PlannedWrite, found: ZkOffsets) -> None:
    key = (row.topic, row.partition)
    if key in found.garbled:
        row.add_note(f"current value unreadable: {found.garbled[key]}")
    if key in found.stale:
        row.add_note(found.stale_note(key))
    if row.to_kafka:
        row.add_note("group commits to Kafka: written to both")


@admin_errors
def plan_writes(
    client: KazooClient,
    brokers: BrokerAccess,
    stack: contextlib.ExitStack,
    wanted: list[WantedOffset],
    *,
    target: Target | None = None,
    timestamp_ms: int | None = None,
    clamp_offsets: bool = False,
    force: bool = False,
    zookeeper_only: bool = False,
    warn: Warn = log_warning,
) -> OffsetPlan:
    """Check every wanted row against the cluster and plan it; AdminError (nothing written) if any is bad.

    `target` None: each row's own `offset` (import); else the reset target, computed per partition
    from the offset members resume from and the log (a --to-datetime/--by-duration: `timestamp_ms`).
    Order: rows that name no partition or hold a bad offset (a bad request), then live groups,
    then the reset targets against the log (a bad request). Warnings go to `warn`."""
    layout = topic_layout(client, {w.topic for w in wanted})
    unique = list({(w.group, w.topic, w.partition): w for w in reversed(wanted)}.values())[::-1]
    bad = structural_problems(wanted, layout)
    structural = bool(bad)
    checkable = [w for w in unique if w.partition in layout[w.topic][0]]
    log, times = _log_offsets(client, brokers, checkable, timestamp_ms, bad, len(unique), warn)
    found = {
        g: read_offsets(client, g, sorted({w.topic for w in checkable if w.group == g}))
        for g in sorted({w.group for w in checkable})
    }
    rows = []
    for w in checkable:
        row = PlannedWrite(
            w.group, w.topic, w.partition, found[w.group].valid.get(w.key), None, epoch=layout[w.topic][1]
        )
        row.log_start, row.log_end = log[w.key]
        rows.append(row)
    clamped: list[str] = []
    if target is None:
        for w, row in zip(checkable, rows):
            _settle(row, w, w.offset, None, clamp_offsets, bad, clamped)
    if bad:
        raise refusal(bad, len(unique), clampable=not structural)
    refuse_live_groups(client, sorted(found), force, warn)
    plan = _with_owners_and_kafka(client, brokers, stack, rows, found, layout, zookeeper_only, warn)
    if target is not None:
        for w, row in zip(checkable, rows):
            assert row.log_start is not None and row.log_end is not None
            new, note = reset_offset(target, row.effective, row.log_start, row.log_end, times.get(w.key))
            row.add_note(note)
            _settle(row, w, new, target, clamp_offsets, bad, clamped)
            if row.new is None:
                row.refused = None  # nothing to write: not refused either
        if bad:
            raise refusal(bad, len(unique), clampable=True)
    if clamped:
        warn(f"--clamp moved {len(clamped)} offsets into the log: {', '.join(clamped)} (see STATUS)")
    return plan


def _log_offsets(
    client: KazooClient,
    brokers: BrokerAccess,
    checkable: list[WantedOffset],
    timestamp_ms: int | None,
    bad: list[str],
    total: int,
    warn: Warn,
) -> tuple[dict[TopicPartition, tuple[int, int]], dict[TopicPartition, int]]:
    """(log start, log end) of every checkable partition, and the offsets at `timestamp_ms`; AdminError
    when the brokers cannot answer for all of them (after the rows in `bad`, if any)."""
    keys = sorted({w.key for w in checkable})
    if not keys:
        return {}, {}
    with open_watermarks(client, brokers, quiet=True, warn=warn) as marks:
        log = marks.offsets(keys)
        if not marks.available:
            if bad:
                raise refusal(bad, total, clampable=False)
            raise AdminUnavailable(f"cannot check the offsets against the log: {marks.reason}; nothing was written")
        unanswered = [k for k in keys if k not in log]
        if unanswered:
            reasons = [f"{t}-{p} ({marks.unanswered.get((t, p), 'no answer')})" for t, p in unanswered]
            if bad:
                raise refusal(
                    bad + [f"no log offsets from the brokers for {r}" for r in reasons], total, clampable=False
                )
            raise AdminUnavailable(
                f"cannot check {len(unanswered)} offsets against the log: the brokers did not answer for "
                f"{', '.join(reasons[:10])}; nothing was written"
            )
        times = marks.offsets_for_time(keys, timestamp_ms) if timestamp_ms is not None else {}
    return log, times


def _settle(
    row: PlannedWrite,
    w: WantedOffset,
    new: int | None,
    target: Target | None,
    clamp_offsets: bool,
    bad: list[str],
    clamped: list[str],
) -> None:
    """Set row.new to `new` if it lies in the log; else clamp it (--clamp) or add the row to `bad`."""
    assert row.log_start is not None and row.log_end is not None
    row.new = new
    if new is None or (problem := range_problem(new, row.log_start, row.log_end)) is None:
        return
    if clamp_offsets:
        row.new, note = clamp(new, row.log_start, row.log_end)
        row.add_note(note)
        clamped.append(f"{w.topic}-{w.partition} of {w.group}")
        return
    asked = "" if target is None else f" ({_target_flag(target)})"
    bad.append(f"{w.name()}: {problem.replace(f'offset {new}', f'offset {new}{asked}', 1)}")


def _target_flag(target: Target) -> str:
    flag = {"offset": "--to-offset", "shift": "--shift-by", "current": "--to-current"}.get(target.kind, target.kind)
    return f"{flag} {target.value}" if target.kind in ("offset", "shift") else flag


def _with_owners_and_kafka(
    client: KazooClient,
    brokers: BrokerAccess,
    stack: contextlib.ExitStack,
    rows: list[PlannedWrite],
    found: Mapping[str, ZkOffsets],
    layout: Mapping[str, tuple[list[int], int | None]],
    zookeeper_only: bool,
    warn: Warn,
) -> OffsetPlan:
    """Owner nodes refuse their partitions; a group that commits to Kafka gets both stores written."""
    kafka: dict[str, KafkaCommits] = {}
    for group in sorted({r.group for r in rows}):
        mine = [r for r in rows if r.group == group]
        topics = sorted({r.topic for r in mine})
        owners, _ = read_owners(client, group, topics)
        in_kafka, commits = kafka_side(
            client, brokers, group, {t: layout[t] for t in topics}, zookeeper_only, stack, warn
        )
        if in_kafka and commits is not None:
            kafka[group] = commits
        for row in mine:
            key = (row.topic, row.partition)
            row.kafka, row.to_kafka = in_kafka.get(key), bool(in_kafka)
            describe_current(row, found[group])
            if key in owners:
                row.refused = f"owned by {owners[key].thread_id}"
    return OffsetPlan(rows, kafka)
