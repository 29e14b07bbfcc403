"""`zkconsumer groups status`: one verdict per partition and for the group, Burrow's rules over a --watch window."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from zkconsumer.admin import (
    BrokerAccess,
    GroupSampler,
    GroupVerdict,
    LagStatus,
    Sample,
    age_text,
    group_why,
    status_report,
)
from zkconsumer.cli.brokers import open_watermarks
from zkconsumer.cli.common import (
    EXIT_PROBLEM,
    EXIT_USAGE,
    CliError,
    emit_json,
    expected_errors,
    require_group,
    zk_session,
)
from zkconsumer.cli.options import bootstrap_option, group_option, json_option, zk_options
from zkconsumer.cli.output.render import TextTable, show

STYLES = {LagStatus.OK: None, LagStatus.WARN: "yellow", LagStatus.NOTFOUND: "yellow"}


@click.command("status")
@zk_options
@group_option
@click.option(
    "--watch",
    "window",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Sample the group for this long, then judge it by Burrow's rules (without: one sample, "
    "owner nodes and lag now).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="With --watch: the time between samples; lag in seconds is exact to it.",
)
@bootstrap_option
@json_option
@expected_errors
def status(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    window: float | None,
    interval: float,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Judge a group: a status per partition and for the group, and why (Burrow's statuses).

    Without --watch it reads the group once: what the owner nodes say (a partition nobody owns,
    an owner that is not a registered member, an owner node held by another session than its
    member's) and the lag now. With --watch SECONDS it samples every --interval and judges each
    partition's commits in that window by Burrow's five rules: OK (caught up at some point, or
    the lag shrank), REWIND (the offset went back), STOP (no commit for longer than the window's
    commits span), STALL (commits that never move), WARN (moving, but the lag never shrinks).
    The owner nodes decide first. The group takes its worst partition's status, capped at ERR
    (a STOP, STALL or REWIND partition makes the group ERR), as Burrow does; registered members
    that own nothing while partitions have no owner (a rebalance that gave up) make it ERR too.

    Columns: STATUS, LAG (messages), LAG-S (seconds the first waiting message has waited: a range
    exact to the interval, ">=N" when it was already waiting at the first sample; from log-end
    samples, so only with --watch), OWNER and REASON. docs/cli.md lists the --json keys.

    Exit status 0 when the group is OK, 1 when it is not (WARN, ERR, or no log end to judge
    by) or could not be read; 2 a usage error.

    \b
    Examples:
      zkconsumer groups status --zookeeper zk:2181/kafka --group billing
      zkconsumer groups status --zookeeper zk:2181/kafka --group billing --watch 60 --interval 2
      zkconsumer groups status --group billing --watch 30 --json | jq -r .status
    """
    if window is not None and window < interval:
        raise CliError(f"--watch {window:g} is shorter than --interval {interval:g}: no window to judge", EXIT_USAGE)
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        require_group(client, group, zookeeper)
        with open_watermarks(client, brokers) as marks:
            sampler = GroupSampler(client, group, marks)
            if window is None:
                sampler.sample()
            else:
                sampler.watch(window, interval)
    verdict = sampler.verdict()
    if as_json:
        emit_json(status_report(group, verdict, sampler.samples, interval_s=interval if window else None))
    else:
        show(*status_text(group, verdict, sampler.samples, interval))
    if verdict.status is not LagStatus.OK:
        sys.exit(EXIT_PROBLEM)


def status_text(group: str, verdict: GroupVerdict, samples: Sequence[Sample], interval: float) -> list[TextTable | str]:
    """The header line, the partition table, the group's status line."""
    last = samples[-1]
    how = (
        f"Burrow's rules over {len(samples)} samples {interval:g} s apart"
        if len(samples) > 1
        else "one sample: owner nodes and lag now; --watch SECONDS judges progress"
    )
    table = TextTable(
        ["TOPIC", "PARTITION", "STATUS", "LAG", "LAG-S", "OWNER", "REASON"],
        right_aligned=frozenset({"PARTITION", "LAG", "LAG-S"}),
    )
    for key, v in sorted(verdict.partitions.items()):
        seen = last.partitions.get(key)
        owner = None if seen is None else seen.owner
        table.add([*key, v.status.name, v.lag, age_text(v.age), owner, v.reason], style=STYLES.get(v.status, "red"))
    return [
        f"Group {group}: {len(last.members)} members, total lag {verdict.total_lag} ({how})",
        table,
        f"Status {verdict.status.name}: {group_why(verdict)}",
    ]
