"""A write plan on the command line: its output (a table, one JSON line or kafka-consumer-groups' CSV, then the summary) and its execution with a progress bar."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import click
from kazoo.client import KazooClient

from zkconsumer.admin import KafkaCommitter, OffsetEntry, PlannedWrite, execute, format_csv, summary
from zkconsumer.cli.common import EXIT_PROBLEM, CliError, emit_json, expected_error_message
from zkconsumer.cli.output.progress import progress
from zkconsumer.cli.output.render import TextTable, show
from zkconsumer.zookeeper import znodes

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


def finish(
    plan: list[PlannedWrite],
    executed: bool,
    *,
    with_group: bool,
    as_json: bool = False,
    export_csv: bool = False,
    extra: dict[str, object] | None = None,
    error: str | None = None,
) -> None:
    """Print the plan (a table, one JSON line, or kafka-consumer-groups' CSV of the new offsets) and
    its summary, then exit 1 if a row was refused or the writes stopped midway."""
    if as_json:
        emit_json(
            {
                **(extra or {}),
                "executed": executed,
                "partitions": [row.as_dict() for row in plan],
                **({"error": error} if error else {}),
            }
        )
    elif export_csv:
        entries = [
            OffsetEntry(r.group, r.topic, r.partition, r.new) for r in plan if r.new is not None and not r.refused
        ]
        click.echo(format_csv(entries, with_group=len({r.group for r in plan}) > 1), nl=False)
        echo_summary(plan, executed)
    else:
        show(plan_table(plan, with_group=with_group))
        echo_summary(plan, executed)
    if error is not None:
        first = next(row for row in plan if row.failed)
        raise CliError(
            f"writing {znodes.offset_path(first.group, first.topic, first.partition)} failed, "
            f"nothing written from there on: {error}"
        )
    if any(row.refused for row in plan):
        sys.exit(EXIT_PROBLEM)


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


def echo_summary(plan: list[PlannedWrite], executed: bool) -> None:
    click.echo(summary(plan, executed), err=True)


def execute_plan(
    client: KazooClient,
    plan: list[PlannedWrite],
    *,
    description: str,
    kafka: Mapping[str, KafkaCommitter] | None = None,
) -> str | None:
    """zkconsumer.admin.execute with the command line's progress bar and one-line error messages;
    the error that stopped the writes midway, if one did."""
    return execute(
        client, plan, description=description, kafka=kafka, explain=expected_error_message, progress=progress
    ).stopped
