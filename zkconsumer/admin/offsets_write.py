"""Offset writes for import/reset/migrate: planned rows (PlannedWrite), written so they never race a live partition owner, with the caller's progress bar."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import guarded_write, znodes
from zkconsumer.zookeeper.guarded_write import ANY_VERSION, AnyVersion


@dataclass
class PlannedWrite:
    """One partition's offset change; `new` None (or `refused`) means it will not be written.

    `current` is the valid ZooKeeper offset (None: none, or one older than the topic). With
    `to_kafka` the group also commits to Kafka (`kafka`: its offset there), and the new offset
    is written to both, as its members read the larger of the two.
    """

    group: str
    topic: str
    partition: int
    current: int | None
    new: int | None
    log_start: int | None = None
    log_end: int | None = None
    note: str = ""
    refused: str | None = None
    written: bool = False
    kafka: int | None = None
    to_kafka: bool = False
    failed: str | None = None  # why it was not written although planned (the command stopped)
    epoch: int | None = None  # the topic's incarnation (czxid) the plan counted in; None: read at the write

    @property
    def effective(self) -> int | None:
        """The offset a member resumes from: the larger of ZooKeeper's and Kafka's."""
        found = [o for o in (self.current, self.kafka if self.to_kafka else None) if o is not None and o >= 0]
        return max(found) if found else None

    @property
    def target(self) -> int:
        """`new`, of a row that needs_write (or was written)."""
        assert self.new is not None
        return self.new

    @property
    def needs_write(self) -> bool:
        if self.new is None or self.refused or self.failed:
            return False
        return self.new != self.current or (self.to_kafka and self.new != self.kafka)

    @property
    def status(self) -> str:
        if self.failed:
            return f"not written: {self.failed}"
        if self.written:
            return f"partly written: {self.refused}" if self.refused else "written"
        if self.refused:
            return f"refused: {self.refused}"
        if self.new is None:
            return "skipped"
        return "planned" if self.needs_write else "unchanged"

    def add_note(self, text: str) -> None:
        if text:
            self.note = f"{self.note}; {text}" if self.note else text

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "current_offset": self.current,
            "kafka_offset": self.kafka if self.to_kafka else None,
            "new_offset": self.new,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "note": self.note,
            "status": self.status,
        }


class KafkaCommitter(Protocol):
    """The Kafka side of a group that commits there (KafkaCommits is one)."""

    def commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, str | None]: ...


class ProgressBar(Protocol):
    """`n` steps of a run of writes done (the command line's rich bar is one)."""

    def advance(self, n: int = 1) -> None: ...


# (total, description) -> a bar to advance once per step, for the length of the run.
Progress = Callable[[int, str], contextlib.AbstractContextManager[ProgressBar]]
# An error an operator can cause, worded in one line; None: a bug, to be raised.
Explain = Callable[[BaseException], str | None]

_SILENT = cast(ProgressBar, types.SimpleNamespace(advance=lambda n=1: None))


@contextlib.contextmanager
def no_progress(_total: int, _description: str) -> Iterator[ProgressBar]:
    """The default: nothing shown."""
    yield _SILENT


@dataclass(frozen=True)
class OffsetWrite:
    """What one owner-fenced offset write did: written, or `refusal` says why not (nothing was written)."""

    refusal: str | None = None

    @property
    def written(self) -> bool:
        return self.refusal is None


@admin_errors
def write_offset(
    client: KazooClient,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    expect_version: int | None | AnyVersion = ANY_VERSION,
    topic_epoch: int | None = None,
) -> OffsetWrite:
    """Write one offset node unless the partition has an owner node, in one ZooKeeper transaction
    that fails as a whole if an owner node exists (a member claiming the partition meanwhile
    included). It does not check the offset against the log (range_problem does).

    `expect_version`: the offset node's version when the write was planned (None: there was none);
    a node changed since is refused. `topic_epoch`: the topic's incarnation (czxid of
    /brokers/topics/<topic>) the offset counts in; a topic deleted or created again is refused."""
    return OffsetWrite(
        guarded_write.write_offset_guarded(
            client, group, topic, partition, offset, expect_version=expect_version, topic_epoch=topic_epoch
        )
    )


@dataclass(frozen=True)
class ExecuteResult:
    """What execute did beyond marking the rows: `stopped`, the error that stopped the writes midway
    (None: every row that needed a write was tried)."""

    stopped: str | None = None


@admin_errors
def execute(
    client: KazooClient,
    plan: list[PlannedWrite],
    *,
    description: str,
    kafka: Mapping[str, KafkaCommitter] | None = None,
    explain: Explain = lambda _exc: None,
    progress: Progress = no_progress,
) -> ExecuteResult:
    """Write every planned change (guarded), then the Kafka side of groups that commit there; marks
    rows written, refused or failed. The result's `stopped` is the error that stopped the writes
    midway, if one did (rows from there on are marked failed, so the table shows what was written
    and what was not).
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
                outcome = write_offset(client, row.group, row.topic, row.partition, row.target, topic_epoch=epoch)
            except Exception as exc:  # noqa: BLE001 - expected ones end the writes; bugs are raised
                error = explain(exc)
                if error is None:
                    raise
                row.failed = error
                for rest in todo[index + 1 :]:
                    rest.failed = "not attempted (stopped at the error above)"
                break
            if outcome.written:
                row.written = True
            else:
                row.refused = outcome.refusal
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
    return ExecuteResult(error)


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
