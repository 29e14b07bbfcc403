"""Dual commit on the real cluster: both stores agree; a live broker-side group never stops ZooKeeper commits."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer
from prometheus_client import CollectorRegistry, generate_latest

from harness.chaos_producer import SteadyProducer
from harness.members import Recorder, committed_offsets, drain, kafka_offsets
from zkconsumer import ConsumerConnector
from zkconsumer.testing.kafka import end_offsets

pytestmark = pytest.mark.cluster

DUAL = {
    "offsets.storage": "kafka",
    "dual.commit.enabled": True,
    "zookeeper.session.timeout.ms": 6000,
    "rebalance.backoff.ms": 500,
    "rebalance.max.retries": 20,
    "auto.offset.reset": "smallest",
    "consumer.timeout.ms": 200,
}
REJECTED_NAMES = ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS")


def rejected_total(conn: ConsumerConnector) -> float:
    registry = CollectorRegistry()
    registry.register(conn.metrics())
    for line in generate_latest(registry).decode().splitlines():
        if line.startswith("zkconsumer_dual_commit_kafka_failures_total") and 'reason="rejected"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("zkconsumer_dual_commit_kafka_failures_total{reason=rejected} is not exposed")


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.2)


def messages(caplog: pytest.LogCaptureFixture, level: int, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "zkconsumer.offsets.store" and r.levelno == level and text in r.getMessage()
    ]


def test_dual_commit_leaves_both_stores_equal(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 60, partitions=2)
    recorder = Recorder()
    with ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **DUAL, "auto.commit.enable": False}
    ) as conn:
        drain("m", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_until(lambda: recorder.count() >= 60, 30, "all 60 messages delivered")
        conn.commit_offsets()
        assert committed_offsets(zk, group_id, topic) == {0: 30, 1: 30}
        assert kafka_offsets(cluster.bootstrap_servers, group_id, topic, 2) == {0: 30, 1: 30}
        assert conn.rebalancer.offsets.kafka_rejected == 0


def test_a_broker_member_in_the_group_never_stops_zookeeper_commits(
    cluster, zk, topic_factory, group_id, caplog
) -> None:
    caplog.set_level(logging.DEBUG, logger="zkconsumer.offsets.store")
    topic = topic_factory(partitions=2)
    bootstrap = cluster.bootstrap_servers
    producer = SteadyProducer(bootstrap, {topic: 2}, rate=100, on_ack=lambda *_: None)
    producer.start()
    recorder = Recorder()
    conn = ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group_id,
            **DUAL,
            "auto.commit.enable": True,
            "auto.commit.interval.ms": 300,
        }
    )
    broker_stop = threading.Event()
    broker_got: list[int | None] = []
    try:
        drain("zk-member", conn.create_message_streams({topic: 1})[topic], recorder)
        wait_until(
            lambda: (
                sum(committed_offsets(zk, group_id, topic).values()) > 0
                and bool(kafka_offsets(bootstrap, group_id, topic, 2))
            ),
            30,
            "first dual commits",
        )

        # A broker-coordinated consumer joins the broker-side group with the same id (the mixed phase).
        broker = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group_id,
                "client.id": "broker-member",
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
            }
        )
        broker.subscribe([topic])

        def poll_broker() -> None:
            while not broker_stop.is_set():
                msg = broker.poll(0.2)
                if msg is not None and msg.error() is None:
                    broker_got.append(msg.offset())
            broker.close()  # leaves the broker group: it is Empty again

        broker_thread = threading.Thread(target=poll_broker, name="broker-member", daemon=True)
        broker_thread.start()
        wait_until(lambda: bool(broker_got), 30, "the broker member consumes")
        wait_until(lambda: rejected_total(conn) >= 1, 20, "a rejected Kafka-side commit")

        # While the broker member is there, ZooKeeper commits keep advancing and Kafka's are rejected.
        before, rejected_before = committed_offsets(zk, group_id, topic), rejected_total(conn)
        time.sleep(3)
        after = committed_offsets(zk, group_id, topic)
        assert all(after[p] > before[p] for p in (0, 1)), (before, after)
        assert rejected_total(conn) >= rejected_before + 2  # a commit every 300 ms, each rejected
        warnings = messages(caplog, logging.WARNING, "broker-coordinated consumer group")
        assert len(warnings) == 1, warnings
        assert f"group {group_id}" in warnings[0] and "client.id=broker-member" in warnings[0]
        assert "ZooKeeper commits continue" in warnings[0]
        assert any(name in warnings[0] for name in REJECTED_NAMES)
        if cluster.kafka.version == "3.9.1":  # what 3.9.1 answers a simple commit in a non-empty group
            assert "UNKNOWN_MEMBER_ID" in warnings[0]
        assert not messages(caplog, logging.INFO, "succeed again")

        # The broker member leaves: Kafka-side commits succeed again and catch up with ZooKeeper.
        broker_stop.set()
        broker_thread.join(30)
        wait_until(
            lambda: bool(messages(caplog, logging.INFO, "succeed again")), 20, "Kafka-side commits succeed again"
        )
        producer.stop()
        ends = {p: high for p, (_, high) in end_offsets(bootstrap, topic).items()}
        wait_until(lambda: committed_offsets(zk, group_id, topic) == ends, 30, f"ZooKeeper offsets reach {ends}")
        wait_until(lambda: kafka_offsets(bootstrap, group_id, topic, 2) == ends, 30, f"Kafka offsets reach {ends}")
        assert len(messages(caplog, logging.WARNING, "broker-coordinated consumer group")) == 1
        assert not recorder.errors
    finally:
        broker_stop.set()
        producer.stop()
        conn.shutdown()
