"""One partition read from the brokers directly (assign(), as kafka-console-consumer --partition does):
no group, nothing committed, nothing written to ZooKeeper (`zkconsumer consume --partition`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.log_offsets import (
    LIBRDKAFKA_LOG,
    BrokerAccess,
    Warn,
    log_warning,
    open_watermarks,
    reach,
)
from zkconsumer.admin.offset_plan import describe_partitions, topic_layout
from zkconsumer.admin.offset_targets import range_problem
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.errors import AdminUnavailable, AdminUsageError
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import run_bounded


def _give_up_codes() -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART})


_GIVE_UP = _give_up_codes()


@admin_errors  # not on read_partition: what its `write` raises is the caller's own
def start_offset(
    client: KazooClient, access: BrokerAccess, topic: str, partition: int, offset: int | str, warn: Warn = log_warning
) -> int:
    """Where to start reading: the partition must exist and a numeric offset lie in its log (else
    AdminUsageError; AdminUnavailable when the brokers give no log offsets)."""
    try:
        znodes.topic_path(topic)
    except ValueError:
        raise AdminUsageError(f"invalid topic name {topic!r} (--partition takes one topic, not a regex)") from None
    partitions, epoch = topic_layout(client, [topic])[topic]
    if epoch is None:
        raise AdminUsageError(f"no such topic {topic!r} (no {znodes.topic_path(topic)})")
    if partition not in partitions:
        raise AdminUsageError(
            f"topic {topic} has no partition {partition} (its partitions: {describe_partitions(partitions)})"
        )
    with open_watermarks(client, access, quiet=True, warn=warn) as marks:
        log = marks.offsets([(topic, partition)])
        if (topic, partition) not in log:
            reason = marks.reason or marks.unanswered.get((topic, partition), "no answer")
            raise AdminUnavailable(f"cannot read the log offsets of {topic}-{partition}: {reason}")
    low, high = log[(topic, partition)]
    if offset == "earliest":
        return low
    if offset == "latest":
        return high
    assert isinstance(offset, int)
    problem = range_problem(offset, low, high)
    if problem is not None:
        raise AdminUsageError(f"--offset: {topic}-{partition}: {problem}")
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
    warn: Warn = log_warning,
) -> int:
    """Hand each message of one partition from `offset` on to `write` (up to `max_messages`, or until
    none came for `timeout_ms`); returns how many. A broker error that may pass is warned of once;
    one that will not ends the read with AdminUnavailable."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    access = BrokerAccess(None, config.librdkafka_overrides, config.broker_listener)
    begin = start_offset(client, access, topic, partition, offset, warn)
    bootstrap, settings = reach(client, access, warn=warn)
    if not bootstrap:
        raise AdminUnavailable("no broker endpoint under /brokers/ids to read from")
    consumer = Consumer(
        {
            **settings,
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
                    raise AdminUnavailable(f"reading {topic}-{partition} failed: {error.str()}")
                if error.str() not in reported:  # a broker going away and coming back: say it once
                    reported.add(error.str())
                    warn(f"reading {topic}-{partition}: {error.str()}")
                continue
            write(msg)
            count += 1
            last = time.monotonic()
    except KafkaException as exc:
        raise AdminUnavailable(f"reading {topic}-{partition} failed: {exc}") from None
    finally:
        run_bounded(consumer.close, 10.0, "zkconsumer-close-console")
    return count
