"""`zkconsumer migrate plan`: a group's ZooKeeper and broker sides, and what moving it would do."""

from __future__ import annotations

import click

from zkconsumer.admin import BrokerAccess, direction_plans, gather
from zkconsumer.cli.common import CliError, emit_json, expected_errors, warn, zk_session
from zkconsumer.cli.migrate.checks import EXIT_BLOCKED, checked_topics
from zkconsumer.cli.options import (
    bootstrap_option,
    group_option,
    json_option,
    topic_option,
    zk_options,
)
from zkconsumer.cli.output.migrate import (
    blocked_message,
    plan_document,
    plan_report,
)
from zkconsumer.cli.output.render import show
from zkconsumer.migration import DIRECTIONS, TO_KAFKA, Overrides, migration_step, partition_rows


@click.command("plan")
@zk_options
@group_option
@click.option(
    "--to",
    "target",
    type=click.Choice(DIRECTIONS),
    default=TO_KAFKA,
    show_default=True,
    help="The direction whose blockers decide the exit status (both are shown).",
)
@topic_option
@bootstrap_option
@json_option
@expected_errors
def plan(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    target: str,
    topics: tuple[str, ...],
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Show both sides of a group and what `migrate offsets` would do in each direction. Reads only.

    ZooKeeper side: registered members (kind zkconsumer when the member holds a zkconsumer
    marker, scala otherwise), owner nodes, committed offsets (offsets older than their topic
    count as none, as members treat them). Broker side: the group's state (Empty, Stable,
    PreparingRebalance, ...), its members and committed offsets. Per partition: both offsets,
    the log start/end, lag on both sides, and the action of each direction. Then the blockers of
    each direction with the flag that overrides each, and the step the group appears to be at
    (zookeeper-live, dual-commit-live, mixed, stopped, copied, kafka-live, no-offsets: a best
    guess from what both sides show; see `migrate --help` for the sequence).

    Exit status: 0 when the --to direction (kafka by default) has no blocker, 3 when it has one,
    1 for an error (ZooKeeper or the brokers unreachable, unknown group).

    \b
    Examples:
      zkconsumer migrate plan --zookeeper zk:2181/kafka --group billing
      zkconsumer migrate plan --zookeeper zk:2181/kafka --group billing --to zookeeper --json
    """
    wanted = checked_topics(topics)
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        evidence = gather(client, brokers, group, wanted, warn=warn)
    for note in evidence.notes:
        warn(note)
    plans = direction_plans(evidence, Overrides(), wanted)
    step = migration_step(evidence.zk, evidence.kafka, wanted)
    rows = partition_rows(evidence.zk, evidence.kafka, evidence.log, wanted, evidence.partitions)
    if as_json:
        emit_json(plan_document(group, step, evidence.zk, evidence.kafka, rows, plans, target))
    else:
        show(*plan_report(group, step, evidence.zk, evidence.kafka, rows, plans))
    if plans[target].blocked:
        raise CliError(blocked_message(plans[target]), EXIT_BLOCKED)
