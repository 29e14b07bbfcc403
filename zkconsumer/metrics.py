"""Prometheus metrics of one connector, read at scrape time (the legacy MBeans' counterparts).

Example::

    from prometheus_client import REGISTRY, start_http_server
    connector = ConsumerConnector({...})
    streams = connector.create_message_streams({"orders": 2})
    REGISTRY.register(connector.metrics())
    start_http_server(9108)

Nothing is counted on the hot path: the collector asks the connector for a `Snapshot` when
scraped, so several connectors in one process each register their own collector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


@dataclass(frozen=True)
class Snapshot:
    """Counters and gauges of one connector at one moment (see `families`)."""

    rebalances_succeeded: int = 0
    rebalances_failed: int = 0  # rounds of rebalance.max.retries attempts that all failed
    rebalance_last_seconds: float = 0.0
    rebalance_failing_runs: int = 0  # failed rounds in a row right now (0: healthy)
    owned: Mapping[str, int] = field(default_factory=dict)  # topic -> owned partitions
    queued_chunks: Mapping[str, int] = field(default_factory=dict)  # stream name -> chunks
    zookeeper_commits: int = 0
    kafka_commits: int = 0
    commit_failures: int = 0  # offset commits that raised after their retries
    kafka_commits_rejected: int = 0  # dual commit: Kafka side rejected by a live broker-side group
    kafka_commit_errors: int = 0  # dual commit: Kafka side failed otherwise (broker down, timeout)
    watchdog_alerts: int = 0  # checks that found a persistent ownership problem
    ownership_problems: int = 0  # persistent problems at the last check
    ignored_peers: int = 0  # members whose registration we cannot evaluate


def families(snap: Snapshot, client_id: str, group_id: str) -> list[Metric]:
    """The metric families of a snapshot (pure), labelled by client and group."""
    base = ["client_id", "group_id"]
    ids = [client_id, group_id]

    def counter(name: str, doc: str, value: float) -> Metric:
        family = CounterMetricFamily(name, doc, labels=base)
        family.add_metric(ids, value)
        return family

    def gauge(name: str, doc: str, value: float) -> Metric:
        family = GaugeMetricFamily(name, doc, labels=base)
        family.add_metric(ids, value)
        return family

    rebalances = CounterMetricFamily(
        "zkconsumer_rebalances", "Rebalances by result (RebalanceRateAndTime)", labels=base + ["result"]
    )
    rebalances.add_metric(ids + ["succeeded"], snap.rebalances_succeeded)
    rebalances.add_metric(ids + ["failed"], snap.rebalances_failed)
    owned = GaugeMetricFamily(
        "zkconsumer_owned_partitions", "Partitions this member owns (OwnedPartitionsCount)", labels=base + ["topic"]
    )
    for topic, count in sorted(snap.owned.items()):
        owned.add_metric(ids + [topic], count)
    queued = GaugeMetricFamily(
        "zkconsumer_fetch_queue_chunks", "Chunks waiting in a stream (FetchQueueSize)", labels=base + ["stream"]
    )
    for stream, chunks in sorted(snap.queued_chunks.items()):
        queued.add_metric(ids + [stream], chunks)
    dual = CounterMetricFamily(
        "zkconsumer_dual_commit_kafka_failures",
        "Dual commit: Kafka-side commits that failed while ZooKeeper was written (rejected: a broker-coordinated "
        "group with the same id is active; transient: broker down, timeout)",
        labels=base + ["reason"],
    )
    dual.add_metric(ids + ["rejected"], snap.kafka_commits_rejected)
    dual.add_metric(ids + ["transient"], snap.kafka_commit_errors)
    return [
        rebalances,
        gauge(
            "zkconsumer_rebalance_last_seconds",
            "Duration of the last successful rebalance",
            snap.rebalance_last_seconds,
        ),
        gauge(
            "zkconsumer_rebalance_failing",
            "Failed rebalance rounds in a row; non-zero means this member is retrying (alert on it)",
            snap.rebalance_failing_runs,
        ),
        owned,
        queued,
        counter("zkconsumer_zookeeper_commits", "Offset znode writes (ZooKeeperCommitsPerSec)", snap.zookeeper_commits),
        counter(
            "zkconsumer_kafka_commits", "Partitions sent in Kafka commits (KafkaCommitsPerSec)", snap.kafka_commits
        ),
        counter(
            "zkconsumer_commit_failures",
            "Offset commits that failed after their retries (messages since the last commit may repeat)",
            snap.commit_failures,
        ),
        dual,
        gauge(
            "zkconsumer_ignored_peers",
            "Group members whose registration this member cannot evaluate and leaves out of the assignment",
            snap.ignored_peers,
        ),
        counter(
            "zkconsumer_watchdog_alerts",
            "Watchdog checks that found a persistent unowned/zombie/drift problem and rebalanced",
            snap.watchdog_alerts,
        ),
        gauge(
            "zkconsumer_ownership_problems",
            "Persistent ownership problems at the last watchdog check",
            snap.ownership_problems,
        ),
    ]


class ConnectorCollector(Collector):
    """A prometheus_client collector over one connector's `Snapshot` source."""

    def __init__(self, snapshot: Callable[[], Snapshot], client_id: str, group_id: str) -> None:
        self._snapshot = snapshot
        self._client_id = client_id
        self._group_id = group_id

    def collect(self) -> Iterator[Metric]:
        yield from families(self._snapshot(), self._client_id, self._group_id)
