"""`zkconsumer groups rebalance`: make every member of a group rebalance (Scala ones too), as a plan unless given --execute."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from zkconsumer.cli.common import (
    CliError,
    emit_json,
    expected_errors,
    require_group,
    session_identity,
    zk_session,
)
from zkconsumer.cli.options import execute_options, group_option, json_option, zk_options
from zkconsumer.cli.output.render import TextTable, show
from zkconsumer.errors import ZkConsumerError, ZooKeeperAccessDenied

if TYPE_CHECKING:
    from zkconsumer.admin import UnstickPlan, UnstickResult


@click.command("rebalance")
@zk_options
@group_option
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="With --execute: how long to wait for every partition to have an owner.",
)
@click.option(
    "--delete-persistent-owners",
    is_flag=True,
    help="Delete owner nodes no session holds (ephemeralOwner 0, e.g. restored by a ZooKeeper copy tool; "
    "they would block the group for good) before the nudge, each only if unchanged since the plan.",
)
@execute_options("Nudge the group and wait until every partition has an owner")
@json_option
@expected_errors
def rebalance(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    timeout: float,
    delete_persistent_owners: bool,
    execute: bool,
    as_json: bool,
) -> None:
    """Make every member of a group rebalance, Scala members included, without restarting any.
    THIS WRITES, but only with --execute (--dry-run, the default, prints the plan).

    A Scala member whose rebalance failed rebalance.max.retries times (ConsumerRebalanceFailedException)
    owns nothing until the group's membership changes. This command makes that change without
    changing anything: one ZooKeeper transaction creates a child of /consumers/<group>/ids and
    deletes it again. Every member's watch on the ids fires (Scala 0.8.2 to 1.1 and zkconsumer
    members alike), and each rebalances; no member ever sees the child. With --execute the command
    then waits until every partition of the members' topics has an owner and the owner nodes stay
    unchanged for 2 s, and prints how long that took.

    It refuses (exit status 1, nothing written) what would make the rebalance fail again: an owner
    node held by a session that is no registered member's, or a registration Scala members cannot
    read. Those nodes belong to live sessions, so they are never deleted: the message names each
    one and what to do. A group without members is refused too. An owner node no session holds
    (ephemeralOwner 0, e.g. restored by a ZooKeeper copy tool) would block it for good: it is
    refused too unless --delete-persistent-owners, which deletes such nodes (each only if
    unchanged since the plan) before the nudge.

    \b
    Examples:
      zkconsumer groups rebalance --zookeeper zk:2181/kafka --group billing            # the plan
      zkconsumer groups rebalance --zookeeper zk:2181/kafka --group billing --execute  # nudge, wait
    """
    # Imported here: the other `groups` commands (and `zkconsumer --help`) do not pay for it.
    from zkconsumer.admin import UnknownGroup, read_plan, unstick

    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        require_group(client, group, zookeeper)
        identity = f"this command ({session_identity(zk_digest)}) at {zookeeper}"
        try:
            plan = read_plan(
                client,
                group,
                request_timeout_s=zk_timeout,
                identity=identity,
                delete_persistent=delete_persistent_owners,
            )
            if plan.blockers or not execute:
                _finish(plan, None, as_json)
                return
            if not as_json:
                show(*plan_tables(plan))
            result = unstick(client, plan, timeout_s=timeout, request_timeout_s=zk_timeout, identity=identity)
        except UnknownGroup as exc:
            raise CliError(f"{exc} in ZooKeeper at {zookeeper}") from None
        except ZooKeeperAccessDenied as exc:
            raise CliError(
                f"{exc}; pass --zk-digest user:password (or --zk-jaas FILE, SASL) as an identity the "
                "ACL of the group's ids folder allows; nothing was written"
            ) from None
        except ZkConsumerError as exc:
            raise CliError(str(exc)) from None
    _finish(plan, result, as_json, shown=True)


def _finish(plan: UnstickPlan, result: UnstickResult | None, as_json: bool, shown: bool = False) -> None:
    if as_json:
        emit_json({"plan": plan.as_dict(), "result": None if result is None else result.as_dict()})
    elif not shown:
        show(*plan_tables(plan))
    if plan.blockers:
        for blocker in plan.blockers:
            click.echo(f"zkconsumer: error: {blocker.line()}", err=True)
        raise CliError(
            f"refusing to nudge group {plan.group}: {len(plan.blockers)} blockers (listed above) would make "
            "its members' rebalance fail again; nothing was written"
        )
    if result is None:
        if not as_json:
            click.echo(f"would nudge {plan.nudge_parent}: create and delete one child in one transaction")
        click.echo("Nothing was written. Re-run with --execute to make every member rebalance.", err=True)
        return
    if not as_json:
        show(*result_lines(plan, result))
    if result.owned_after_s is None:
        shown_unowned = ", ".join(f"{t}-{p}" for t, p in result.unowned[:20])
        raise CliError(
            f"after {result.waited_s:.1f} s, {len(result.unowned)} of {plan.partition_count} partitions still "
            f"have no owner: {shown_unowned}; check the members' logs (`zkconsumer groups describe --group "
            f"{plan.group} --members`)"
        )


def plan_tables(plan: UnstickPlan) -> list[TextTable | str]:
    table = TextTable(
        ["CONSUMER-ID", "KIND", "SESSION", "THREADS", "PARTITIONS"],
        right_aligned=frozenset({"THREADS", "PARTITIONS"}),
    )
    for cid, member in sorted(plan.members.items()):
        table.add(
            [
                cid,
                "zkconsumer" if member.zkconsumer else "scala",
                f"0x{member.session:x}",
                sum(member.threads.values()),
                plan.owned_by(cid),
            ],
            style="red" if member.problem else None,
        )
    unowned = plan.unowned
    out: list[TextTable | str] = [
        f"Group {plan.group}: {len(plan.members)} members, {plan.partition_count} partitions of "
        f"{len(plan.partitions)} topics, {len(unowned)} without an owner",
        table,
    ]
    if unowned:
        out.append("No owner: " + ", ".join(f"{t}-{p}" for t, p in unowned))
    idle = plan.idle_members() if unowned else []
    if idle:
        out.append("Owning nothing: " + ", ".join(idle))
    if plan.persistent_owners:
        out.append(
            "Persistent owner nodes deleted before the nudge: " + ", ".join(p for p, _v in plan.persistent_owners)
        )
    return out


def result_lines(plan: UnstickPlan, result: UnstickResult) -> list[str]:
    lines = [f"nudged {plan.nudge_parent} (created and deleted {result.nudged.rsplit('/', 1)[1]})"]
    if result.owned_after_s is not None:
        lines.append(
            f"every partition has an owner {result.owned_after_s:.2f} s after the nudge "
            f"({plan.partition_count} of {plan.partition_count}; owner nodes unchanged for "
            f"{result.waited_s - result.owned_after_s:.1f} s after)"
        )
    claimed = ", ".join(f"{cid} {n}" for cid, n in sorted(result.claimed.items())) or "none"
    lines.append(f"owner nodes created since the nudge: {claimed}")
    return lines
