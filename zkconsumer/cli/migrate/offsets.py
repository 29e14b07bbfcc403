"""`zkconsumer migrate offsets`: copy a group's committed offsets ZooKeeper <-> brokers (a plan unless --execute)."""

from __future__ import annotations

import click

from zkconsumer.admin import BrokerAccess, copy_offsets, gather
from zkconsumer.cli.common import (
    CliError,
    emit_json,
    expected_error_message,
    expected_errors,
    warn,
    zk_session,
)
from zkconsumer.cli.migrate.checks import EXIT_BLOCKED, checked_topics
from zkconsumer.cli.options import (
    bootstrap_option,
    execute_options,
    group_option,
    json_option,
    topic_option,
    zk_options,
)
from zkconsumer.cli.output.migrate import (
    blocked_message,
    offsets_document,
    offsets_report,
    summary,
)
from zkconsumer.cli.output.progress import progress
from zkconsumer.cli.output.render import show
from zkconsumer.migration import DIRECTIONS, TO_KAFKA, Overrides, migration_step, plan_direction


@click.command("offsets")
@zk_options
@group_option
@click.option(
    "--to",
    "target",
    type=click.Choice(DIRECTIONS),
    required=True,
    help="The store to copy into: kafka (the brokers') or zookeeper (rollback).",
)
@execute_options("Write the offsets")
@click.option(
    "--allow-rewind",
    is_flag=True,
    help="Also copy offsets that move the target backwards (re-delivers what the target side had consumed).",
)
@click.option(
    "--force-live-target",
    is_flag=True,
    help="Proceed although the target side has live members (ZooKeeper: registered members, a Spark "
    "ingest job; brokers: the group is not Empty, and the broker will still refuse). Owned "
    "ZooKeeper partitions are never written.",
)
@click.option(
    "--force-live-source",
    is_flag=True,
    help="Proceed although the source side still runs (members, owner nodes, ingest job, a non-Empty "
    "broker group): the copy is a snapshot its members move past (duplicates, no loss).",
)
@click.option(
    "--clamp-to-log-end",
    is_flag=True,
    help="Copy source offsets beyond the log end as the log end "
    "(instead of refusing). Right for a truncated log; for a "
    "re-created topic it skips the new log: reset those "
    "partitions to the earliest offset instead.",
)
@topic_option
@bootstrap_option
@json_option
@expected_errors
def offsets(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    target: str,
    execute: bool,
    allow_rewind: bool,
    force_live_target: bool,
    force_live_source: bool,
    clamp_to_log_end: bool,
    topics: tuple[str, ...],
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Copy a group's committed offsets into the other store. THIS WRITES, but only with --execute.

    --to kafka copies ZooKeeper's offsets into the broker group (AdminClient
    alter_consumer_group_offsets); --to zookeeper copies the broker group's into
    /consumers/<group>/offsets (the guarded writer: one transaction per partition that fails if an
    owner node exists). A blocker (listed with the flag overriding it) stops the whole copy before
    any write; see `migrate --help`. Per partition the ACTION is one of:

    \b
      copy                    the source is ahead: copied
      source-only             the target has no offset: copied
      clamp                   the source is outside the log: copied, clamped into it
      rewind                  the target is ahead: copied, only with --allow-rewind
      already-equal           nothing to do
      target-only-keep        the source has no offset: the target's stays
      refuse-rewind           the target is ahead (a blocker)
      refuse-out-of-range     the source is beyond the log end (a blocker)
      refuse-owned            the ZooKeeper partition has an owner node (a blocker)
      skip-unknown-partition  the brokers have no such partition: not copied

    With --execute every written offset is read back; partitions that do not read back as written
    are named in the error. Running it again writes nothing when the stores agree.

    Exit status: 0 done (or, without --execute, nothing blocks), 1 a write was refused, failed or
    did not read back, 2 bad options, 3 blocked (nothing written).

    \b
    Examples:
      zkconsumer migrate offsets --zookeeper zk:2181/kafka -g billing --to kafka
      zkconsumer migrate offsets --zookeeper zk:2181/kafka -g billing --to kafka --execute
      zkconsumer migrate offsets --zookeeper zk:2181/kafka -g billing --to zookeeper --execute --json
    """
    wanted = checked_topics(topics)
    overrides = Overrides(
        allow_rewind=allow_rewind,
        force_live_target=force_live_target,
        force_live_source=force_live_source,
        clamp_to_log_end=clamp_to_log_end,
    )
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        evidence = gather(client, brokers, group, wanted, warn=warn)
        for note in evidence.notes:
            warn(note)
        if target == TO_KAFKA and evidence.garbled:  # their partitions would silently start elsewhere
            raise CliError(
                f"cannot copy group {group}'s offsets to Kafka: {len(evidence.garbled)} ZooKeeper offset "
                f"node(s) cannot be decoded ({', '.join(evidence.garbled[:5])}); fix them first, e.g. with "
                "`zkconsumer offsets reset ... --execute`"
            )
        chosen = plan_direction(
            evidence.zk, evidence.kafka, evidence.log, target, overrides, wanted, evidence.partitions
        )
        step = migration_step(evidence.zk, evidence.kafka, wanted)
        for blocker in chosen.overridden:
            warn(f"{blocker.code} overridden by {blocker.override}: {blocker.message}")
        outcome = None
        if execute and not chosen.blocked:
            outcome = copy_offsets(client, evidence, chosen, explain=expected_error_message, progress=progress)
    executed = outcome is not None
    statuses = outcome.statuses if outcome is not None else {}
    error = outcome.error if outcome is not None else None
    if as_json:
        emit_json(offsets_document(chosen, step, statuses, executed, error))
    else:
        show(*offsets_report(chosen, step, statuses, executed))
    if chosen.blocked:
        raise CliError(blocked_message(chosen), EXIT_BLOCKED)
    if error is not None:
        raise CliError(error)
    click.echo(summary(chosen, executed), err=True)
