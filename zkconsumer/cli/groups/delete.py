"""`zkconsumer groups delete`: kafka-consumer-groups --zookeeper --delete, as a plan unless given --execute."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from zkconsumer.admin import DeleteRefused, delete_fenced, has_topic_offsets, member_count, paths_to_delete
from zkconsumer.cli.common import (
    EXIT_USAGE,
    CliError,
    expected_errors,
    require_group,
    warn,
    zk_session,
)
from zkconsumer.cli.options import execute_options, zk_options
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children

P = ParamSpec("P")
R = TypeVar("R")


@click.command("delete")
@zk_options
@click.option(
    "--group",
    "-g",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="A group to delete (repeatable; all of it unless --topic).",
)
@click.option("--all-groups", is_flag=True, help="Every inactive group under /consumers (active ones are skipped).")
@click.option(
    "--topic",
    "-t",
    metavar="TOPIC",
    help="Delete only this topic's owners/ and offsets/ (with --group), or this topic's information from "
    "every inactive group (without --group).",
)
@execute_options("Delete")
@expected_errors
def delete(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    groups: tuple[str, ...],
    all_groups: bool,
    topic: str | None,
    execute: bool,
) -> None:
    """Delete inactive groups' ZooKeeper data (kafka-consumer-groups --zookeeper --delete). THIS WRITES
    (deletes), but only with --execute; without it, it prints what it would delete.

    It works only while a group has no registered members (/consumers/<group>/ids has no children);
    otherwise it fails with "... failed because its consumers are still active" and deletes nothing.
    The deletes are ZooKeeper transactions that fail as a whole if a member registers meanwhile: the
    command then stops with an error naming that member and leaves its nodes (registration, owner
    nodes, offsets) in place.

    \b
      --group G            deletes /consumers/G recursively
      --group G --topic T  deletes owners/T and offsets/T (all of /consumers/G if T is its only
                           topic under owners/)
      --topic T            does the above for every inactive group that has offsets/T
      --all-groups         deletes every inactive group (with --topic T: their T only)

    \b
    Examples:
      zkconsumer groups delete --zookeeper zk:2181/kafka --group old-billing            # the plan
      zkconsumer groups delete --zookeeper zk:2181/kafka --group old-billing --execute  # delete it
      zkconsumer groups delete --zookeeper zk:2181/kafka --topic retired-topic --execute
    """
    if not groups and topic is None and not all_groups:
        raise CliError("give --group, --topic or both (or --all-groups)", EXIT_USAGE)
    if groups and all_groups:
        raise CliError("--all-groups and --group disagree: give one", EXIT_USAGE)
    if topic is not None:
        try:
            znodes.topic_path(topic)
        except ValueError:
            raise CliError(f"invalid topic name {topic!r}", EXIT_USAGE) from None
    planned: list[tuple[str, list[str]]] = []
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        if groups:
            for group in sorted(set(groups)):
                require_group(client, group, zookeeper)
                if member_count(client, group):
                    raise CliError(
                        f"Delete for group '{group}' failed because its consumers are still active. Nothing was deleted."
                    )
            planned = [(g, _refused_as_cli_error(paths_to_delete, client, g, topic)) for g in sorted(set(groups))]
        else:
            for name in sorted(children(client, znodes.CONSUMERS)):
                if topic is not None and not has_topic_offsets(client, name, topic):
                    continue
                if member_count(client, name):
                    what = f"group '{name}'" + (f" topic '{topic}'" if topic else "")
                    warn(f"Delete for {what} skipped because its consumers are still active.")
                    continue
                planned.append((name, _refused_as_cli_error(paths_to_delete, client, name, topic)))
            if not planned:
                raise CliError(
                    f"no inactive group has offsets for topic {topic!r}" if topic else "no inactive group to delete"
                )
        if not execute:
            for _, paths in planned:
                for path in paths:
                    click.echo(f"would delete {path}")
            click.echo("Nothing was deleted. Re-run with --execute to delete.", err=True)
            return
        for group, paths in planned:
            for path in _refused_as_cli_error(delete_fenced, client, group, paths):
                click.echo(f"deleted {path}")


def _refused_as_cli_error(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    try:
        return fn(*args, **kwargs)
    except DeleteRefused as exc:
        raise CliError(str(exc)) from None
