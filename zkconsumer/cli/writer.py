"""Offset writes for import/reset: a plan table, then writes that never race a live partition owner."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import click
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError, NodeExistsError
from kazoo.security import OPEN_ACL_UNSAFE

from zkconsumer import zkdata
from zkconsumer.cli.common import progress
from zkconsumer.cli.render import TextTable

# Data of the placeholder owner node a guarded write creates and deletes in the same transaction.
PLACEHOLDER = b"zkconsumer-cli-offset-writer"


@dataclass
class PlannedWrite:
    """One partition's offset change; `new` None (or `refused`) means it will not be written."""

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

    @property
    def status(self) -> str:
        if self.written:
            return "written"
        if self.refused:
            return f"refused: {self.refused}"
        if self.new is None:
            return "skipped"
        return "unchanged" if self.new == self.current else "planned"

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "current_offset": self.current, "new_offset": self.new, "log_start_offset": self.log_start,
                "log_end_offset": self.log_end, "note": self.note, "status": self.status}


def write_offset_guarded(client: KazooClient, group: str, topic: str, partition: int, offset: int) -> str | None:
    """Write one offset node unless the partition has an owner node; returns None or why it refused.

    One ZooKeeper transaction creates a placeholder owner node, writes the offset and deletes the
    placeholder: it fails as a whole if a real owner node exists, so the check and the write cannot
    be separated by a member claiming the partition in between.
    """
    owner = zkdata.owner_path(group, topic, partition)
    path = zkdata.offset_path(group, topic, partition)
    data = zkdata.encode_offset(offset)
    # The group node stays open, as a secured Scala member leaves it (other identities register
    # under it); owners/ and offsets/ below get the session's default ACL (secured with --zk-jaas).
    client.ensure_path(zkdata.group_path(group), acl=OPEN_ACL_UNSAFE)
    client.ensure_path(zkdata.owners_path(group, topic))
    client.ensure_path(zkdata.offsets_path(group, topic))
    for _ in range(5):
        exists = client.exists(path) is not None
        txn = client.transaction()
        txn.create(owner, PLACEHOLDER, ephemeral=True)
        if exists:
            txn.set_data(path, data)
        else:
            txn.create(path, data)
        txn.delete(owner)
        results = txn.commit()
        if not any(isinstance(r, Exception) for r in results):
            return None
        if any(isinstance(r, NoAuthError) for r in results):  # an ACL, not a race: retrying cannot help
            where = owner if isinstance(results[0], NoAuthError) else path
            return (f"ZooKeeper refused the write to {where} (NoAuth); pass --zk-jaas FILE (SASL, as the "
                    "group's Scala members log in) or --zk-digest user:password")
        if isinstance(results[0], NodeExistsError):
            try:
                holder, stat = client.get(owner)
            except NoNodeError:
                continue  # released meanwhile: try again
            return (f"owned by {holder.decode('utf-8', 'replace')} (session 0x{stat.ephemeralOwner:x}); "
                    "stop that member (or let its session expire) first")
        # The offset node appeared or vanished between exists() and the transaction: decide again.
    return f"{path} kept changing under the write"


def plan_table(plan: Iterable[PlannedWrite], *, with_group: bool) -> TextTable:
    columns = (["GROUP"] if with_group else []) + ["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET",
                                                  "LOG-START", "LOG-END", "STATUS"]
    table = TextTable(columns, right_aligned=frozenset({"PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-START",
                                                        "LOG-END"}))
    for row in plan:
        status = row.status + (f" ({row.note})" if row.note else "")
        style = "red" if row.refused else ("green" if row.written else None)
        table.add(([row.group] if with_group else []) + [row.topic, row.partition, row.current, row.new,
                                                          row.log_start, row.log_end, status], style=style)
    return table


def execute(client: KazooClient, plan: list[PlannedWrite], *, description: str) -> None:
    """Write every planned change that is a change (guarded); marks rows written or refused."""
    todo = [row for row in plan if row.new is not None and not row.refused and row.new != row.current]
    with progress(len(todo), description) as bar:
        for row in todo:
            reason = write_offset_guarded(client, row.group, row.topic, row.partition, row.new)  # type: ignore[arg-type]
            if reason is None:
                row.written = True
            else:
                row.refused = reason
            bar.advance()


def summary(plan: list[PlannedWrite], executed: bool) -> str:
    changes = [r for r in plan if r.new is not None and r.new != r.current and not r.refused]
    refused = [r for r in plan if r.refused]
    if not executed:
        text = (f"{len(changes)} offsets would change; nothing was written. Re-run with --execute to write them."
                if changes else "Nothing to change.")
    else:
        text = f"{sum(r.written for r in plan)} offsets written."
    if refused:
        text += f" {len(refused)} partitions refused (see STATUS)."
    return text


def echo_summary(plan: list[PlannedWrite], executed: bool) -> None:
    click.echo(summary(plan, executed), err=True)
