"""`zkconsumer consume`: the old console consumer (kafka-console-consumer --zookeeper) on ConsumerConnector."""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import click
from kazoo.client import KazooClient

from zkconsumer.cli.common import (
    EXIT_USAGE,
    CliError,
    children,
    expected_errors,
    member_count,
    warn,
    zk_options,
    zk_session,
)
from zkconsumer.cli.formats import InputError, parse_key_value
from zkconsumer.cli.messages import PrintOptions, format_message, message_json
from zkconsumer.config.consumer_config import ConfigError, ConsumerConfig, merge
from zkconsumer.config.properties import parse_properties
from zkconsumer.consumer.stream import ConsumerError, ConsumerTimeout
from zkconsumer.coordinator.subscription import Blacklist, TopicFilter, Whitelist
from zkconsumer.zookeeper import znodes

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
    return merge(props, extra)


def _has_offsets(client: KazooClient, group: str) -> bool:
    return any(children(client, znodes.offsets_path(group, t)) for t in children(client, znodes.offsets_path(group)))


class _Stop:
    """SIGINT/SIGTERM: the first raises KeyboardInterrupt in the main thread; during cleanup a second one
    exits at once."""

    def __init__(self) -> None:
        self.cleaning = False
        self._saved: dict[int, Any] = {}

    def _handler(self, signum: int, _frame: Any) -> None:
        if self.cleaning:
            os.write(2, b"zkconsumer: interrupted again during shutdown; exiting without cleanup\n")
            os._exit(128 + signum)
        raise KeyboardInterrupt

    def __enter__(self) -> _Stop:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._saved[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._saved.items():
            signal.signal(sig, previous)


def _messages(stream: Any) -> Iterator[Any]:
    """The stream's messages; ends on consumer.timeout.ms (ConsumerTimeout)."""
    try:
        yield from stream
    except ConsumerTimeout:
        return


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
    "--from-beginning",
    is_flag=True,
    help="Start at the oldest message when the group has no offset (auto.offset.reset=smallest); "
    "default: only new messages (largest).",
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
    help="A consumer property (repeatable; overrides --consumer.config).",
)
@click.option(
    "--property",
    "print_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Output format: print.key, print.timestamp, print.partition, print.offset (true|false), "
    "key.separator (default a tab), line.separator.",
)
@click.option(
    "--delete-consumer-offsets",
    is_flag=True,
    help="Delete the group's ZooKeeper data (offsets) before starting; refused while it has members.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object per message: topic, partition, offset, timestamp, key, value.",
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

    \b
    Examples:
      zkconsumer consume --zookeeper zk:2181/kafka --topic orders --from-beginning --max-messages 10
      zkconsumer consume --zookeeper zk:2181/kafka --whitelist 'metrics.*' --group dashboards \\
          --property print.key=true --property print.offset=true
      zkconsumer consume --zookeeper zk:2181/kafka --topic orders --timeout-ms 5000 --json
    """
    topic_filter = _topic_filter(topic, whitelist, blacklist)
    try:
        printing = PrintOptions.from_properties(dict(parse_key_value(p, "--property") for p in print_properties))
    except InputError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    props = _properties(consumer_config, consumer_properties)
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
    with zk_session(zookeeper, zk_digest, zk_timeout) as client:
        if delete_consumer_offsets and client.exists(znodes.group_path(group)):
            if member_count(client, group):
                raise CliError(f"cannot delete the offsets of group {group!r}: it has live members")
            client.delete(znodes.group_path(group), recursive=True)
        elif from_beginning and not temporary and _has_offsets(client, group):
            raise CliError(PREVIOUS_OFFSETS.format(group=group))
        try:
            count = _run(config, topic_filter, max_messages, _writer(as_json, printing))
        finally:
            if temporary:
                _delete_group(client, group)
    click.echo(f"Processed a total of {count} messages", err=True)


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


def _writer(as_json: bool, printing: PrintOptions) -> Callable[[Any], None]:
    out = sys.stdout.buffer  # what click.get_binary_stream("stdout") returned (deprecated in click 8.5)

    def write(msg: Any) -> None:
        out.write((message_json(msg) + "\n").encode("utf-8") if as_json else format_message(msg, printing))
        out.flush()

    return write


def _silence_stdout() -> None:
    """After EPIPE (`consume | head`): point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _run(
    config: ConsumerConfig, topic_filter: TopicFilter, max_messages: int | None, write: Callable[[Any], None]
) -> int:
    from zkconsumer.connector import ConsumerConnector
    from zkconsumer.coordinator.listener import ConsumerRebalanceFailed

    count = 0
    stop = _Stop()
    with stop:
        try:
            connector = ConsumerConnector(config)
        except ConnectionError as exc:
            raise CliError(str(exc)) from None
        started = False
        try:
            stream = connector.create_message_streams_by_filter(topic_filter, 1)[0]
            started = True
            for msg in _messages(stream):
                write(msg)
                count += 1
                if max_messages is not None and count >= max_messages:
                    break
        except KeyboardInterrupt:
            pass
        except BrokenPipeError:
            _silence_stdout()
        except (ConsumerError, ConsumerRebalanceFailed) as exc:
            raise CliError(f"consumer failed: {exc}") from None
        finally:
            stop.cleaning = True
            try:
                if started and config.auto_commit_enable:
                    connector.commit_offsets()  # every printed message counts as consumed
            except Exception as exc:  # noqa: BLE001 - report and still leave the group
                warn(f"final commit failed: {exc}")
            connector.shutdown()
    return count


def _delete_group(client: KazooClient, group: str) -> None:
    """The original deleted /consumers/<console-consumer-N> on exit; we skip it if someone else joined."""
    if member_count(client, group):
        warn(f"not deleting /consumers/{group}: other members joined it")
        return
    try:
        client.delete(znodes.group_path(group), recursive=True)
    except Exception as exc:  # noqa: BLE001 - best effort, like the original shutdown hook
        warn(f"could not delete /consumers/{group}: {exc}")
