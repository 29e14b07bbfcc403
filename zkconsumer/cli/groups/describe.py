"""`zkconsumer groups describe`: kafka-consumer-groups --zookeeper --describe and ConsumerOffsetChecker."""

from __future__ import annotations

from typing import TypeVar

import click

from zkconsumer.admin import BrokerAccess, GroupSnapshot, InputError, take_snapshot
from zkconsumer.admin import list_groups as group_names
from zkconsumer.cli.brokers import open_watermarks
from zkconsumer.cli.common import (
    EXIT_USAGE,
    CliError,
    emit_json,
    expected_errors,
    require_group,
    warn,
    zk_session,
)
from zkconsumer.cli.formats import parse_topic_specs
from zkconsumer.cli.options import bootstrap_option, json_option, zk_options
from zkconsumer.cli.output.render import TextTable, show

R = TypeVar("R")


@click.command("describe")
@zk_options
@click.option("--group", "-g", "groups", multiple=True, metavar="GROUP", help="Consumer group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Describe every group under /consumers.")
@click.option(
    "--topic",
    "-t",
    "topics",
    multiple=True,
    metavar="TOPIC[:PARTITIONS]",
    help="Only these topics (repeatable, or a,b as ConsumerOffsetChecker took them; t:0,1 for some "
    "partitions). Default: topics under owners/ and offsets/, and the members' subscriptions.",
)
@click.option("--members", "show_members", is_flag=True, help="Also list the members and their subscriptions.")
@bootstrap_option
@json_option
@expected_errors
def describe(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    groups: tuple[str, ...],
    all_groups: bool,
    topics: tuple[str, ...],
    show_members: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Show a group's offsets, lag and owners per partition, and flag problems.

    Columns: TOPIC, PARTITION, CURRENT-OFFSET (committed, in ZooKeeper), LOG-END-OFFSET, LAG, OWNER
    (the owner thread <consumer-id>-<n>) and PROBLEM, which names exactly what `zkconsumer verify`
    reports for the partition (`verify --help` lists the problems). Members that own nothing get
    their own row. With several groups (--group repeated, --all-groups) each gets its table; with
    --json each is one line.

    Exit status 0 when the group could be described (use `zkconsumer verify` for pass/fail),
    1 when it could not (unknown group, ZooKeeper unreachable).

    \b
    Examples:
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing --members --json | jq .total_lag
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing --topic orders,refunds
      zkconsumer groups describe --zookeeper zk:2181/kafka --all-groups
    """
    if all_groups == bool(groups):
        raise CliError("give --group (repeatable) or --all-groups", EXIT_USAGE)
    try:
        specs = dict(parse_topic_specs(topics))
    except InputError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    snapshots = []
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        names = group_names(client) if all_groups else sorted(set(groups))
        for group in [] if all_groups else names:
            require_group(client, group, zookeeper)
        with open_watermarks(client, brokers) as marks:
            for group in names:
                snapshot = take_snapshot(client, group, marks, topics=sorted(specs) or None)
                snapshot.partitions = [
                    r for r in snapshot.partitions if r.partition in (specs.get(r.topic) or [r.partition])
                ]
                snapshots.append(snapshot)
    for topic in sorted(specs):
        if not any(row.topic == topic for snapshot in snapshots for row in snapshot.partitions):
            warn(f"--topic {topic}: no such topic, and no group offsets or owners of it")
    if as_json:
        for snapshot in snapshots:
            emit_json(snapshot.as_dict())
        return
    tables = [table for snapshot in snapshots for table in describe_tables(snapshot, show_members)]
    if tables:
        show(*tables)


def describe_tables(snapshot: GroupSnapshot, show_members: bool) -> list[TextTable | str]:
    table = TextTable(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "OWNER", "PROBLEM"],
        title=f"Group {snapshot.group}: {len(snapshot.members)} members, total lag "
        f"{sum(r.lag or 0 for r in snapshot.partitions)}",
        right_aligned=frozenset({"PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"}),
    )
    for row in snapshot.partitions:
        table.add(
            [
                row.topic,
                row.partition,
                row.offset,
                row.log_end,
                row.lag,
                row.owner.thread_id if row.owner else None,
                ",".join(p.kind for p in row.problems) or "",
            ],
            style="red" if row.problems else None,
        )
    for member in snapshot.idle_members():  # not a problem (more threads than partitions): no PROBLEM
        table.add(["-", "-", "-", "-", "-", f"{member.consumer_id} (owns nothing)", ""], style="yellow")
    out: list[TextTable | str] = [table]
    if show_members:
        members = TextTable(
            ["CONSUMER-ID", "SUBSCRIPTION", "THREADS", "PARTITIONS", "REGISTERED", "SESSION"],
            title="Members",
            right_aligned=frozenset({"THREADS", "PARTITIONS"}),
        )
        for cid, member in sorted(snapshot.members.items()):
            members.add(
                [
                    cid,
                    member.subscription_text(),
                    sum(len(t) for t in member.threads.values()),
                    len(snapshot.owned_by(cid)),
                    member.registered_at(),
                    f"0x{member.session:x}",
                ],
                style="red" if member.error else None,
            )
        out.append(members)
    group_problems = snapshot.problems
    if group_problems:
        out.append("\n".join(f"PROBLEM {p.kind}: {p.detail}" for p in group_problems))
    return out
