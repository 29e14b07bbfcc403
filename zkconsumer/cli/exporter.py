"""`zkconsumer exporter`: serve every group's lag and ownership to Prometheus (/metrics) and as JSON (/v1/...)."""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from types import FrameType

import click

from zkconsumer.admin import BrokerAccess, legacy_settings
from zkconsumer.cli.brokers import bootstrap_from_zookeeper
from zkconsumer.cli.common import EXIT_USAGE, CliError, expected_errors, warn, zk_session
from zkconsumer.cli.options import bootstrap_option, zk_options
from zkconsumer.exporter.exporter import Exporter
from zkconsumer.exporter.log_ends import LogEnds


def _regex(_ctx: click.Context, _param: click.Parameter, value: str | None) -> re.Pattern[str] | None:
    try:
        return None if value is None else re.compile(value)
    except re.error as exc:
        raise click.BadParameter(f"{value!r} is not a regex ({exc})") from None


def _listen(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, int]:
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{value!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


@click.command("exporter")
@zk_options
@click.option(
    "--listen",
    default="0.0.0.0:9308",
    show_default=True,
    callback=_listen,
    metavar="HOST:PORT",
    help="Serve /metrics and /v1/... here (port 0: any free port, printed at start).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Refresh every group this often; lag in seconds is exact to it.",
)
@click.option(
    "--window",
    type=click.FloatRange(min=0.1),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="Judge each partition's commits over this long (Burrow's rules), keeping a sample per interval.",
)
@click.option("--groups", "pattern", callback=_regex, metavar="REGEX", help="Only the groups this fully matches.")
@click.option(
    "--forget-retired-topics-after",
    "retired_after",
    type=click.FloatRange(min=0.0),
    default=7.0,
    show_default=True,
    metavar="DAYS",
    help="A topic of a group that no registered member subscribes to (a retired or renamed topic) is "
    "WARN, never ERR or unowned, and is left out once its last commit is this old (0: at once).",
)
@click.option(
    "--expire-group-after",
    "expire_after",
    type=click.FloatRange(min=0.0),
    default=7.0,
    show_default=True,
    metavar="DAYS",
    help="Leave out a group with no member, no owner node and no commit for this long (Burrow's "
    "expire-group): a retired group, not a stopped one. It comes back at its next commit or member.",
)
@bootstrap_option
@expected_errors
def exporter(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    listen: tuple[str, int],
    interval: float,
    window: float,
    pattern: re.Pattern[str] | None,
    retired_after: float,
    expire_after: float,
    brokers: BrokerAccess,
) -> None:
    """Serve every group's lag, ownership and verdict until stopped (SIGTERM or Ctrl-C).

    One process per cluster. It watches /consumers under the chroot (or the groups --groups
    matches) and re-reads only what a watch says changed; every --interval it asks the brokers
    for all log ends (one request per partition leader) and takes one sample of each group,
    judged by Burrow's rules over --window (as `groups status --watch`). It serves:

    \b
      /metrics                      Prometheus: per partition, per group, and its own health
      /v1/groups                    every group with its status
      /v1/groups/GROUP/status       `groups status --json`'s document over the window
      /v1/groups/GROUP/partitions   that document's partition rows
      /healthz                      200 once it has refreshed and is refreshing

    docs/operating.md lists every metric, the documents' keys and alert rules to go with them
    (zkconsumer/exporter/alerts.yml).

    \b
    Examples:
      zkconsumer exporter --zookeeper zk:2181/kafka --listen :9308
      zkconsumer exporter --zookeeper zk:2181/kafka --groups 'billing-.*' --interval 5 --window 300
    """
    if window < interval:
        raise CliError(f"--window {window:g} is shorter than --interval {interval:g}: no window to judge", EXIT_USAGE)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    with zk_session(zookeeper, zk_digest, zk_timeout) as client, contextlib.ExitStack() as stack:
        bootstrap = brokers.bootstrap_override or bootstrap_from_zookeeper(client, brokers)
        if not bootstrap:
            warn("serving without log ends (no lag)")
        settings = {**legacy_settings(client), **brokers.settings}
        log_ends = (
            # bounded by the interval: an offline partition must not stretch every refresh to --zk-timeout
            stack.enter_context(
                LogEnds(bootstrap, timeout_s=min(zk_timeout, max(1.0, interval / 2)), settings=settings)
            )
            if bootstrap
            else None
        )
        try:
            served = Exporter(
                client,
                log_ends,
                host=listen[0],
                port=listen[1],
                interval_s=interval,
                window_s=window,
                groups=pattern,
                zk_timeout_s=zk_timeout,
                retired_after_s=retired_after * 86400.0,
                expire_group_after_s=expire_after * 86400.0,
            )
        except OSError as exc:
            raise CliError(f"cannot listen on {listen[0]}:{listen[1]}: {exc}", EXIT_USAGE) from None
        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        served.start()
        click.echo(f"zkconsumer exporter: serving http://{listen[0]}:{served.port}/metrics", err=True)
        try:
            while not stop.wait(1.0):
                if not served.http.alive():
                    raise CliError(f"the HTTP server stopped: {served.http.error!r}")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if not served.stop(timeout_s=10.0):
                warn("the exporter's threads did not stop within 10 s")
