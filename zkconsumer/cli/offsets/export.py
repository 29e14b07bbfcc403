"""`zkconsumer offsets export`: ExportZkOffsets, safer (a group's committed offsets as a file, CSV or JSON)."""

from __future__ import annotations

import sys

import click

from zkconsumer.admin import InputError, export_json, format_csv, format_export, read_export, spark_starting_offsets_of
from zkconsumer.cli.common import (
    EXIT_PROBLEM,
    EXIT_USAGE,
    CliError,
    expected_errors,
    require_group,
    warn,
    zk_session,
)
from zkconsumer.cli.formats import parse_topic_specs
from zkconsumer.cli.options import json_option, zk_options
from zkconsumer.cli.output.progress import progress
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children


@click.command("export")
@zk_options
@click.option(
    "--group",
    "-g",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="Group to export (repeatable). Default: every group under /consumers.",
)
@click.option("--all-groups", is_flag=True, help="Every group under /consumers (the default without --group).")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    show_default=True,
    help="File to write ('-' is stdout).",
)
@json_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["lines", "json", "csv", "spark"]),
    default=None,
    help="lines (the default, ExportZkOffsets'), json (one line, as --json), csv (kafka-consumer-groups "
    "--export's topic,partition,offset for one group, group,topic,partition,offset for several) or "
    "spark: the startingOffsets JSON of Spark's Kafka source, for exactly one --group.",
)
@click.option(
    "--topic",
    "-t",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Only this topic (repeatable, or a,b); with --format spark, the topics the Spark job subscribes to.",
)
@expected_errors
def export(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    groups: tuple[str, ...],
    all_groups: bool,
    output: str,
    as_json: bool,
    fmt: str | None,
    topics: tuple[str, ...],
) -> None:
    """Write committed offsets as ExportZkOffsets did, one line per partition:

    \b
      /consumers/<group>/offsets/<topic>/<partition>:<offset>

    Paths are relative to the chroot, so the file can be imported into another chroot or cluster.
    With --json (or --format json) the file is one line, {"version": 1, "offsets": [{"group", "topic",
    "partition", "offset"}]}; with --format csv it is kafka-consumer-groups' CSV. `offsets import
    --format ...` reads each back. Unreadable offset nodes are skipped with a warning (exit status 1); so are, with a
    warning only, offsets committed before their topic was (re)created, which members ignore.

    With --format spark (one --group) it is the `startingOffsets` option of Spark's built-in Kafka
    source, {"topic": {"0": 23, "1": 57}}, naming every partition of the group's topics (Spark
    wants them all): a partition with no valid committed offset gets -2 (earliest), which is
    said on stderr. A Spark job moving from the zkconsumer source to Spark's then starts at the
    group's exact position.

    \b
    Examples:
      zkconsumer offsets export --zookeeper zk:2181/kafka --group billing -o billing.offsets
      zkconsumer offsets export --zookeeper zk:2181/kafka --json > all-groups.json
      zkconsumer offsets export --zookeeper zk:2181/kafka --group billing --format csv > billing.csv
      zkconsumer offsets export --zookeeper zk:2181/kafka --group billing --format spark
    """
    if fmt is not None and as_json and fmt != "json":
        raise CliError(f"--json and --format {fmt} disagree: give one", EXIT_USAGE)
    fmt = fmt or ("json" if as_json else "lines")
    if fmt == "spark" and len(set(groups)) != 1:
        raise CliError("--format spark needs exactly one --group (startingOffsets is one group's position)", EXIT_USAGE)
    if all_groups and groups:
        raise CliError("--all-groups and --group disagree: give one", EXIT_USAGE)
    try:
        specs = parse_topic_specs(topics)
    except InputError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if any(partitions is not None for _, partitions in specs):
        raise CliError("offsets export takes whole topics: --topic t, not t:0,1", EXIT_USAGE)
    topics = tuple(t for t, _ in specs)
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        for group in groups:
            require_group(client, group, zookeeper)
        names = sorted(set(groups)) if groups else sorted(children(client, znodes.CONSUMERS))
        if fmt == "spark":
            text, bad = spark_starting_offsets_of(client, names[0], sorted(set(topics)) or None, warn=warn)
            done = f"exported group {names[0]}'s startingOffsets to {output}"
        else:
            entries, bad = read_export(client, names, set(topics) or None, progress=progress, warn=warn)
            if fmt == "csv":
                text = format_csv(entries, with_group=len(names) > 1)
            else:
                text = export_json(entries) if fmt == "json" else format_export(entries)
            done = f"exported {len(entries)} offsets of {len(names)} groups to {output}"
    with click.open_file(output, "w", encoding="utf-8") as handle:
        handle.write(text)
    if output != "-":
        click.echo(done, err=True)
    for key, reason in bad:
        warn(f"skipped {key}: {reason}")
    if bad:
        sys.exit(EXIT_PROBLEM)
