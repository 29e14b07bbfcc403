"""Pure: a broker-coordinated member's librdkafka settings, and which stream each assigned partition feeds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.fetcher.settings import FetchSettings

# The brokers refuse a session below group.min.session.timeout.ms (6 s by default).
MIN_SESSION_TIMEOUT_MS = 6000
TOPIC_REFRESH_MS = 5000
ASSIGNOR = "cooperative-sticky"  # later rebalances revoke only what moves (docs/live-switch.md)
_RESET = {"smallest": "earliest", "largest": "latest"}
# Ours whatever librdkafka.* says: we store and commit offsets ourselves, and the group is group.id.
_MANAGED = ("group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset", "enable.partition.eof")


def consumer_settings(config: ConsumerConfig, bootstrap_servers: str) -> dict[str, object]:
    """The confluent-kafka Consumer settings of a broker-coordinated member: the legacy fetch properties
    mapped as for the ZooKeeper-mode fetcher, plus the group's: group.id, the session timeout (the
    ZooKeeper session's, at least the brokers' minimum), the assignor, auto.offset.reset."""
    overrides = {k: v for k, v in config.librdkafka_overrides.items() if k not in _MANAGED}
    conf = FetchSettings.from_config(config, bootstrap_servers, {}).consumer_config()
    conf.update(
        {
            "group.id": config.group_id,
            "session.timeout.ms": max(MIN_SESSION_TIMEOUT_MS, config.zookeeper_session_timeout_ms),
            "partition.assignment.strategy": ASSIGNOR,
            "auto.offset.reset": _RESET[config.auto_offset_reset],
            # partitions added to a topic are seen within this (librdkafka's default: 5 minutes; the
            # legacy member sees them at once, by a watch)
            "topic.metadata.refresh.interval.ms": TOPIC_REFRESH_MS,
        }
    )
    conf.update(overrides)
    return conf


def managed_overrides(config: ConsumerConfig) -> list[str]:
    """librdkafka.* settings a broker-coordinated member ignores (it manages them), for a warning."""
    return sorted(k for k in config.librdkafka_overrides if k in _MANAGED)


def place(new: Iterable[tuple[str, int]], load: Mapping[int, int], streams: int) -> dict[tuple[str, int], int]:
    """(topic, partition) -> stream index for newly assigned partitions: each goes to the stream
    with the fewest partitions now (ties: the lowest index), in partition order, so a member's
    streams share its partitions as evenly as the legacy thread ids do."""
    if streams < 1:
        raise ValueError("a subscription has at least one stream")
    counts = {i: load.get(i, 0) for i in range(streams)}
    out: dict[tuple[str, int], int] = {}
    for key in sorted(new):
        index = min(counts, key=lambda i: (counts[i], i))
        out[key] = index
        counts[index] += 1
    return out
