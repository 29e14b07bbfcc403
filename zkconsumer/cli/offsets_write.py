"""`zkconsumer offsets import|reset`: the guarded offset writes (ImportZkOffsets, UpdateOffsetsInZK), plan first."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from typing import IO

import click
from kazoo.client import KazooClient

from zkconsumer.cli.brokers import BrokerAccess, open_watermarks
from zkconsumer.cli.committed import ZkOffsets, read_offsets
from zkconsumer.cli.common import (
    EXIT_PROBLEM,
    EXIT_USAGE,
    CliError,
    emit_json,
    expected_errors,
    group_option,
    json_option,
    member_count,
    require_group,
    warn,
    zk_options,
    zk_session,
)
from zkconsumer.cli.formats import (
    InputError,
    Target,
    parse_datetime,
    parse_export_json,
    parse_export_lines,
    parse_partitions,
    reset_offset,
)
from zkconsumer.cli.groups import bootstrap_option
from zkconsumer.cli.kafka_offsets import KafkaCommits, open_kafka_commits, zookeeper_only_option
from zkconsumer.cli.render import show
from zkconsumer.cli.snapshot import read_owners, read_partitions
from zkconsumer.cli.writer import PlannedWrite, echo_summary, plan_table
from zkconsumer.cli.writer import execute as execute_plan
from zkconsumer.zookeeper import znodes

TopicPartition = tuple[str, int]


# ---------------------------------------------------------------- import


@click.command("import")
@zk_options
@click.option(
    "--input",
    "-i",
    "input_file",
    required=True,
    type=click.File("r", encoding="utf-8"),
    help="File written by `offsets export` or the legacy ExportZkOffsets ('-' is stdin).",
)
@click.option("--json", "as_json", is_flag=True, help="The input is the --json export format.")
@click.option("--execute", is_flag=True, help="Write the offsets. Without it only the plan is printed.")
@click.option(
    "--force", is_flag=True, help="Proceed although a group has live members (owned partitions are still refused)."
)
@zookeeper_only_option
@bootstrap_option
@expected_errors
def import_(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    input_file: IO[str],  # click.File("r") opens it at once: a plain text file
    as_json: bool,
    execute: bool,
    force: bool,
    zookeeper_only: bool,
    brokers: BrokerAccess,
) -> None:
    """Write offsets from an export file (ImportZkOffsets). THIS WRITES, but only with --execute.

    Lines are `/consumers/<group>/offsets/<topic>/<partition>:<offset>`; reading stops at the first
    empty line, as the original did. Every line is checked before anything is written. Groups with
    registered members are refused unless --force; a partition that has an owner node is never
    written (its owner would overwrite the value at its next commit). A group that also commits
    offsets to Kafka gets the new offsets there too (see KAFKA-SIDE OFFSETS in `offsets --help`).

    A write failing midway (ZooKeeper lost, no permission) stops the import: the table then says
    which partitions were written and which were not, and the error follows on stderr.

    Exit status: 0 when everything planned was written (or, without --execute, could be), 1 when a
    partition was refused or not written, 2 for a bad file.

    \b
    Examples:
      zkconsumer offsets import --zookeeper zk:2181/kafka -i billing.offsets            # show the plan
      zkconsumer offsets import --zookeeper zk:2181/kafka -i billing.offsets --execute  # write it
    """
    text = input_file.read()
    try:
        entries = parse_export_json(text) if as_json else parse_export_lines(text)
    except InputError as exc:
        raise CliError(f"{getattr(input_file, 'name', 'input')}: {exc}", EXIT_USAGE) from None
    if not entries:
        raise CliError("the input holds no offsets", EXIT_USAGE)
    error = None
    with zk_session(zookeeper, zk_digest, zk_timeout) as client, contextlib.ExitStack() as stack:
        groups = sorted({e.group for e in entries})
        _refuse_live_groups(client, groups, force)
        plan: list[PlannedWrite] = []
        kafka: dict[str, KafkaCommits] = {}
        for group in groups:
            mine = [e for e in entries if e.group == group]
            topics = sorted({e.topic for e in mine})
            found = read_offsets(client, group, topics)
            owners, _ = read_owners(client, group, topics)
            in_kafka, commits = _kafka_side(client, brokers, group, topics, zookeeper_only, stack)
            if in_kafka and commits is not None:
                kafka[group] = commits
            for entry in mine:
                key = (entry.topic, entry.partition)
                row = PlannedWrite(
                    group,
                    entry.topic,
                    entry.partition,
                    found.valid.get(key),
                    entry.offset,
                    kafka=in_kafka.get(key),
                    to_kafka=bool(in_kafka),
                )
                _describe_current(row, found)
                if key in owners:
                    row.refused = f"owned by {owners[key].thread_id}"
                plan.append(row)
        if execute:
            error = execute_plan(client, plan, description="importing offsets", kafka=kafka)
    _finish(plan, execute, with_group=True, error=error)


def _refuse_live_groups(client: KazooClient, groups: Iterable[str], force: bool) -> None:
    live = {g: member_count(client, g) for g in groups}
    live = {g: n for g, n in live.items() if n}
    if live and not force:
        names = ", ".join(f"{g} ({n} members)" for g, n in sorted(live.items()))
        raise CliError(
            f"refusing to change offsets of groups with live members: {names}; stop the consumers "
            "first, or pass --force (partitions they own are still refused)"
        )
    for group, count in sorted(live.items()):
        warn(f"group {group} has {count} live members (--force): their partitions are refused, others are written")


def _kafka_side(
    client: KazooClient,
    brokers: BrokerAccess,
    group: str,
    topics: list[str],
    zookeeper_only: bool,
    stack: contextlib.ExitStack,
) -> tuple[dict[TopicPartition, int], KafkaCommits | None]:
    """The group's Kafka-committed offsets for every partition of `topics` (empty: the group does not
    commit to Kafka, or --zookeeper-only), and the KafkaCommits to write them with."""
    if zookeeper_only:
        return {}, None
    commits = stack.enter_context(open_kafka_commits(client, brokers, group))
    keys = {(t, p) for t, ps in read_partitions(client, topics).items() for p in ps}
    return commits.committed(keys), commits


def _describe_current(row: PlannedWrite, found: ZkOffsets) -> None:
    key = (row.topic, row.partition)
    if key in found.garbled:
        row.add_note(f"current value unreadable: {found.garbled[key]}")
    row.add_note(found.stale_note(key))
    if row.to_kafka:
        row.add_note(
            f"the group commits to Kafka (Kafka holds {'none' if row.kafka is None else row.kafka}): written to both"
        )


def _finish(
    plan: list[PlannedWrite],
    executed: bool,
    *,
    with_group: bool,
    as_json: bool = False,
    extra: dict[str, object] | None = None,
    error: str | None = None,
) -> None:
    if as_json:
        emit_json(
            {
                **(extra or {}),
                "executed": executed,
                "partitions": [row.as_dict() for row in plan],
                **({"error": error} if error else {}),
            }
        )
    else:
        show(plan_table(plan, with_group=with_group))
        echo_summary(plan, executed)
    if error is not None:
        first = next(row for row in plan if row.failed)
        raise CliError(
            f"writing {znodes.offset_path(first.group, first.topic, first.partition)} failed, "
            f"nothing written from there on: {error}"
        )
    if any(row.refused for row in plan):
        sys.exit(EXIT_PROBLEM)


# ---------------------------------------------------------------- reset


def _target(
    to_earliest: bool, to_latest: bool, to_offset: int | None, to_datetime: str | None, shift_by: int | None
) -> tuple[Target, int | None]:
    chosen = [
        name
        for name, given in (
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
            ("--to-offset", to_offset is not None),
            ("--to-datetime", to_datetime is not None),
            ("--shift-by", shift_by is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise CliError(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by"
            + (f" (got {', '.join(chosen)})" if chosen else ""),
            EXIT_USAGE,
        )
    if to_earliest:
        return Target("earliest"), None
    if to_latest:
        return Target("latest"), None
    if to_offset is not None:
        if to_offset < 0:
            raise CliError("--to-offset must be >= 0", EXIT_USAGE)
        return Target("offset", to_offset), None
    if shift_by is not None:
        return Target("shift", shift_by), None
    assert to_datetime is not None  # the one chosen
    try:
        return Target("datetime"), parse_datetime(to_datetime)
    except InputError as exc:
        raise CliError(f"--to-datetime: {exc}", EXIT_USAGE) from None


@click.command("reset")
@zk_options
@group_option
@click.option("--topic", "-t", required=True, metavar="TOPIC", help="The topic whose offsets to reset.")
@click.option("--to-earliest", is_flag=True, help="To the log start (the oldest retained message).")
@click.option("--to-latest", is_flag=True, help="To the log end (skip everything retained).")
@click.option("--to-offset", type=int, metavar="N", help="To offset N (clamped to the log).")
@click.option(
    "--to-datetime",
    metavar="ISO",
    help="To the first message at/after this time, e.g. 2024-05-01T12:00:00Z (no zone: local time).",
)
@click.option("--shift-by", type=int, metavar="N", help="Move the committed offset by N (negative: back).")
@click.option("--partitions", metavar="LIST", help="Only these partitions, e.g. 0,3,5-7 (default: all).")
@click.option("--execute", is_flag=True, help="Write the new offsets. Without it only the plan is printed.")
@click.option(
    "--force",
    is_flag=True,
    help="Proceed although the group has live members; partitions with an owner node are still refused.",
)
@zookeeper_only_option
@bootstrap_option
@json_option
@expected_errors
def reset(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    topic: str,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    partitions: str | None,
    execute: bool,
    force: bool,
    zookeeper_only: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Reset a group's committed offsets for one topic. THIS WRITES, but only with --execute.

    Prints the plan (old -> new per partition, every new offset clamped to [log start, log end]
    as read from the brokers). Refuses while the group has live members unless --force; even then
    a partition with an owner node is refused, because its owner would overwrite the new value at
    its next commit (the check and the write are one ZooKeeper transaction). A member that joins
    between the plan and the write may still start from the old offset: stop the group first.

    CURRENT-OFFSET is the offset a member resumes from: none where the node was committed before
    the topic was (re)created (members ignore it; --shift-by then has nothing to shift from). A
    group that also commits to Kafka is shifted from the larger of the two offsets and gets the
    new offsets in both (see KAFKA-SIDE OFFSETS in `offsets --help`).

    Exit status: 0 done (or planned), 1 a partition was refused or not written or the group is live,
    2 bad options.

    \b
    Examples:
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing -t orders --to-earliest
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing -t orders --shift-by -100 --partitions 0,3 --execute
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing -t orders --to-datetime 2024-05-01T00:00Z --execute
    """
    target, timestamp_ms = _target(to_earliest, to_latest, to_offset, to_datetime, shift_by)
    try:
        only = parse_partitions(partitions) if partitions else None
    except InputError as exc:
        raise CliError(f"--partitions: {exc}", EXIT_USAGE) from None
    with zk_session(zookeeper, zk_digest, zk_timeout) as client, contextlib.ExitStack() as stack:
        require_group(client, group, zookeeper)
        try:
            znodes.topic_path(topic)
        except ValueError:
            raise CliError(f"invalid topic name {topic!r}", EXIT_USAGE) from None
        known = read_partitions(client, [topic])[topic]
        if not known:
            raise CliError(f"no such topic {topic!r} (no partitions under /brokers/topics/{topic})")
        if only is not None:
            missing = sorted(set(only) - set(known))
            if missing:
                raise CliError(f"topic {topic!r} has no partition {missing[0]} (it has {len(known)})", EXIT_USAGE)
        chosen = only if only is not None else known
        _refuse_live_groups(client, [group], force)
        keys = [(topic, p) for p in chosen]
        found = read_offsets(client, group, [topic])
        owners, _ = read_owners(client, group, [topic])
        in_kafka, commits = _kafka_side(client, brokers, group, [topic], zookeeper_only, stack)
        with open_watermarks(client, brokers, quiet=True) as marks:
            log = marks.offsets(keys)
            if not marks.available or not log:
                raise CliError(f"cannot reset without the log offsets: {marks.reason or 'no broker answered'}")
            times = marks.offsets_for_time(keys, timestamp_ms) if timestamp_ms is not None else {}
        plan = []
        for key in keys:
            row = PlannedWrite(
                group, topic, key[1], found.valid.get(key), None, kafka=in_kafka.get(key), to_kafka=bool(in_kafka)
            )
            if key not in log:
                row.note = "no log offsets from the brokers"
            else:
                row.log_start, row.log_end = log[key]
                row.new, row.note = reset_offset(target, row.effective, row.log_start, row.log_end, times.get(key))
            _describe_current(row, found)
            if key in owners and row.new is not None:
                row.refused = f"owned by {owners[key].thread_id}"
            plan.append(row)
        error = None
        if execute:
            error = execute_plan(
                client, plan, description="resetting offsets", kafka={group: commits} if in_kafka and commits else {}
            )
    _finish(plan, execute, with_group=False, as_json=as_json, extra={"group": group, "topic": topic}, error=error)
