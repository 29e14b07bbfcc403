"""`consume --partition`: one partition read from the brokers directly (assign(), as kafka-console-consumer
--partition does): no group, nothing committed, nothing written to ZooKeeper."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.offset_plan import describe_partitions, topic_layout
from zkconsumer.admin.offset_targets import range_problem
from zkconsumer.cli.brokers import (
    LIBRDKAFKA_LOG,
    BrokerAccess,
    bootstrap_from_zookeeper,
    legacy_settings,
    open_watermarks,
)
from zkconsumer.cli.common import EXIT_USAGE, CliError, warn
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import run_bounded


def _give_up_codes() -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART})


_GIVE_UP = _give_up_codes()


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


def start_offset(client: KazooClient, access: BrokerAccess, topic: str, partition: int, offset: int | str) -> int:
    """Where to start reading: the partition must exist and a numeric offset lie in its log."""
    try:
        znodes.topic_path(topic)
    except ValueError:
        raise CliError(f"invalid topic name {topic!r} (--partition takes one topic, not a regex)", EXIT_USAGE) from None
    partitions, epoch = topic_layout(client, [topic])[topic]
    if epoch is None:
        raise CliError(f"no such topic {topic!r} (no {znodes.topic_path(topic)})", EXIT_USAGE)
    if partition not in partitions:
        raise CliError(
            f"topic {topic} has no partition {partition} (its partitions: {describe_partitions(partitions)})",
            EXIT_USAGE,
        )
    with open_watermarks(client, access, quiet=True) as marks:
        log = marks.offsets([(topic, partition)])
        if (topic, partition) not in log:
            reason = marks.reason or marks.unanswered.get((topic, partition), "no answer")
            raise CliError(f"cannot read the log offsets of {topic}-{partition}: {reason}")
    low, high = log[(topic, partition)]
    if offset == "earliest":
        return low
    if offset == "latest":
        return high
    assert isinstance(offset, int)
    problem = range_problem(offset, low, high)
    if problem is not None:
        raise CliError(f"--offset: {topic}-{partition}: {problem}", EXIT_USAGE)
    return offset


def read_partition(
    client: KazooClient,
    config: ConsumerConfig,
    topic: str,
    partition: int,
    offset: int | str,
    max_messages: int | None,
    timeout_ms: int | None,
    write: Callable[[Any], None],
) -> int:
    """Print messages of one partition from `offset` on; returns how many were printed."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    access = BrokerAccess(None, config.librdkafka_overrides, config.broker_listener)
    begin = start_offset(client, access, topic, partition, offset)
    bootstrap = bootstrap_from_zookeeper(client, access)
    if not bootstrap:
        raise CliError("no broker endpoint under /brokers/ids to read from")
    consumer = Consumer(
        {
            **legacy_settings(client),
            **access.settings,
            "bootstrap.servers": bootstrap,
            "group.id": f"zkconsumer-console-{uuid.uuid4().hex[:12]}",  # never joined, nothing committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "log.connection.close": False,
            "logger": LIBRDKAFKA_LOG,
        }
    )
    count = 0
    reported: set[str] = set()
    try:
        consumer.assign([TopicPartition(topic, partition, begin)])
        last = time.monotonic()
        while max_messages is None or count < max_messages:
            msg = consumer.poll(0.2)
            if msg is None:
                if timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                    break
                continue
            error = msg.error()
            if error is not None:
                if error.fatal() or error.code() in _GIVE_UP:
                    raise CliError(f"reading {topic}-{partition} failed: {error.str()}")
                if error.str() not in reported:  # a broker going away and coming back: say it once
                    reported.add(error.str())
                    warn(f"reading {topic}-{partition}: {error.str()}")
                continue
            write(msg)
            count += 1
            last = time.monotonic()
    except KafkaException as exc:
        raise CliError(f"reading {topic}-{partition} failed: {exc}") from None
    finally:
        run_bounded(consumer.close, 10.0, "zkconsumer-close-console")
    return count
