"""`zkconsumer consume`: the old console consumer (kafka-console-consumer --zookeeper) on ConsumerConnector."""

from __future__ import annotations

import random
import warnings

import click
from kazoo.client import KazooClient

from zkconsumer.admin import (
    InputError,
    delete_console_group,
    group_exists,
    member_count,
    read_partition,
    run_console_member,
)
from zkconsumer.cli.common import EXIT_USAGE, CliError, expected_errors, warn, zk_session
from zkconsumer.cli.consume_run import Stop, count_until_stopped, writer
from zkconsumer.cli.formats import parse_key_value
from zkconsumer.cli.options import zk_options
from zkconsumer.cli.output.messages import PrintOptions
from zkconsumer.config.checks import ConfigError
from zkconsumer.config.consumer_config import ConsumerConfig, merge
from zkconsumer.config.properties import parse_properties
from zkconsumer.coordinator.subscription import Blacklist, TopicFilter, Whitelist
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import children, delete_tree

RESET_ALIASES = {"earliest": "smallest", "latest": "largest"}
PREVIOUS_OFFSETS = (
    "Found previous offset information for this group {group}. Please use "
    "--delete-consumer-offsets to delete previous offsets metadata"
)


def _topic_filter(topic: str | None, whitelist: str | None, blacklist: str | None) -> TopicFilter:
    given = [
        (name, value)
        for name, value in (("--topic", topic), ("--whitelist", whitelist), ("--blacklist", blacklist))
        if value is not None
    ]
    if len(given) != 1:
        raise CliError("give exactly one of --topic, --whitelist, --blacklist", EXIT_USAGE)
    name, value = given[0]
    try:
        return Blacklist(value) if name == "--blacklist" else Whitelist(value)
    except ValueError as exc:
        raise CliError(f"{name}: {exc}", EXIT_USAGE) from None


def _properties(config_file: str | None, consumer_properties: tuple[str, ...]) -> dict[str, str]:
    props: dict[str, str] = {}
    if config_file is not None:
        try:
            with open(config_file, encoding="iso-8859-1") as handle:
                props = parse_properties(handle.read())
        except (OSError, ValueError) as exc:
            raise CliError(f"--consumer.config {config_file}: {exc}", EXIT_USAGE) from None
    try:
        extra = dict(parse_key_value(p, "--consumer-property") for p in consumer_properties)
    except InputError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    merged = merge(props, extra)
    reset = str(merged.get("auto.offset.reset", "")).strip().lower()
    if reset in RESET_ALIASES:  # the new consumer's names, as kafka-console-consumer takes them
        merged["auto.offset.reset"] = RESET_ALIASES[reset]
    return merged


def parse_offset(text: str | None) -> int | str | None:
    """--offset: a non-negative number, earliest or latest (None: not given)."""
    if text is None:
        return None
    value = text.strip().lower()
    if value in ("earliest", "latest"):
        return value
    if value.isdigit():
        return int(value)
    raise CliError(f"--offset {text!r}: expected a non-negative number, earliest or latest", EXIT_USAGE)


def _has_offsets(client: KazooClient, group: str) -> bool:
    return any(children(client, znodes.offsets_path(group, t)) for t in children(client, znodes.offsets_path(group)))


@click.command("consume")
@zk_options
@click.option("--topic", "-t", metavar="TOPIC", help="Topic to consume (a whitelist regex, as in the original).")
@click.option("--whitelist", metavar="REGEX", help="Consume every topic matching REGEX (now and later).")
@click.option("--blacklist", metavar="REGEX", help="Consume every topic NOT matching REGEX.")
@click.option(
    "--group",
    "-g",
    metavar="GROUP",
    help="Consumer group. Default: group.id from the properties, else console-consumer-<random>, which "
    "is deleted from ZooKeeper on exit.",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    metavar="N",
    help="Read only partition N of --topic, straight from the brokers (no group: nothing is committed "
    "or written to ZooKeeper), from the log end unless --offset or --from-beginning.",
)
@click.option(
    "--offset",
    "offset_text",
    metavar="OFFSET",
    help="With --partition: where to start, a number inside the log, earliest or latest (default: latest).",
)
@click.option(
    "--from-beginning",
    is_flag=True,
    help="Start at the oldest message when the group has no offset (auto.offset.reset=smallest, or "
    "earliest); default: only new messages (largest).",
)
@click.option("--max-messages", type=click.IntRange(min=1), metavar="N", help="Exit after N messages.")
@click.option(
    "--timeout-ms",
    type=int,
    metavar="MS",
    help="Exit when no message arrives for MS milliseconds (consumer.timeout.ms).",
)
@click.option(
    "--consumer.config",
    "consumer_config",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Legacy consumer .properties file.",
)
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A consumer property (repeatable; overrides --consumer.config). auto.offset.reset takes "
    "earliest|latest as well as smallest|largest.",
)
@click.option(
    "--property",
    "print_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Output format, as kafka-console-consumer's: print.timestamp, print.partition, print.offset, "
    "print.headers, print.key, print.value (true|false), key.separator (default a tab), "
    "line.separator, headers.separator, headers.key.separator, null.literal.",
)
@click.option(
    "--delete-consumer-offsets",
    is_flag=True,
    help="Delete the group's ZooKeeper data (offsets) before starting, as the original did: this "
    "writes at once. Refused while the group has members.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object per message: topic, partition, offset, timestamp, key, value (and headers).",
)
@expected_errors
def consume(
    zookeeper: str,
    zk_digest: str | None,
    zk_timeout: float,
    topic: str | None,
    whitelist: str | None,
    blacklist: str | None,
    group: str | None,
    partition: int | None,
    offset_text: str | None,
    from_beginning: bool,
    max_messages: int | None,
    timeout_ms: int | None,
    consumer_config: str | None,
    consumer_properties: tuple[str, ...],
    print_properties: tuple[str, ...],
    delete_consumer_offsets: bool,
    as_json: bool,
) -> None:
    """Print messages to stdout as a member of a ZooKeeper consumer group (the old console consumer).

    Values are written raw, one per line (or as JSON lines with --json); diagnostics go to stderr.
    Ctrl-C or SIGTERM stops cleanly: the printed messages are committed and the group is left.
    With --from-beginning and a named group that already has offsets, it stops with the original's
    "Found previous offset information..." message unless --delete-consumer-offsets is given.

    THIS WRITES at once, as the console consumer did, because joining the group is its job: it
    registers under /consumers/<group>/ids, claims partitions and commits what it printed (a
    console-consumer-<random> group is deleted again on exit), and --delete-consumer-offsets
    deletes the group's data first. --partition joins no group and writes nothing.

    \b
    Examples:
      zkconsumer consume --zookeeper zk:2181/kafka --topic orders --from-beginning --max-messages 10
      zkconsumer consume --zookeeper zk:2181/kafka --whitelist 'metrics.*' --group dashboards \\
          --property print.key=true --property print.offset=true
      zkconsumer consume --zookeeper zk:2181/kafka --topic orders --timeout-ms 5000 --json
      zkconsumer consume --zookeeper zk:2181/kafka --topic orders --partition 3 --offset 1200 --max-messages 1
    """
    topic_filter = _topic_filter(topic, whitelist, blacklist)
    offset = parse_offset(offset_text)
    _check_partition_options(partition, offset, topic, group, from_beginning, delete_consumer_offsets)
    try:
        printing = PrintOptions.from_properties(dict(parse_key_value(p, "--property") for p in print_properties))
    except InputError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    props = _properties(consumer_config, consumer_properties)
    if from_beginning and props.get("auto.offset.reset", "smallest") != "smallest":
        raise CliError(
            f"--from-beginning and auto.offset.reset={props['auto.offset.reset']} contradict each other: give one",
            EXIT_USAGE,
        )
    group = group or props.get("group.id")
    temporary = group is None
    group = group or f"console-consumer-{random.randint(0, 99999)}"
    try:
        znodes.group_path(group)
    except ValueError:
        raise CliError(f"invalid group name {group!r}", EXIT_USAGE) from None
    layers = {
        "zookeeper.connect": zookeeper,
        "group.id": group,
        "zookeeper.connection.timeout.ms": props.get("zookeeper.connection.timeout.ms", str(int(zk_timeout * 1000))),
        "auto.offset.reset": "smallest" if from_beginning else props.get("auto.offset.reset", "largest"),
        "consumer.timeout.ms": None if timeout_ms is None else str(timeout_ms),
        "zkconsumer.zookeeper.digest": zk_digest,
    }
    config = _config(merge(props, layers))
    write = writer(as_json, printing)
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:  # refuses a chroot without /brokers
        if partition is not None:
            assert topic is not None
            with Stop():
                count = count_until_stopped(
                    lambda counted: read_partition(
                        client,
                        config,
                        topic,
                        partition,
                        offset if offset is not None else ("earliest" if from_beginning else "latest"),
                        max_messages,
                        timeout_ms,
                        counted,
                        warn=warn,
                    ),
                    write,
                )
            click.echo(f"Processed a total of {count} messages", err=True)
            return
        if delete_consumer_offsets and group_exists(client, group):
            if member_count(client, group):
                raise CliError(f"cannot delete the offsets of group {group!r}: it has live members")
            delete_tree(client, znodes.group_path(group))
        elif from_beginning and not temporary and _has_offsets(client, group):
            raise CliError(PREVIOUS_OFFSETS.format(group=group))
        _warn_if_nothing_matches(client, topic_filter)
        stop = Stop()
        try:
            with stop:
                count = run_console_member(
                    config,
                    topic_filter,
                    max_messages,
                    write,
                    ends=(KeyboardInterrupt, BrokenPipeError),
                    on_end=stop.after,
                    on_leaving=stop.cleanup_begins,
                    warn=warn,
                )
        finally:
            if temporary:
                delete_console_group(client, group, warn=warn)
    click.echo(f"Processed a total of {count} messages", err=True)


def _check_partition_options(
    partition: int | None,
    offset: int | str | None,
    topic: str | None,
    group: str | None,
    from_beginning: bool,
    delete_consumer_offsets: bool,
) -> None:
    """kafka-console-consumer's rules for --partition and --offset."""
    if partition is None:
        if offset is not None:
            raise CliError("--offset needs --partition (a group starts where it committed)", EXIT_USAGE)
        return
    if topic is None:
        raise CliError("--partition needs --topic (one topic, not --whitelist/--blacklist)", EXIT_USAGE)
    if group is not None or delete_consumer_offsets:
        raise CliError("--partition reads without a group: drop --group/--delete-consumer-offsets", EXIT_USAGE)
    if from_beginning and offset is not None:
        raise CliError("--from-beginning and --offset contradict each other: give one", EXIT_USAGE)


def _warn_if_nothing_matches(client: KazooClient, topic_filter: TopicFilter) -> None:
    topics = children(client, znodes.BROKER_TOPICS)
    if not any(topic_filter.is_topic_allowed(t) for t in topics):
        warn(f"no topic matches {topic_filter.raw_regex!r} yet: waiting for one to be created (Ctrl-C stops)")


def _config(props: dict[str, object]) -> ConsumerConfig:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            config = ConsumerConfig.from_mapping(props)
        except ConfigError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
    for warning in caught:
        warn(str(warning.message))
    return config
