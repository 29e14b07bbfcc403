"""The `zkconsumer` command: wires the subcommands together, sets up logging, maps errors to exit codes."""

from __future__ import annotations

import logging
import sys

import click

from zkconsumer.cli.lazy_group import LazyGroup
from zkconsumer.version import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
# command -> "module:attribute", imported only when that command runs (or a listing shows its help):
# `zkconsumer offsets reset` loads the offsets commands, not consume's or migrate's.
NOUNS = {
    "consume": "zkconsumer.cli.consume:consume",
    "exporter": "zkconsumer.cli.exporter:exporter",
    "groups": "zkconsumer.cli.groups:groups",
    "migrate": "zkconsumer.cli.migrate:migrate",
    "offsets": "zkconsumer.cli.offsets:offsets",
    "top": "zkconsumer.cli.top:top",
    "verify": "zkconsumer.cli.verify:verify",
}


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_zkconsumer_cli", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("zkconsumer: %(levelname)s %(name)s: %(message)s"))
    handler._zkconsumer_cli = True  # type: ignore[attr-defined]  # our mark, found again by the loop above
    root.addHandler(handler)
    root.setLevel(level)
    # kazoo reports every refused connection attempt; the tools say it once, in one line.
    logging.getLogger("kazoo").setLevel(logging.CRITICAL if verbose < 2 else logging.DEBUG)


@click.group(cls=LazyGroup, lazy=NOUNS, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="zkconsumer")
@click.option("-v", "--verbose", count=True, help="Log more to stderr (-vv: debug, including kazoo).")
def cli(verbose: int) -> None:
    """Ops tools for Kafka's legacy ZooKeeper-coordinated consumer groups (/consumers/<group>).

    They replace the Scala-era tools and work on groups of zkconsumer members, Scala consumers
    (0.8-1.1) or both:

    \b
      consume          kafka-console-consumer --zookeeper (a group member: writes at once)
      groups list      kafka-consumer-groups --zookeeper --list
      groups describe  kafka-consumer-groups --zookeeper --describe, ConsumerOffsetChecker
      groups delete    kafka-consumer-groups --zookeeper --delete (plan first; deletes with --execute)
      groups rebalance every member rebalances, Scala ones too, none restarted (plan first; --execute)
      groups status    lag verdicts per partition and group (Burrow's rules over a --watch window)
      offsets export   ExportZkOffsets
      offsets import   ImportZkOffsets (plan first; writes with --execute)
      offsets reset    UpdateOffsetsInZK and more (plan first; writes with --execute)
      migrate plan     a group's ZooKeeper and broker sides, and what moving it would do
      migrate offsets  copy offsets ZooKeeper <-> brokers (plan first; writes with --execute)
      verify           VerifyConsumerRebalance, plus zombie and duplicate checks
      top              a live view of members, lag and throughput
      exporter         every group's lag and ownership for Prometheus, and a JSON API (runs until stopped)

    Every command takes --zookeeper HOST:PORT[/CHROOT] (or env ZKCONSUMER_ZOOKEEPER), --zk-digest
    USER:PASSWORD (or env ZKCONSUMER_ZK_DIGEST) and --zk-timeout SECONDS (default 10), and refuses
    a chroot without /brokers ("wrong chroot?") before reading or writing anything. --json always
    means JSON output, one document per line. Commands only write where their help says so.

    Exit status: 0 ok, 1 a problem was found (or an expected error such as an unknown group or
    unreachable ZooKeeper, printed as one line), 2 a usage error, a bad input file or row, or a
    wrong chroot (nothing written); `migrate` adds 3: blocked.

    \b
    Examples:
      export ZKCONSUMER_ZOOKEEPER=zk1:2181,zk2:2181/kafka
      zkconsumer groups list
      zkconsumer groups describe --group billing
      zkconsumer verify --group billing
      zkconsumer consume --topic orders --from-beginning --max-messages 5
    """
    _setup_logging(verbose)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`zkconsumer = zkconsumer.cli.main:main`)."""
    cli.main(args=argv, prog_name="zkconsumer")


if __name__ == "__main__":
    main()
