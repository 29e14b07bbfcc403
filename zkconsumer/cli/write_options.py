"""Options every writing command shares: --dry-run (the default) or --execute, and --clamp; the plan's output."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from zkconsumer.cli.common import EXIT_PROBLEM, EXIT_USAGE, CliError, emit_json
from zkconsumer.cli.formats import OffsetEntry, format_csv
from zkconsumer.cli.render import show
from zkconsumer.cli.writer import PlannedWrite, echo_summary, plan_table
from zkconsumer.zookeeper import znodes

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


def execute_options(what: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """--dry-run and --execute (kafka-consumer-groups' pair); the command gets `execute` only.
    `what`: what --execute does ("Write the offsets")."""

    def decorate(fn: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def command(*args: Any, dry_run: bool, execute: bool, **kwargs: Any) -> R:
            if dry_run and execute:
                raise CliError("--dry-run and --execute contradict each other: give one", EXIT_USAGE)
            return fn(*args, execute=execute, **kwargs)

        decorated = click.option(
            "--execute", is_flag=True, help=f"{what}. Without it only the plan is printed and nothing is written."
        )(command)
        return click.option(
            "--dry-run",
            is_flag=True,
            help="Only print the plan and write nothing: the default, accepted as kafka-consumer-groups takes it.",
        )(decorated)

    return decorate


def clamp_option(fn: F) -> F:
    return click.option(
        "--clamp",
        "clamp_offsets",
        is_flag=True,
        help="Move a new offset that lies outside [log start, log end] to the nearer end (the table says "
        "which), instead of refusing the whole command.",
    )(fn)


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
