"""`zkconsumer groups list`: kafka-consumer-groups --zookeeper --list, with each group's live members."""

from __future__ import annotations

import click

from zkconsumer.admin import AdminUsageError, member_count
from zkconsumer.admin import list_groups as group_names
from zkconsumer.cli.common import emit_json, expected_errors, zk_session
from zkconsumer.cli.options import json_option, zk_options
from zkconsumer.cli.output.render import TextTable, show


@click.command("list")
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
        names = group_names(client)
        counts = {}
        for name in names:
            try:
                counts[name] = member_count(client, name)
            except AdminUsageError:  # a child name that is no valid group segment cannot happen in ZK; be safe
                counts[name] = 0
    if as_json:
        emit_json([{"group": g, "members": counts[g]} for g in names])
        return
    table = TextTable(["GROUP", "MEMBERS"], right_aligned=frozenset({"MEMBERS"}))
    for name in names:
        table.add([name, counts[name]])
    show(table)
