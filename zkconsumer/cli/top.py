"""`zkconsumer top`: a live terminal view of a group's members, partitions, lag and throughput."""

from __future__ import annotations

import time
from typing import Any

import click
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from zkconsumer.admin import AdminUnavailable, BrokerAccess, GroupSnapshot, RateTracker, take_snapshot
from zkconsumer.cli.brokers import open_watermarks
from zkconsumer.cli.common import emit_json, expected_errors, require_group, zk_session
from zkconsumer.cli.options import bootstrap_option, group_option, json_option, zk_options
from zkconsumer.cli.output.render import TextTable, console, show, stdout_is_tty
from zkconsumer.partitions import TopicPartition


def _fmt_rate(value: float | None) -> str | None:
    if value is None:
        return None
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def frame_tables(
    snapshot: GroupSnapshot, rates: dict[TopicPartition, tuple[float | None, float | None]], interval: float
) -> list[TextTable | str]:
    """The header line, the members table and the partitions table of one frame."""
    total_lag = sum(r.lag or 0 for r in snapshot.partitions)
    out_total = sum((rates.get((r.topic, r.partition)) or (None, None))[1] or 0 for r in snapshot.partitions)
    problems = snapshot.all_problems()
    header = (
        f"group {snapshot.group}  {time.strftime('%H:%M:%S', time.localtime(snapshot.taken_at))}  "
        f"members {len(snapshot.members)}  partitions {len(snapshot.partitions)}  lag {total_lag}  "
        f"consumed/s {_fmt_rate(out_total) if rates else '-'}  problems {len(problems)}  "
        f"(every {interval:g}s; rates move when members commit)"
    )
    members = TextTable(
        ["CONSUMER-ID", "PARTITIONS", "LAG", "MSG/S"],
        title="Members",
        right_aligned=frozenset({"PARTITIONS", "LAG", "MSG/S"}),
    )
    for cid, member in sorted(snapshot.members.items()):
        owned = snapshot.owned_by(cid)
        rate = [(rates.get((r.topic, r.partition)) or (None, None))[1] for r in owned]
        members.add(
            [cid, len(owned), sum(r.lag or 0 for r in owned), _fmt_rate(sum(x or 0 for x in rate)) if rates else None],
            style="red" if member.error else ("yellow" if not owned else None),
        )
    parts = TextTable(
        ["TOPIC", "PARTITION", "OWNER", "OFFSET", "LOG-END", "LAG", "IN/S", "OUT/S", "PROBLEM"],
        title="Partitions",
        right_aligned=frozenset({"PARTITION", "OFFSET", "LOG-END", "LAG", "IN/S", "OUT/S"}),
    )
    # Problems first, then the largest lag: what matters stays visible when the terminal crops the table.
    for row in sorted(snapshot.partitions, key=lambda r: (not r.problems, -(r.lag or 0), r.topic, r.partition)):
        rate_in, rate_out = rates.get((row.topic, row.partition), (None, None))
        parts.add(
            [
                row.topic,
                row.partition,
                row.owner.thread_id if row.owner else None,
                row.offset,
                row.log_end,
                row.lag,
                _fmt_rate(rate_in),
                _fmt_rate(rate_out),
                ",".join(p.kind for p in row.problems),
            ],
            style="red" if row.problems else None,
        )
    return [header, members, parts]


def _renderable(items: list[TextTable | str]) -> Any:
    from rich.console import Group
    from rich.text import Text

    return Group(*(item.rich() if isinstance(item, TextTable) else Text(item, style="bold") for item in items))


@click.command("top")
@zk_options
@group_option
@click.option(
    "--interval",
    type=click.FloatRange(min=0.2),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="Refresh period.",
)
@click.option("--once", is_flag=True, help="Render one frame and exit (for scripts and tests).")
@bootstrap_option
@json_option
@expected_errors
def top(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    group: str,
    interval: float,
    once: bool,
    brokers: BrokerAccess,
    as_json: bool,
) -> None:
    """Watch a group live: members, partitions per member, lag per partition and messages/s.

    Refreshes every --interval seconds until Ctrl-C. OUT/S is computed from committed offsets, so
    it moves when members commit (auto.commit.interval.ms); IN/S is the producers' rate from the log
    ends. With --json, prints one JSON object per refresh instead (one line each).

    \b
    Examples:
      zkconsumer top --zookeeper zk:2181/kafka --group billing
      zkconsumer top --zookeeper zk:2181/kafka --group billing --once
    """
    tracker = RateTracker()
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        require_group(client, group, zookeeper)
        with open_watermarks(client, brokers) as marks:

            def frame() -> tuple[GroupSnapshot, list[TextTable | str]]:
                snapshot = take_snapshot(client, group, marks)
                return snapshot, frame_tables(snapshot, tracker.update(snapshot), interval)

            try:
                if as_json:
                    _json_loop(frame, interval, once)
                elif once or not stdout_is_tty():
                    _plain_loop(frame, interval, once)
                else:
                    _live_loop(frame, interval)
            except KeyboardInterrupt:
                click.echo("", err=True)


def _json_loop(frame: Any, interval: float, once: bool) -> None:
    while True:
        snapshot, _ = frame()
        emit_json(snapshot.as_dict())
        if once:
            return
        time.sleep(interval)


def _plain_loop(frame: Any, interval: float, once: bool) -> None:
    while True:
        _, items = frame()
        show(*items)
        if once:
            return
        click.echo("")
        time.sleep(interval)


def _live_loop(frame: Any, interval: float) -> None:
    from rich.live import Live

    _, items = frame()
    with Live(_renderable(items), console=console(), auto_refresh=False, vertical_overflow="crop") as live:
        live.refresh()
        while True:
            time.sleep(interval)
            try:
                _, items = frame()
                live.update(_renderable(items), refresh=True)
            except (
                AdminUnavailable,
                KazooException,
                KazooTimeoutError,
            ) as exc:  # keep watching through a ZooKeeper blip
                failure = exc.__cause__ if isinstance(exc, AdminUnavailable) else exc
                if not isinstance(failure, (KazooException, KazooTimeoutError)):
                    raise
                live.update(
                    _renderable([f"ZooKeeper read failed ({failure or type(failure).__name__}); retrying"] + items[1:]),
                    refresh=True,
                )
