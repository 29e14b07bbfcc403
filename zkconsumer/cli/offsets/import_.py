"""`zkconsumer offsets import`: ImportZkOffsets (and kafka-consumer-groups --from-file), checked row by row, plan first."""

from __future__ import annotations

import contextlib
import sys

import click

from zkconsumer.admin import (
    FILE_FORMATS,
    BrokerAccess,
    InputError,
    WantedOffset,
    decode_input,
    parse_offsets_file,
    plan_writes,
)
from zkconsumer.cli.common import EXIT_USAGE, CliError, expected_errors, warn, zk_session
from zkconsumer.cli.options import (
    bootstrap_option,
    clamp_option,
    execute_options,
    json_option,
    zk_options,
    zookeeper_only_option,
)
from zkconsumer.cli.output.plans import execute_plan, finish
from zkconsumer.zookeeper import znodes


@click.command("import")
@zk_options
@click.option(
    "--input",
    "-i",
    "input_file",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="File written by `offsets export`, the legacy ExportZkOffsets or kafka-consumer-groups --export "
    "('-' is stdin).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FILE_FORMATS),
    default="lines",
    show_default=True,
    help="The input's format: lines (ExportZkOffsets' /consumers/<group>/offsets/<topic>/<partition>:<offset>), "
    "json (`offsets export --format json`) or csv (kafka-consumer-groups --export: topic,partition,offset "
    "with --group, or group,topic,partition,offset).",
)
@click.option(
    "--group",
    "-g",
    metavar="GROUP",
    help="The group of a topic,partition,offset CSV; with the other formats, import only this group's rows.",
)
@execute_options("Write the offsets")
@clamp_option
@click.option(
    "--force", is_flag=True, help="Proceed although a group has live members (owned partitions are still refused)."
)
@zookeeper_only_option
@bootstrap_option
@json_option
@expected_errors
def import_(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    input_file: str,
    fmt: str,
    group: str | None,
    execute: bool,
    clamp_offsets: bool,
    force: bool,
    zookeeper_only: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Write offsets from a file (ImportZkOffsets). THIS WRITES, but only with --execute.

    Lines are `/consumers/<group>/offsets/<topic>/<partition>:<offset>`; reading stops at the first
    empty line, as the original did. Every row is checked before anything is written: the file must
    be UTF-8 text in the given --format, each topic and partition must exist, and each offset must
    lie in [log start, log end] of its partition as the brokers report it (--clamp moves it to the
    nearer end instead, saying which rows). One bad row refuses the whole file, each bad row named
    on stderr, and nothing is written. Groups with registered members are refused unless --force; a
    partition that has an owner node is never written (its owner would overwrite the value at its
    next commit). A group that also commits offsets to Kafka gets the new offsets there too (see
    KAFKA-SIDE OFFSETS in `offsets --help`).

    A write failing midway (ZooKeeper lost, no permission) stops the import: the table then says
    which partitions were written and which were not, and the error follows on stderr.

    Exit status: 0 when everything planned was written (or, without --execute, could be), 1 when a
    partition was refused or not written, 2 for a bad file or a bad row (nothing written).

    \b
    Examples:
      zkconsumer offsets import --zookeeper zk:2181/kafka -i billing.offsets            # show the plan
      zkconsumer offsets import --zookeeper zk:2181/kafka -i billing.offsets --execute  # write it
      zkconsumer offsets import --zookeeper zk:2181/kafka -i plan.csv --format csv -g billing --execute
    """
    name = "stdin" if input_file == "-" else input_file
    if group is not None:
        try:
            znodes.group_path(group)
        except ValueError:
            raise CliError(f"invalid group name {group!r}", EXIT_USAGE) from None
    try:
        data = _read_bytes(input_file)
    except OSError as exc:
        raise CliError(f"--input {name}: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        text = decode_input(data, name)
        entries = parse_offsets_file(text, fmt, group)
    except InputError as exc:
        message = str(exc)
        raise CliError(message if message.startswith(f"{name}:") else f"{name}: {message}", EXIT_USAGE) from None
    if group is not None and fmt != "csv":
        others = sorted({e.group for e in entries} - {group})
        entries = [e for e in entries if e.group == group]
        if others:
            warn(f"{name}: importing group {group}'s rows only; left out those of {', '.join(others)}")
    if not entries:
        raise CliError(f"{name}: holds no offsets" + (f" of group {group}" if group is not None else ""), EXIT_USAGE)
    wanted = [WantedOffset(e.group, e.topic, e.partition, e.offset, e.source) for e in entries]
    error = None
    with zk_session(zookeeper, zk_digest, zk_timeout) as client, contextlib.ExitStack() as stack:
        plan = plan_writes(
            client,
            brokers,
            stack,
            wanted,
            clamp_offsets=clamp_offsets,
            force=force,
            zookeeper_only=zookeeper_only,
            warn=warn,
        )
        if execute:
            error = execute_plan(client, plan.rows, description="importing offsets", kafka=plan.kafka)
    finish(plan.rows, execute, with_group=True, as_json=as_json, error=error)


def _read_bytes(path: str) -> bytes:
    """The whole input file ('-': stdin) as bytes: decoded later, so bad bytes are one line naming the byte."""
    if path == "-":
        return sys.stdin.buffer.read()  # what click.get_binary_stream returned (deprecated in click 8.5)
    with open(path, "rb") as handle:
        return handle.read()
