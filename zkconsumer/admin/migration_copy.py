"""Copying a group's offsets to the target store of a migration plan, then reading them back."""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.client import KazooClient

from zkconsumer.admin.broker_group import BrokerGroup, is_membership_refusal, membership_refusal
from zkconsumer.admin.committed import read_offsets
from zkconsumer.admin.error_boundary import admin_errors, from_zookeeper
from zkconsumer.admin.migration_evidence import Evidence
from zkconsumer.admin.offsets_write import Explain, PlannedWrite, Progress, execute, no_progress
from zkconsumer.errors import AdminError
from zkconsumer.migration import TO_KAFKA, DirectionPlan, mismatches
from zkconsumer.partitions import TopicPartition


@dataclass
class CopyOutcome:
    """What --execute did: key -> status per planned write, and the error line (None: all verified)."""

    statuses: dict[TopicPartition, str]
    error: str | None


@admin_errors
def copy_offsets(
    client: KazooClient,
    evidence: Evidence,
    plan: DirectionPlan,
    *,
    explain: Explain = str,
    progress: Progress = no_progress,
) -> CopyOutcome:
    """Write every planned offset to the target store, then read them back.

    Kafka: one alter_consumer_group_offsets request, per-partition errors checked; an error that
    means "the group has members" is explained with the group's state and members, described
    again. ZooKeeper: the guarded writer (one transaction per partition that fails if an owner
    node exists), stopping at the first ZooKeeper error.
    """
    group = plan.group
    todo = {m.key: m.new for m in plan.writes if m.new is not None}
    if not todo:
        return CopyOutcome({}, None)
    refusal = None
    if plan.target == TO_KAFKA:
        answers = evidence.broker.alter(todo)
        if is_membership_refusal(answers):
            try:
                refusal = membership_refusal(group, answers, evidence.broker.describe())
            except AdminError as exc:  # the per-partition report below must survive a failed describe
                refusal = (
                    f"the brokers refused offset changes of group {group} as a group with members "
                    f"(describing it failed: {exc})"
                )
        answers = {k: None if e is None else f"refused by the broker: {e}" for k, e in answers.items()}
    else:
        rows = [PlannedWrite(group, m.topic, m.partition, m.target, m.new) for m in plan.writes]
        stopped = execute(
            client, rows, description="copying offsets to ZooKeeper", explain=explain, progress=progress
        ).stopped
        answers = {
            (r.topic, r.partition): None
            if r.written
            else (f"refused: {r.refused}" if r.refused else f"not written: {r.failed}")
            for r in rows
        }
        if stopped is not None:
            refusal = f"writing group {group}'s offsets to ZooKeeper stopped: {stopped}"
    written = [m for m in plan.writes if answers[m.key] is None]
    statuses = {key: answer for key, answer in answers.items() if answer is not None}
    try:
        read_back = read_target(client, evidence.broker, plan) if written else {}
    except AdminError as exc:  # written, but not verified: say so per partition instead of losing the report
        if from_zookeeper(exc):
            raise  # ZooKeeper failing ends the command, as any other ZooKeeper failure does
        statuses.update({m.key: f"written, not verified: {exc}" for m in written})
        read_back = None
    for move, got in mismatches(written, read_back) if read_back is not None else ():
        statuses[move.key] = f"mismatch: wrote {move.new}, read back {'nothing' if got is None else got}"
    statuses.update({m.key: "written" for m in written if m.key not in statuses})
    bad = [m for m in plan.writes if statuses[m.key] != "written"]
    if not bad:
        return CopyOutcome(statuses, None)
    listed = "; ".join(f"{m.topic}-{m.partition} {statuses[m.key]}" for m in bad)
    error = (
        f"{len(bad)} of group {group}'s {len(plan.writes)} partitions did not read back from {plan.target} "
        f"as written: {listed}"
    )
    return CopyOutcome(statuses, f"{refusal}. {error}" if refusal else error)


def read_target(client: KazooClient, broker: BrokerGroup, plan: DirectionPlan) -> dict[TopicPartition, int]:
    """The target store's committed offsets of the plan's partitions, read afresh."""
    if plan.target == TO_KAFKA:
        return broker.committed()
    return read_offsets(client, plan.group, sorted({m.topic for m in plan.moves})).valid
