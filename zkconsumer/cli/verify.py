"""`zkconsumer verify`: VerifyConsumerRebalance's ownership check plus zombie and duplicate detection."""

from __future__ import annotations

import sys

import click

from zkconsumer.admin import BrokerAccess, take_snapshot
from zkconsumer.cli.brokers import open_watermarks
from zkconsumer.cli.common import EXIT_PROBLEM, emit_json, expected_errors, require_group, zk_session
from zkconsumer.cli.options import bootstrap_option, group_option, json_option, zk_options


@click.command("verify")
@zk_options
@group_option
@click.option(
    "--include-internal-topics",
    is_flag=True,
    help="Count internal topics (__consumer_offsets...) matched by wildcard subscriptions, as the Scala "
    "tool did (members normally exclude them: exclude.internal.topics=true).",
)
@bootstrap_option
@json_option
@expected_errors
def verify(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    include_internal_topics: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Check that a group is correctly balanced and its offsets usable (VerifyConsumerRebalance, extended).

    It reports exactly what `groups describe` flags in its PROBLEM column. The last line is the
    Scala tool's sentence: "Rebalance operation successful !" when none of the first eight
    problems below (the balance ones) is found, "failed" otherwise; the offset problems after
    them are reported and fail the command too.

    \b
    Problems found:
      unowned                 a partition of a subscribed topic has no owner node
      owner-not-subscribed    the owner thread is not one its member subscribes with
      zombie-owner            the owner's consumer id is not registered under ids/
                              (a member that lost its registration but kept its session)
      owner-session-mismatch  owner node and member node belong to different ZooKeeper
                              sessions (two processes with one consumer.id)
      duplicate-member        one ZooKeeper session registered several members
      duplicate-subscription  a registration lists a topic twice
      bad-registration        a registration Scala members cannot parse (stalls every rebalance)
      bad-owner               an owner node whose data is no thread id
    \b
      offset-after-log-end    the committed offset lies beyond the partition's log end
      offset-before-log-start the committed offset lies before the log start (messages deleted)
      negative-offset         the committed offset is negative (members take it for none)
      bad-offset              an offset node that is no 64-bit decimal number
      offset-older-than-topic committed before the topic was (re)created: members ignore it
      unknown-partition       offsets/ or owners/ hold a partition the topic does not have
                              (a deleted topic, or a bad import)

    The log checks ask the brokers (--bootstrap-server, or their endpoints under /brokers/ids);
    without an answer they are skipped, which is said on stderr.

    A group in the middle of a rebalance may fail briefly; re-run to confirm.

    Exit status: 0 no problem, 1 problems found (or the group/ZooKeeper could not be read).

    \b
    Example:
      zkconsumer verify --zookeeper zk:2181/kafka --group billing && echo balanced
    """
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        require_group(client, group, zookeeper)
        with open_watermarks(client, brokers) as marks:
            snapshot = take_snapshot(client, group, marks, exclude_internal=not include_internal_topics)
    problems = snapshot.all_problems()
    owned = sum(1 for row in snapshot.partitions if row.owner is not None)
    if as_json:
        emit_json(
            {
                "group": group,
                "ok": not problems,
                "rebalanced": not snapshot.rebalance_problems(),
                "members": len(snapshot.members),
                "partitions": len(snapshot.partitions),
                "owned_partitions": owned,
                "problems": [p.as_dict() for p in problems],
            }
        )
    else:
        for problem in problems:
            where = (
                ""
                if problem.topic is None
                else (
                    f"[{problem.topic},{problem.partition}] "
                    if problem.partition is not None
                    else f"[{problem.topic}] "
                )
            )
            click.echo(f"{problem.kind}: {where}{problem.detail}")
        verdict = "failed" if snapshot.rebalance_problems() else "successful"
        click.echo(
            f"Rebalance operation {verdict} ! (group {group}: {len(snapshot.members)} members, "
            f"{owned} of {len(snapshot.partitions)} partitions owned, {len(problems)} problems)"
        )
    if problems:
        sys.exit(EXIT_PROBLEM)
