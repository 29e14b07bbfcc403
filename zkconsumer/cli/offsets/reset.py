"""`zkconsumer offsets reset`: kafka-consumer-groups --reset-offsets (and UpdateOffsetsInZK) on ZooKeeper groups, plan first."""

from __future__ import annotations

import contextlib
import time

import click
from kazoo.client import KazooClient

from zkconsumer.admin.offset_files import InputError
from zkconsumer.admin.offset_targets import Target, parse_datetime, parse_duration
from zkconsumer.cli.brokers import BrokerAccess
from zkconsumer.cli.common import EXIT_USAGE, CliError, children, expected_errors, require_group, warn, zk_session
from zkconsumer.cli.formats import parse_partitions, parse_topic_specs
from zkconsumer.cli.offsets_plan import Wanted, plan_writes, topic_layout
from zkconsumer.cli.options import (
    bootstrap_option,
    clamp_option,
    execute_options,
    json_option,
    zk_options,
    zookeeper_only_option,
)
from zkconsumer.cli.output.plans import execute_plan, finish
from zkconsumer.zookeeper import znodes

TARGETS = "--to-earliest, --to-latest, --to-current, --to-offset, --to-datetime, --by-duration, --shift-by"


def _target(
    to_earliest: bool,
    to_latest: bool,
    to_current: bool,
    to_offset: int | None,
    to_datetime: str | None,
    by_duration: str | None,
    shift_by: int | None,
) -> tuple[Target, int | None]:
    """The one reset target given, and the moment in epoch ms of a time target."""
    chosen = [
        name
        for name, given in (
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
            ("--to-current", to_current),
            ("--to-offset", to_offset is not None),
            ("--to-datetime", to_datetime is not None),
            ("--by-duration", by_duration is not None),
            ("--shift-by", shift_by is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise CliError(f"give exactly one of {TARGETS}" + (f" (got {', '.join(chosen)})" if chosen else ""), EXIT_USAGE)
    simple = {"--to-earliest": "earliest", "--to-latest": "latest", "--to-current": "current"}
    if chosen[0] in simple:
        return Target(simple[chosen[0]]), None
    if to_offset is not None:
        if to_offset < 0:
            raise CliError(f"--to-offset {to_offset}: an offset is >= 0", EXIT_USAGE)
        return Target("offset", to_offset), None
    if shift_by is not None:
        return Target("shift", shift_by), None
    try:
        if by_duration is not None:
            return Target("datetime"), int(time.time() * 1000) - parse_duration(by_duration)
        assert to_datetime is not None  # the one chosen
        return Target("datetime"), parse_datetime(to_datetime)
    except InputError as exc:
        raise CliError(f"{chosen[0]}: {exc}", EXIT_USAGE) from None


def _groups(client: KazooClient, zookeeper: str, groups: tuple[str, ...], all_groups: bool) -> list[str]:
    if all_groups == bool(groups):
        raise CliError("give --group (repeatable) or --all-groups", EXIT_USAGE)
    if all_groups:
        names = sorted(children(client, znodes.CONSUMERS))
        if not names:
            raise CliError(f"no groups under {znodes.CONSUMERS}")
        return names
    for group in groups:
        require_group(client, group, zookeeper)
    return sorted(set(groups))


def _group_topics(client: KazooClient, group: str) -> set[str]:
    return set(children(client, znodes.offsets_path(group))) | set(children(client, znodes.owners_path(group)))


def _wanted(
    client: KazooClient, groups: list[str], specs: list[tuple[str, list[int] | None]] | None, all_groups: bool
) -> list[Wanted]:
    """The partitions to reset: the --topic specs of every group (with --all-groups: of the groups
    that have them), or with --all-topics each group's topics that exist."""
    mine = {g: _group_topics(client, g) for g in groups}
    topics = {t for t, _ in specs} if specs is not None else set().union(*mine.values())
    layout = topic_layout(client, topics)
    if specs is not None:
        for topic, _ in specs:
            if layout[topic][1] is None:
                raise CliError(
                    f"no such topic {topic!r} (no {znodes.topic_path(topic)}); nothing was written", EXIT_USAGE
                )
    wanted = []
    for group in groups:
        if specs is None:
            gone = sorted(t for t in mine[group] if layout[t][1] is None)
            if gone:
                warn(f"--all-topics: left out {', '.join(gone)} of group {group}: no such topic under /brokers/topics")
            chosen: list[tuple[str, list[int] | None]] = [(t, None) for t in sorted(mine[group]) if t not in gone]
        else:
            chosen = [(t, ps) for t, ps in specs if not all_groups or t in mine[group]]
        for topic, partitions in chosen:
            for partition in partitions if partitions is not None else layout[topic][0]:
                wanted.append(Wanted(group, topic, partition))
    if not wanted:
        raise CliError(
            "no partition to reset: "
            + ("no group has offsets of those topics" if specs else "the groups have no topics")
        )
    return wanted


@click.command("reset")
@zk_options
@click.option("--group", "-g", "groups", multiple=True, metavar="GROUP", help="The group to reset (repeatable).")
@click.option("--all-groups", is_flag=True, help="Every group under /consumers (with --topic: those that have it).")
@click.option(
    "--topic",
    "-t",
    "topics",
    multiple=True,
    metavar="TOPIC[:PARTITIONS]",
    help="A topic to reset (repeatable; a,b for several), all its partitions or those listed: orders:0,1,5-7.",
)
@click.option("--all-topics", is_flag=True, help="Every topic the group has offsets or owners of.")
@click.option("--partitions", metavar="LIST", help="Only these partitions of the one --topic, e.g. 0,3,5-7.")
@click.option("--to-earliest", is_flag=True, help="To the log start (the oldest retained message).")
@click.option("--to-latest", is_flag=True, help="To the log end (skip everything retained).")
@click.option("--to-current", is_flag=True, help="To the offset members resume from (none: the log end).")
@click.option("--to-offset", type=int, metavar="N", help="To offset N.")
@click.option(
    "--to-datetime",
    metavar="ISO",
    help="To the first message at/after this time, e.g. 2024-05-01T12:00:00Z (no zone: local time).",
)
@click.option(
    "--by-duration", metavar="DURATION", help="To the first message of this long ago: PT1H, P1DT6H (ISO 8601)."
)
@click.option("--shift-by", type=int, metavar="N", help="Move the offset members resume from by N (negative: back).")
@execute_options("Write the new offsets")
@click.option(
    "--export",
    "export_csv",
    is_flag=True,
    help="Print the new offsets as kafka-consumer-groups --export does (CSV topic,partition,offset; with "
    "several groups group,topic,partition,offset), instead of the table; `offsets import --format csv` reads it.",
)
@clamp_option
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
    groups: tuple[str, ...],
    all_groups: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    partitions: str | None,
    to_earliest: bool,
    to_latest: bool,
    to_current: bool,
    to_offset: int | None,
    to_datetime: str | None,
    by_duration: str | None,
    shift_by: int | None,
    execute: bool,
    export_csv: bool,
    clamp_offsets: bool,
    force: bool,
    zookeeper_only: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Reset committed offsets (kafka-consumer-groups --reset-offsets). THIS WRITES, but only with --execute.

    Prints the plan (old -> new per partition, with the log start and end the brokers report).
    Every new offset must lie in [log start, log end]: a --to-offset or --shift-by (or --to-current
    of an offset outside the log) that leaves it refuses the whole command, each such partition
    named on stderr, nothing written; --clamp moves those offsets to the nearer end instead, and
    says which. Refuses while the group has live members unless --force; even then a partition
    with an owner node is refused, because its owner would overwrite the new value at its next
    commit (the check and the write are one ZooKeeper transaction). A member that joins between
    the plan and the write may still start from the old offset: stop the group first.

    CURRENT-OFFSET is the offset a member resumes from: none where the node was committed before
    the topic was (re)created (members ignore it; --shift-by then has nothing to shift from). A
    group that also commits to Kafka is shifted from the larger of the two offsets and gets the
    new offsets in both (see KAFKA-SIDE OFFSETS in `offsets --help`).

    Exit status: 0 done (or planned), 1 a partition was refused or not written or the group is live,
    2 bad options or an offset outside the log (nothing written).

    \b
    Examples:
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing -t orders --to-earliest
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing -t orders:0,3 --shift-by -100 --execute
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing --all-topics --by-duration PT1H --execute
      zkconsumer offsets reset --zookeeper zk:2181/kafka -g billing -t orders --to-current --export > billing.csv
    """
    target, timestamp_ms = _target(to_earliest, to_latest, to_current, to_offset, to_datetime, by_duration, shift_by)
    if export_csv and as_json:
        raise CliError("--export and --json are two outputs: give one", EXIT_USAGE)
    if all_topics == bool(topics):
        raise CliError("give --topic (repeatable) or --all-topics", EXIT_USAGE)
    try:
        specs = parse_topic_specs(topics) if topics else None
        if partitions is not None:
            if specs is None or len(specs) != 1 or specs[0][1] is not None:
                raise InputError("--partitions goes with exactly one --topic that lists no partitions (or use t:0,1)")
            specs = [(specs[0][0], parse_partitions(partitions))]
    except InputError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    error = None
    with zk_session(zookeeper, zk_digest, zk_timeout) as client, contextlib.ExitStack() as stack:
        names = _groups(client, zookeeper, groups, all_groups)
        wanted = _wanted(client, names, specs, all_groups)
        plan = plan_writes(
            client,
            brokers,
            stack,
            wanted,
            target=target,
            timestamp_ms=timestamp_ms,
            clamp_offsets=clamp_offsets,
            force=force,
            zookeeper_only=zookeeper_only,
        )
        if execute:
            error = execute_plan(client, plan.rows, description="resetting offsets", kafka=plan.kafka)
    planned = sorted({r.topic for r in plan.rows})
    extra: dict[str, object] = {"groups": plan.groups, "topics": planned}
    if len(plan.groups) == 1:
        extra["group"] = plan.groups[0]
    if len(planned) == 1:
        extra["topic"] = planned[0]
    finish(
        plan.rows,
        execute,
        with_group=len(plan.groups) > 1,
        as_json=as_json,
        export_csv=export_csv,
        extra=extra,
        error=error,
    )
