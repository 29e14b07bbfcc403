"""Look up the broker-side consumer group with our id (describe_consumer_groups), bounded by a timeout: what the brokers say of it (BrokerGroupView)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from zkconsumer.consumer.log_throttle import throttled_logger

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrokerMember:
    client_id: str
    host: str
    member_id: str


@dataclass(frozen=True)
class BrokerGroupView:
    """What describe_consumer_groups said about the broker-side group with our id."""

    state: str  # Empty, Stable, PreparingRebalance, ...
    members: tuple[BrokerMember, ...] = ()


# Consumer-only librdkafka properties the fetcher sets; an AdminClient (a producer-type handle)
# would log a configuration warning for each. Connection and security settings pass through.
_CONSUMER_ONLY = frozenset(
    {
        "group.id",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "auto.offset.reset",
        "enable.partition.eof",
        "max.partition.fetch.bytes",
        "fetch.max.bytes",
        "fetch.min.bytes",
        "fetch.wait.max.ms",
        "queued.max.messages.kbytes",
        "queued.min.messages",
        "fetch.queue.backoff.ms",
        "error_cb",
        "logger",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "partition.assignment.strategy",
        "group.instance.id",
        "isolation.level",
        "check.crcs",
        "auto.commit.interval.ms",
        "max.poll.interval.ms",
    }
)


# The names Kafka itself gives the states (kafka-consumer-groups.sh prints these).
STATE_NAMES = {
    "EMPTY": "Empty",
    "STABLE": "Stable",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "DEAD": "Dead",
    "UNKNOWN": "Unknown",
}


def state_name(state: object) -> str:
    """Kafka's own name of a confluent-kafka ConsumerGroupState (e.g. PreparingRebalance)."""
    return STATE_NAMES.get(getattr(state, "name", str(state)), str(state))


def admin_config(consumer_config: Mapping[str, object]) -> dict[str, object]:
    """An AdminClient configuration reaching the same brokers, the same way, as a fetcher's Consumer."""
    conf = {k: v for k, v in consumer_config.items() if k not in _CONSUMER_ONLY}
    conf["logger"] = throttled_logger(f"{log.name}.librdkafka")
    return conf


def describe_broker_group(config: Mapping[str, object], group: str, timeout_s: float) -> BrokerGroupView | None:
    """The broker-side group's state and members, or None when the brokers do not say within `timeout_s`
    (the caller's report then says so; this lookup never fails a commit)."""
    if timeout_s <= 0:
        return None
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient(dict(config))  # type: ignore[arg-type]  # the stubs know no "logger" object values
        future = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
        found = future.result(timeout=timeout_s + 1.0)  # the request's own timeout fires first
    except Exception as exc:  # noqa: BLE001 - only decorates a warning: any failure means "unknown"
        log.debug("describing broker-side group %s failed: %r", group, exc)
        return None
    state = state_name(found.state)
    members = tuple(
        BrokerMember(client_id=m.client_id or "", host=m.host or "", member_id=m.member_id or "") for m in found.members
    )
    return BrokerGroupView(state=state, members=members)
