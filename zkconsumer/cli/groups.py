"""`zkconsumer groups list|describe|delete`: ConsumerGroupCommand --zookeeper and ConsumerOffsetChecker."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click
from kazoo.client import KazooClient

from zkconsumer.cli.brokers import BrokerAccess, open_watermarks
from zkconsumer.cli.common import (
    EXIT_USAGE,
    CliError,
    children,
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
from zkconsumer.cli.group_delete import delete_fenced
from zkconsumer.cli.render import TextTable, show
from zkconsumer.cli.snapshot import GroupSnapshot, take_snapshot
from zkconsumer.zookeeper import znodes

R = TypeVar("R")


@click.group("groups")
def groups() -> None:
    """List, describe and delete consumer groups kept in ZooKeeper (/consumers/<group>).

    \b
    Examples:
      zkconsumer groups list --zookeeper zk:2181/kafka
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing --members
      zkconsumer groups delete --zookeeper zk:2181/kafka --group old-billing
    """


@groups.command("list")
@zk_options
@json_option
@expected_errors
def list_groups(zookeeper: str, zk_digest: str | None, zk_timeout: float, as_json: bool) -> None:
    """List every group under /consumers with its number of live members.

    A group stays listed after its members are gone (its offsets are persistent); `groups delete`
    removes it.

    \b
    Example:
      zkconsumer groups list --zookeeper zk:2181/kafka --json
    """
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        names = sorted(children(client, znodes.CONSUMERS))
        if not names and client.exists(znodes.CONSUMERS) is None and client.exists(znodes.BROKER_IDS) is None:
            warn(f"neither /consumers nor /brokers exists at {zookeeper}: wrong chroot?")
        counts = {}
        for name in names:
            try:
                counts[name] = member_count(client, name)
            except ValueError:  # a child name that is no valid group segment cannot happen in ZK; be safe
                counts[name] = 0
    if as_json:
        emit_json([{"group": g, "members": counts[g]} for g in names])
        return
    table = TextTable(["GROUP", "MEMBERS"], right_aligned=frozenset({"MEMBERS"}))
    for name in names:
        table.add([name, counts[name]])
    show(table)


def bootstrap_option(fn: Callable[..., R]) -> Callable[..., R]:
    """--bootstrap-server, --command-config and --broker-listener, handed to the command as one
    `brokers` (a BrokerAccess)."""

    @functools.wraps(fn)
    def command(
        *args: Any, bootstrap_server: str | None, command_config: str | None, broker_listener: str | None, **kwargs: Any
    ) -> R:
        return fn(*args, brokers=BrokerAccess.from_options(bootstrap_server, command_config, broker_listener), **kwargs)

    decorated = click.option(
        "--broker-listener",
        metavar="NAME",
        help="Reach brokers through this listener of theirs (default: the first endpoint "
        "speaking the --command-config security.protocol, PLAINTEXT).",
    )(command)
    decorated = click.option(
        "--command-config",
        type=click.Path(exists=True, dir_okay=False),
        metavar="FILE",
        help="librdkafka settings for the broker connections (security.protocol, ssl.*, "
        "sasl.*), one name=value per line.",
    )(decorated)
    return click.option(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="Brokers for log offsets (default: their endpoints under /brokers/ids).",
    )(decorated)


@groups.command("describe")
@zk_options
@group_option
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Only these topics (repeatable). Default: topics under owners/ and offsets/, and the members' subscriptions.",
)
@click.option("--members", "show_members", is_flag=True, help="Also list the members and their subscriptions.")
@bootstrap_option
@json_option
@expected_errors
def describe(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    topics: tuple[str, ...],
    show_members: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Show a group's offsets, lag and owners per partition, and flag problems.

    Columns: TOPIC, PARTITION, CURRENT-OFFSET (committed, in ZooKeeper), LOG-END-OFFSET, LAG, OWNER
    (the owner thread <consumer-id>-<n>) and PROBLEM. Members that own nothing get their own row.
    Problems flagged: unowned (members subscribe to the topic but nobody owns the partition),
    zombie-owner (the owner's consumer id is not registered), owner-not-subscribed,
    owner-session-mismatch (duplicate consumer id), offset-after-log-end, offset-before-log-start,
    bad-offset, offset-older-than-topic (committed before the topic was re-created: members ignore
    it), unknown-partition, and unreadable registrations.

    Exit status 0 when the group could be described (use `zkconsumer verify` for pass/fail),
    1 when it could not (unknown group, ZooKeeper unreachable).

    \b
    Examples:
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing
      zkconsumer groups describe --zookeeper zk:2181/kafka --group billing --members --json | jq .total_lag
    """
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        require_group(client, group, zookeeper)
        with open_watermarks(client, brokers) as marks:
            snapshot = take_snapshot(client, group, marks, topics=topics or None)
    if as_json:
        emit_json(snapshot.as_dict())
        return
    show(*describe_tables(snapshot, show_members))


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
    for member in snapshot.idle_members():
        table.add(["-", "-", "-", "-", "-", member.consumer_id, "owns nothing"], style="yellow")
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


@groups.command("delete")
@zk_options
@click.option("--group", "-g", "group", metavar="GROUP", help="The group to delete (all of it unless --topic).")
@click.option(
    "--topic",
    metavar="TOPIC",
    help="Delete only this topic's owners/ and offsets/ (with --group), or this topic's information from "
    "every inactive group (without --group).",
)
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted.")
@expected_errors
def delete(
    zookeeper: str, zk_digest: str | None, zk_timeout: float, group: str | None, topic: str | None, dry_run: bool
) -> None:
    """Delete an inactive group's ZooKeeper data (ConsumerGroupCommand --zookeeper --delete).

    This WRITES (deletes) at once, like the original tool. It works only while the group has no
    registered members (/consumers/<group>/ids has no children); otherwise it fails with
    "... failed because its consumers are still active". The deletes are ZooKeeper transactions
    that fail as a whole if a member registers meanwhile: the command then stops with an error
    naming that member and leaves its nodes (registration, owner nodes, offsets) in place.

    \b
      --group G            deletes /consumers/G recursively
      --group G --topic T  deletes owners/T and offsets/T (all of /consumers/G if T is its only
                           topic under owners/)
      --topic T            does the above for every inactive group that has offsets/T

    \b
    Examples:
      zkconsumer groups delete --zookeeper zk:2181/kafka --group old-billing
      zkconsumer groups delete --zookeeper zk:2181/kafka --topic retired-topic --dry-run
    """
    if group is None and topic is None:
        raise CliError("give --group, --topic or both", EXIT_USAGE)
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        if group is not None:
            require_group(client, group, zookeeper)
            if member_count(client, group):
                raise CliError(f"Delete for group '{group}' failed because its consumers are still active.")
            _delete(client, group, _paths_to_delete(client, group, topic), dry_run)
            return
        assert topic is not None
        deleted_any = False
        for name in sorted(children(client, znodes.CONSUMERS)):
            if client.exists(znodes.offsets_path(name, topic)) is None:
                continue
            if member_count(client, name):
                warn(f"Delete for group '{name}' topic '{topic}' skipped because its consumers are still active.")
                continue
            _delete(client, name, _paths_to_delete(client, name, topic), dry_run)
            deleted_any = True
        if not deleted_any:
            raise CliError(f"no inactive group has offsets for topic {topic!r}")


def _paths_to_delete(client: KazooClient, group: str, topic: str | None) -> list[str]:
    if topic is None or children(client, znodes.owners_path(group)) == [topic]:
        return [znodes.group_path(group)]
    paths = [znodes.owners_path(group, topic), znodes.offsets_path(group, topic)]
    if not any(client.exists(p) for p in paths):
        raise CliError(f"group {group!r} has no information for topic {topic!r}")
    return paths


def _delete(client: KazooClient, group: str, paths: list[str], dry_run: bool) -> None:
    if dry_run:
        for path in paths:
            click.echo(f"would delete {path}")
        return
    for path in delete_fenced(client, group, paths):
        click.echo(f"deleted {path}")
