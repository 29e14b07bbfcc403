"""Prometheus exposition of a connector snapshot: names, labels and values."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from zkconsumer.coordinator.watchdog import Watchdog
from zkconsumer.metrics import ConnectorCollector, Snapshot


def scrape(snapshot: Snapshot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(ConnectorCollector(lambda: snapshot, "billing-1", "billing"))
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


IDS = (("client_id", "billing-1"), ("group_id", "billing"))


def test_every_value_of_the_snapshot_is_exposed_with_its_labels() -> None:
    samples = scrape(
        Snapshot(
            rebalances_succeeded=4,
            rebalances_failed=1,
            rebalance_last_seconds=0.25,
            rebalance_failing_runs=2,
            owned={"orders": 3, "payments": 1},
            queued_chunks={"orders/c-0": 2},
            zookeeper_commits=17,
            kafka_commits=0,
            watchdog_alerts=5,
            ownership_problems=2,
        )
    )
    assert samples[("zkconsumer_rebalances_total", IDS + (("result", "succeeded"),))] == 4
    assert samples[("zkconsumer_rebalances_total", IDS + (("result", "failed"),))] == 1
    assert samples[("zkconsumer_rebalance_last_seconds", IDS)] == 0.25
    assert samples[("zkconsumer_rebalance_failing", IDS)] == 2
    assert samples[("zkconsumer_owned_partitions", tuple(sorted(IDS + (("topic", "orders"),))))] == 3
    assert samples[("zkconsumer_owned_partitions", tuple(sorted(IDS + (("topic", "payments"),))))] == 1
    assert samples[("zkconsumer_fetch_queue_chunks", tuple(sorted(IDS + (("stream", "orders/c-0"),))))] == 2
    assert samples[("zkconsumer_zookeeper_commits_total", IDS)] == 17
    assert samples[("zkconsumer_kafka_commits_total", IDS)] == 0
    assert samples[("zkconsumer_watchdog_alerts_total", IDS)] == 5
    assert samples[("zkconsumer_ownership_problems", IDS)] == 2


def test_the_snapshot_is_taken_at_scrape_time() -> None:
    values = iter([Snapshot(zookeeper_commits=1), Snapshot(zookeeper_commits=9)])
    registry = CollectorRegistry()
    registry.register(ConnectorCollector(lambda: next(values), "c", "g"))
    assert b'zkconsumer_zookeeper_commits_total{client_id="c",group_id="g"} 1.0' in generate_latest(registry)
    assert b'zkconsumer_zookeeper_commits_total{client_id="c",group_id="g"} 9.0' in generate_latest(registry)


def test_watchdog_counts_alerts_only_for_problems_that_persist() -> None:
    seen = iter([["t-0 has no owner"], ["t-0 has no owner", "t-1 has no owner"], []])
    triggered: list[str] = []
    dog = Watchdog("g_c1", interval_s=60, check=lambda: next(seen), trigger=triggered.append)
    dog.run_once()  # first sighting: maybe a rebalance in flight
    assert (dog.alerts, dog.problems, triggered) == (0, [], [])
    dog.run_once()  # seen twice: warn, count, rebalance
    assert (dog.alerts, dog.problems) == (1, ["t-0 has no owner"])
    assert triggered == ["watchdog: t-0 has no owner"]
    dog.run_once()  # repaired
    assert (dog.alerts, dog.problems) == (1, [])
