"""`zkconsumer migrate plan|offsets`: move a group between ZooKeeper and broker coordination (and back)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from zkconsumer.cli.brokers import BrokerAccess
from zkconsumer.cli.common import EXIT_USAGE, CliError, emit_json, expected_errors, warn, zk_session
from zkconsumer.cli.migrate_io import Evidence, gather
from zkconsumer.cli.migrate_io import execute as copy_offsets
from zkconsumer.cli.migrate_render import (
    blocked_message,
    offsets_document,
    offsets_report,
    plan_document,
    plan_report,
    summary,
)
from zkconsumer.cli.options import (
    bootstrap_option,
    execute_options,
    group_option,
    json_option,
    topic_option,
    zk_options,
)
from zkconsumer.cli.render import show
from zkconsumer.migration.plan import (
    DIRECTIONS,
    TO_KAFKA,
    DirectionPlan,
    Overrides,
    plan_direction,
)
from zkconsumer.migration.status import migration_step, partition_rows
from zkconsumer.zookeeper import znodes

EXIT_BLOCKED = 3  # a blocker for the asked direction: nothing was written
F = TypeVar("F", bound=Callable[..., Any])

HELP = """Move a group off ZooKeeper coordination onto the brokers' (or back), offsets included.

ZooKeeper-coordinated members (Scala 0.8-1.1, zkconsumer) keep offsets under
/consumers/<group>/offsets; broker-coordinated consumers (the Java KafkaConsumer, confluent-kafka
subscribe()) keep them with the group coordinator. `migrate plan` shows both sides and what a
copy would do; `migrate offsets` copies the committed offsets of a group id from one store to
the other. The sequence:

\b
STOP-AND-COPY (the group pauses for the copy):
  1. zkconsumer migrate plan -g G               # both sides, lag, blockers
  2. stop every ZooKeeper member; each commits its final offsets on a clean
     shutdown (Scala and zkconsumer alike)
  3. zkconsumer migrate offsets -g G --to kafka             # the plan, no write
     zkconsumer migrate offsets -g G --to kafka --execute   # copy, read back
  4. start the broker-coordinated consumers (confluent-kafka subscribe(),
     group.id=G): they resume at the copied offsets

\b
ROLLING (the group consumes until the switch):
  1. restart the ZooKeeper members one at a time with offsets.storage=kafka
     and dual.commit.enabled=true: they commit to both stores and resume from
     the larger (plan shows step dual-commit-live)
  2. stop the ZooKeeper group; the final commits reach both stores
  3. zkconsumer migrate offsets -g G --to kafka --execute   # copies what
     differs (often nothing: step copied) and verifies
  4. start the broker-coordinated consumers
  Never run both kinds at once (step mixed): each consumes every partition,
  and the broker rejects the dual-commit members' Kafka commits
  (UNKNOWN_MEMBER_ID).

\b
ROLLBACK: stop the broker-coordinated consumers (the broker group must be
  Empty), zkconsumer migrate offsets -g G --to zookeeper --execute, then start
  the ZooKeeper members (offsets.storage=zookeeper, or dual commit).

\b
SAFETY: `migrate offsets` only prints its plan unless given --execute. It
  refuses while the target side has live members or the source side still
  runs (ZooKeeper: registered members, owner nodes, a Spark ingest job;
  brokers: a group that is not Empty) unless told exactly what to override
  (--force-live-target, --force-live-source). It never moves an offset
  backwards from what the target held when it read it, without
  --allow-rewind. Source offsets before the log start are clamped up to it
  (those messages are gone); those beyond the log end are refused unless
  --clamp-to-log-end. Partitions only the source has are copied; those only
  the target has are kept and reported. Partitions whose log offsets the
  brokers do not give, and undecodable ZooKeeper offset nodes to copy, fail
  the command. ZooKeeper writes
  never race a partition owner; Kafka writes are admin commits, which brokers
  accept only for a group with no members. Every write is read back, and
  running it again after a copy writes nothing.

Exit status: 0 no blocker (and, with --execute, everything read back as written), 1 a write
failed or did not read back (every such partition is named) or another error, 2 a usage error,
3 blocked: a blocker for the asked direction, nothing written.

The guide, with the duplicate bound measured for each path: docs/migration.md.
"""


@click.group("migrate", help=HELP)
def migrate() -> None:
    """Move a group between ZooKeeper and broker coordination (the help is HELP)."""


def _topics(topics: tuple[str, ...]) -> list[str] | None:
    for topic in topics:
        try:
            znodes.topic_path(topic)
        except ValueError:
            raise CliError(f"invalid topic name {topic!r}", EXIT_USAGE) from None
    return sorted(set(topics)) if topics else None


def _plans(evidence: Evidence, overrides: Overrides, topics: list[str] | None) -> dict[str, DirectionPlan]:
    return {
        target: plan_direction(
            evidence.zk, evidence.kafka, evidence.log, target, overrides, topics, evidence.partitions
        )
        for target in DIRECTIONS
    }


@migrate.command("plan")
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
    wanted = _topics(topics)
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        evidence = gather(client, brokers, group, wanted)
    for note in evidence.notes:
        warn(note)
    plans = _plans(evidence, Overrides(), wanted)
    step = migration_step(evidence.zk, evidence.kafka, wanted)
    rows = partition_rows(evidence.zk, evidence.kafka, evidence.log, wanted, evidence.partitions)
    if as_json:
        emit_json(plan_document(group, step, evidence.zk, evidence.kafka, rows, plans, target))
    else:
        show(*plan_report(group, step, evidence.zk, evidence.kafka, rows, plans))
    if plans[target].blocked:
        raise CliError(blocked_message(plans[target]), EXIT_BLOCKED)


@migrate.command("offsets")
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
    wanted = _topics(topics)
    overrides = Overrides(
        allow_rewind=allow_rewind,
        force_live_target=force_live_target,
        force_live_source=force_live_source,
        clamp_to_log_end=clamp_to_log_end,
    )
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        evidence = gather(client, brokers, group, wanted)
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
        outcome = copy_offsets(client, evidence, chosen) if execute and not chosen.blocked else None
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
