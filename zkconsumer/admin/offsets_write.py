"""Offset writes for import/reset/migrate: planned rows, written so they never race a live partition owner."""

from __future__ import annotations

from collections.abc import Mapping

from kazoo.client import KazooClient

from zkconsumer.admin.kafka_committer import KafkaCommitter
from zkconsumer.admin.planned_write import PlannedWrite
from zkconsumer.admin.progress import Explain, Progress, no_progress
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.guarded_write import ANY_VERSION, AnyVersion, write_offset_guarded

__all__ = [
    "ANY_VERSION",
    "AnyVersion",
    "Explain",
    "KafkaCommitter",
    "PlannedWrite",
    "Progress",
    "execute",
    "no_progress",
    "summary",
    "write_offset_guarded",
]


def execute(
    client: KazooClient,
    plan: list[PlannedWrite],
    *,
    description: str,
    kafka: Mapping[str, KafkaCommitter] | None = None,
    explain: Explain = lambda _exc: None,
    progress: Progress = no_progress,
) -> str | None:
    """Write every planned change (guarded), then the Kafka side of groups that commit there; marks
    rows written, refused or failed. Returns None, or the error that stopped the writes midway
    (rows from there on are marked failed, so the table shows what was written and what was not).
    `explain` words an error an operator can cause (None: a bug, raised); `progress` shows the writes."""
    todo = [row for row in plan if row.needs_write]
    unread = {row.topic for row in todo if row.epoch is None}
    epochs = ClusterMetadata(client).topic_epochs(unread) if unread else {}
    error = None
    with progress(len(todo), description) as bar:
        for index, row in enumerate(todo):
            epoch = row.epoch if row.epoch is not None else epochs.get(row.topic)
            if epoch is None:  # never create offsets/<topic> or owners/<topic> of a topic that does not exist
                row.refused = f"topic {row.topic} does not exist (no {znodes.topic_path(row.topic)})"
                bar.advance()
                continue
            try:
                reason = write_offset_guarded(
                    client, row.group, row.topic, row.partition, row.target, topic_epoch=epoch
                )
            except Exception as exc:  # noqa: BLE001 - expected ones end the writes; bugs are raised
                error = explain(exc)
                if error is None:
                    raise
                row.failed = error
                for rest in todo[index + 1 :]:
                    rest.failed = "not attempted (stopped at the error above)"
                break
            if reason is None:
                row.written = True
            else:
                row.refused = reason
            bar.advance()
    # ZooKeeper first: its write is the one fenced against a partition owner, so Kafka only gets
    # offsets that passed that check.
    for group, commits in sorted((kafka or {}).items()):
        rows = {(r.topic, r.partition): r for r in todo if r.group == group and r.written and r.to_kafka}
        answers = commits.commit({key: row.target for key, row in rows.items()})
        for key, refusal in answers.items():
            if refusal is not None:
                rows[key].refused = (
                    f"written to ZooKeeper only, Kafka refused: {refusal} (the group's members "
                    "read the larger of the two)"
                )
    return error


def summary(plan: list[PlannedWrite], executed: bool) -> str:
    changes = [r for r in plan if r.needs_write]
    refused = [r for r in plan if r.refused]
    if not executed:
        text = (
            f"{len(changes)} offsets would change; nothing was written. Re-run with --execute to write them."
            if changes
            else "Nothing to change."
        )
    else:
        written = [r for r in plan if r.written]
        both = sum(r.to_kafka and not r.refused for r in written)
        text = f"{len(written)} offsets written" + (f" ({both} of them to ZooKeeper and Kafka)." if both else ".")
        failed = sum(r.failed is not None for r in plan)
        if failed:
            text += f" {failed} not written (see STATUS)."
    if refused:
        text += f" {len(refused)} partitions refused (see STATUS)."
    return text
