"""`zkconsumer migrate switch`: move a running group of zkconsumer members to broker coordination, or back, step by step (docs/live-switch.md)."""

from __future__ import annotations

import click

from zkconsumer.admin import SWITCH_TARGETS, BrokerAccess, run_switch
from zkconsumer.cli.common import CliError, emit_json, expected_errors, warn, zk_session
from zkconsumer.cli.migrate.checks import EXIT_BLOCKED
from zkconsumer.cli.options import bootstrap_servers_option, group_option, json_option, zk_options
from zkconsumer.cli.output.live_switch import switch_run_document, switch_run_error, switch_run_lines
from zkconsumer.cli.output.render import show


@click.command("switch")
@zk_options
@group_option
@click.option(
    "--to",
    "target",
    type=click.Choice(SWITCH_TARGETS),
    required=True,
    help="broker: on to the brokers' group coordinator; zookeeper: back (from any step).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait, in all, for the members to reach the steps; then exit 3 (run again to continue).",
)
@bootstrap_servers_option
@json_option
@expected_errors
def switch(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    target: str,
    timeout_s: float,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Move a running group to broker coordination, or back, a step at a time. THIS WRITES.

    It writes one node, /consumers/<group>/zkconsumer/switch, which the group's zkconsumer members
    follow. The steps: zookeeper, joining, handover, broker (docs/live-switch.md).

    Each step is written once `migrate plan`'s switch section would show no blocker for it, by
    compare-and-set on the node as read; the command re-reads the group every second while it
    waits. It refuses at once, naming them, while a member that cannot switch is registered
    (scala-member: a registration without a zkconsumer marker; old-member: a zkconsumer without
    the switch protocol), while a Spark ingest job of the group runs (spark-ingest), while the
    brokers' group has members that are not the group's
    (foreign-broker-member), or while Kafka holds offsets ahead of ZooKeeper's (kafka-ahead): a
    refusal before the first step writes nothing, and a step raced by such a registration is taken
    back. Killed or timed out half-way, the node stays at the last step written; run again, the
    command continues from it. --to zookeeper goes back from any step (refusing nothing: every
    member can run on ZooKeeper) and ends by deleting the node.

    Exit status: 0 at the --to step, 1 an error (ZooKeeper or the brokers unreachable, a switch
    node no zkconsumer wrote), 2 a usage error, 3 refused or still blocked at --timeout.

    \b
    Examples:
      zkconsumer migrate switch --zookeeper zk:2181/kafka --group billing --to broker
      zkconsumer migrate switch --zookeeper zk:2181/kafka --group billing --to zookeeper --json
    """
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        run = run_switch(
            client,
            brokers,
            group,
            target,
            timeout_s=timeout_s,
            on_event=lambda line: click.echo(f"zkconsumer: switch: {line}", err=True),
            warn=warn,
        )
    if as_json:
        emit_json(switch_run_document(run))
    else:
        show(*switch_run_lines(run))
    error = switch_run_error(run, timeout_s)
    if error is not None:
        raise CliError(error, EXIT_BLOCKED)
