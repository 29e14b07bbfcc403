"""`zkconsumer offsets reset`: kafka-consumer-groups --reset-offsets (and UpdateOffsetsInZK) on ZooKeeper groups, plan first."""

from __future__ import annotations

import contextlib

import click
from kazoo.client import KazooClient

from zkconsumer.admin import plan_writes, reset_scope
from zkconsumer.cli.common import EXIT_USAGE, CliError, expected_errors, require_group, warn, zk_session
from zkconsumer.cli.offsets.reset_request import ResetRequest
from zkconsumer.cli.options import (
    as_request,
    bootstrap_option,
    clamp_option,
    execute_options,
    json_option,
    zk_options,
    zookeeper_only_option,
)
from zkconsumer.cli.output.plans import execute_plan, finish
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children


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
@as_request(ResetRequest)
def reset(request: ResetRequest) -> None:
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
    target, timestamp_ms = request.target()
    specs = request.topic_specs()
    error = None
    with (
        zk_session(request.zookeeper, request.zk_digest, request.zk_timeout) as client,
        contextlib.ExitStack() as stack,
    ):
        names = _groups(client, request.zookeeper, request.groups, request.all_groups)
        wanted = reset_scope(client, names, specs, request.all_groups, warn=warn)
        plan = plan_writes(
            client,
            request.brokers,
            stack,
            wanted,
            target=target,
            timestamp_ms=timestamp_ms,
            clamp_offsets=request.clamp_offsets,
            force=request.force,
            zookeeper_only=request.zookeeper_only,
            warn=warn,
        )
        if request.execute:
            error = execute_plan(client, plan.rows, description="resetting offsets", kafka=plan.kafka)
    planned = sorted({r.topic for r in plan.rows})
    extra: dict[str, object] = {"groups": plan.groups, "topics": planned}
    if len(plan.groups) == 1:
        extra["group"] = plan.groups[0]
    if len(planned) == 1:
        extra["topic"] = planned[0]
    finish(
        plan.rows,
        request.execute,
        with_group=len(plan.groups) > 1,
        as_json=request.as_json,
        export_csv=request.export_csv,
        extra=extra,
        error=error,
    )
