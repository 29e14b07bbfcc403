"""Broker-coordinated consumers (confluent-kafka subscribe()) that record what they deliver, for migration tests."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, TopicPartition

Key = tuple[str, int, int]
_LIBRDKAFKA_LOG = logging.getLogger("tests.broker_members.librdkafka")


class BrokerMember:
    """One subscribe() consumer of `group` on its own thread: at-least-once, like a careful user writes it.

    An offset is stored only after the message is recorded, and auto-commit sends stored offsets
    (also on a rebalance and on close). `auto.offset.reset=error`: a partition that has no
    committed offset is an error here, not a silent jump to either end of the log, since a
    migration must hand over a committed offset for every partition.
    """

    def __init__(self, bootstrap: str, group: str, topics: Iterable[str], name: str) -> None:
        self.name = name
        self.deliveries: list[Key] = []
        self.errors: list[str] = []
        self.assigned_once = threading.Event()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "auto.offset.reset": "error",
                "enable.auto.offset.store": False,
                "auto.commit.interval.ms": 1000,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "logger": _LIBRDKAFKA_LOG,
            }
        )
        self._consumer.subscribe(list(topics), on_assign=lambda c, ps: self.assigned_once.set())
        self._thread = threading.Thread(target=self._run, name=f"broker-member-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    with self._lock:
                        self.errors.append(f"{msg.topic()}-{msg.partition()}: {msg.error()}")
                continue
            with self._lock:
                self.deliveries.append((msg.topic(), msg.partition(), msg.offset()))
            self._consumer.store_offsets(message=msg)

    def keys(self) -> collections.Counter[Key]:
        with self._lock:
            return collections.Counter(self.deliveries)

    def close(self, timeout: float = 30.0) -> None:
        """Stop polling, then leave the group committing the stored offsets."""
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"broker member {self.name}'s poll thread did not stop within {timeout:.0f}s")
        self._consumer.close()


def committed_in_kafka(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's broker-committed offsets of topic (partitions without one are left out)."""
    reader = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "logger": _LIBRDKAFKA_LOG}
    )
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
