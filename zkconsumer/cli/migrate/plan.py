"""`zkconsumer migrate plan`: a group's ZooKeeper and broker sides, and what moving it would do."""

from __future__ import annotations

import click

from zkconsumer.admin import BrokerAccess, direction_plans, gather, live_switch_plan
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
    switch_dict,
    switch_lines,
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

    A group with a live switch node (/consumers/<group>/zkconsumer/switch, docs/live-switch.md)
    also shows the switch's step (zookeeper, joining, handover, broker), the next one and every
    blocker of it, naming the members or partitions (JSON: `switch`); a group without one shows
    nothing of it. The exit status does not depend on the switch.

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
        switch = live_switch_plan(client, evidence)
    for note in evidence.notes:
        warn(note)
    plans = direction_plans(evidence, Overrides(), wanted)
    step = migration_step(evidence.zk, evidence.kafka, wanted)
    rows = partition_rows(evidence.zk, evidence.kafka, evidence.log, wanted, evidence.partitions)
    if as_json:
        document = plan_document(group, step, evidence.zk, evidence.kafka, rows, plans, target)
        emit_json(document if switch is None else {**document, "switch": switch_dict(switch)})
    else:
        show(
            *plan_report(group, step, evidence.zk, evidence.kafka, rows, plans),
            *([] if switch is None else switch_lines(switch)),
        )
    if plans[target].blocked:
        raise CliError(blocked_message(plans[target]), EXIT_BLOCKED)
