"""Offset writes for import/reset: a plan table, then writes that never race a live partition owner."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import click
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NodeExistsError, NoNodeError
from kazoo.security import OPEN_ACL_UNSAFE

from zkconsumer.cli.common import expected_error_message, progress
from zkconsumer.cli.kafka_offsets import KafkaCommits
from zkconsumer.cli.render import TextTable
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.zookeeper import znodes

# Data of the placeholder owner node a guarded write creates and deletes in the same transaction.
PLACEHOLDER = b"zkconsumer-cli-offset-writer"


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


class AnyVersion:
    """`expect_version` of write_offset_guarded: write whatever the offset node holds now."""


ANY_VERSION = AnyVersion()


def write_offset_guarded(
    client: KazooClient,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    expect_version: int | None | AnyVersion = ANY_VERSION,
    topic_epoch: int | None = None,
) -> str | None:
    """Write one offset node unless the partition has an owner node; returns None or why it refused.

    One ZooKeeper transaction creates a placeholder owner node, writes the offset and deletes the
    placeholder: it fails as a whole if a real owner node exists, so the check and the write cannot
    be separated by a member claiming the partition in between.

    `expect_version`, for a write planned from an earlier read: the offset node's version then
    (None: there was none). The transaction then also checks it, so a member that committed
    between the read and the write (and left again) keeps its offset: the write refuses.
    `topic_epoch`: the topic's incarnation (czxid of /brokers/topics/<topic>) the offset counts in.
    A topic deleted and created again since is refused before the write; one re-created while the
    write was on its way has the write withdrawn after it (ZooKeeper cannot check a czxid inside a
    transaction), so an old log's offset never lands in the new topic's offset node.
    """
    owner = znodes.owner_path(group, topic, partition)
    path = znodes.offset_path(group, topic, partition)
    data = znodes.encode_offset(offset)
    if topic_epoch is not None and (moved := _topic_moved(client, topic, topic_epoch)):
        return moved
    # The group node stays open, as a secured Scala member leaves it (other identities register
    # under it); owners/ and offsets/ below get the session's default ACL (secured with --zk-jaas).
    client.ensure_path(znodes.group_path(group), acl=OPEN_ACL_UNSAFE)
    client.ensure_path(znodes.owners_path(group, topic))
    client.ensure_path(znodes.offsets_path(group, topic))
    for _ in range(5):
        txn = client.transaction()
        txn.create(owner, PLACEHOLDER, ephemeral=True)
        if isinstance(expect_version, AnyVersion):
            exists = client.exists(path) is not None
        else:
            exists = expect_version is not None
            if exists:
                txn.check(path, expect_version)
        if exists:
            txn.set_data(path, data)
        else:
            txn.create(path, data)
        txn.delete(owner)
        results = txn.commit()
        if not any(isinstance(r, Exception) for r in results):
            if topic_epoch is not None and (moved := _topic_moved(client, topic, topic_epoch)):
                return moved + _withdraw(client, path, data)
            return None
        if any(isinstance(r, NoAuthError) for r in results):  # an ACL, not a race: retrying cannot help
            where = owner if isinstance(results[0], NoAuthError) else path
            return (
                f"ZooKeeper refused the write to {where} (NoAuth); pass --zk-jaas FILE (SASL, as the "
                "group's Scala members log in) or --zk-digest user:password"
            )
        if isinstance(results[0], NodeExistsError):
            try:
                holder, stat = client.get(owner)
            except NoNodeError:
                continue  # released meanwhile: try again
            return (
                f"owned by {holder.decode('utf-8', 'replace')} (session 0x{stat.ephemeralOwner:x}); "
                "stop that member (or let its session expire) first"
            )
        if not isinstance(expect_version, AnyVersion):
            return _changed_since_planned(client, path, expect_version)
        # The offset node appeared or vanished between exists() and the transaction: decide again.
    return f"{path} kept changing under the write"


def _topic_moved(client: KazooClient, topic: str, epoch: int) -> str | None:
    """Why an offset counted in incarnation `epoch` must not be written now, if the topic's node is
    gone or is another incarnation."""
    stat = client.exists(znodes.topic_path(topic))
    if stat is None:
        return f"topic {topic} was deleted since the offsets were counted (incarnation {epoch})"
    if stat.czxid != epoch:
        return (
            f"topic {topic} was deleted and created again since the offsets were counted (incarnation "
            f"{epoch}, now {stat.czxid}): an old log's offset must not land in the new topic"
        )
    return None


def _withdraw(client: KazooClient, path: str, data: bytes) -> str:
    """Delete the offset node just written if it still holds `data` (nobody wrote it since)."""
    try:
        current, stat = client.get(path)
        if current != data:
            return f"; {path} was written again since, and is left as it is"
        client.delete(path, version=stat.version)
    except NoNodeError:
        return ""
    except Exception as exc:  # noqa: BLE001 - reported: an operator must look at it
        return f"; withdrawing what was written failed ({exc}): {path} holds an old log's offset"
    return "; what was written is withdrawn"


def _changed_since_planned(client: KazooClient, path: str, expected: int | None) -> str:
    """The refusal of a compare-and-set whose offset node is not as it was when planned."""
    try:
        current, stat = client.get(path)
    except NoNodeError:
        return f"{path} was deleted since it was read (version {expected}): not writing over a change"
    return (
        f"{path} changed since it was read ({'no node' if expected is None else f'version {expected}'}, now "
        f"{current.decode('utf-8', 'replace')} at version {stat.version}): a member committed meanwhile; "
        "not overwriting its offset"
    )


def plan_table(plan: Iterable[PlannedWrite], *, with_group: bool) -> TextTable:
    columns = (["GROUP"] if with_group else []) + [
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "NEW-OFFSET",
        "LOG-START",
        "LOG-END",
        "STATUS",
    ]
    table = TextTable(
        columns, right_aligned=frozenset({"PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-START", "LOG-END"})
    )
    for row in plan:
        status = row.status + (f" ({row.note})" if row.note else "")
        style = "red" if row.refused or row.failed else ("green" if row.written else None)
        table.add(
            ([row.group] if with_group else [])
            + [row.topic, row.partition, row.current, row.new, row.log_start, row.log_end, status],
            style=style,
        )
    return table


def execute(
    client: KazooClient, plan: list[PlannedWrite], *, description: str, kafka: Mapping[str, KafkaCommits] | None = None
) -> str | None:
    """Write every planned change (guarded), then the Kafka side of groups that commit there; marks
    rows written, refused or failed. Returns None, or the error that stopped the writes midway
    (rows from there on are marked failed, so the table shows what was written and what was not)."""
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
                error = expected_error_message(exc)
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


def echo_summary(plan: list[PlannedWrite], executed: bool) -> None:
    click.echo(summary(plan, executed), err=True)
