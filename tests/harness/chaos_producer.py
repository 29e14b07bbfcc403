"""A background producer of numbered messages "<topic>:<epoch>:<seq>" at a steady rate, recording each ack."""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, Producer

from harness.chaos_history import parse_value

log = logging.getLogger(__name__)
# Refused connections while a broker is down are the point of a chaos run; failures are counted instead.
_LIBRDKAFKA_LOG = logging.getLogger("harness.chaos.librdkafka")
_LIBRDKAFKA_LOG.setLevel(logging.CRITICAL)

OnAck = Callable[[str, int, int, int], None]  # (topic, epoch, partition, offset)


class SteadyProducer:
    """Spreads `rate` messages/s evenly over every partition of every unpaused topic, on one thread.

    Acks go to `on_ack`; failed deliveries are counted (they were never acknowledged, so no
    consumer owes them). `pause(topic)` returns once nothing sent to that topic is in flight.

    Example::

        producer = SteadyProducer(bootstrap, {"orders": 8}, rate=200, on_ack=checker.acked)
        producer.start(); ...; producer.pause("orders"); ...; producer.resume("orders", epoch=1)
        producer.stop()
    """

    TICK = 0.02

    def __init__(self, bootstrap: str, partitions: dict[str, int], *, rate: float, on_ack: OnAck) -> None:
        self.rate = rate
        self._on_ack = on_ack
        self._partitions = dict(partitions)
        self._epochs = {t: 0 for t in partitions}
        self._paused: set[str] = set()
        self._inflight: collections.Counter[str] = collections.Counter()
        self._seq = 0
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self.sent = self.acked = self.failed = 0
        self.last_error: str | None = None
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120000,
                "enable.idempotence": False,
                "topic.metadata.refresh.interval.ms": 2000,
                # The brokers auto-create topics: a metadata refresh right after a
                # deletion would re-create it (1 partition) before the scenario does.
                "allow.auto.create.topics": False,
                "logger": _LIBRDKAFKA_LOG,
            }
        )
        self._thread = threading.Thread(target=self._loop, name="chaos-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, flush_timeout: float = 60.0) -> None:
        """Stop producing and wait for outstanding acks."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._producer.flush(flush_timeout)

    def set_partitions(self, topic: str, count: int) -> None:
        with self._lock:
            self._partitions[topic] = count

    def pause(self, topic: str, timeout: float = 60.0) -> None:
        """Stop sending to topic and wait until every message sent to it is acked or failed."""
        with self._lock:
            self._paused.add(topic)
            deadline = time.monotonic() + timeout
            while self._inflight[topic] > 0:
                if not self._lock.wait(max(0.0, min(0.1, deadline - time.monotonic()))) and time.monotonic() > deadline:
                    raise TimeoutError(f"{self._inflight[topic]} messages to {topic} still in flight")

    def resume(self, topic: str, *, epoch: int | None = None, partitions: int | None = None) -> None:
        with self._lock:
            if epoch is not None:
                self._epochs[topic] = epoch
            if partitions is not None:
                self._partitions[topic] = partitions
            self._paused.discard(topic)

    def burst(self, topic: str, per_partition: int) -> None:
        """Send per_partition messages to every partition of topic at once (acks arrive as usual)."""
        with self._lock:
            count = self._partitions[topic]
        for i in range(per_partition * count):
            self._send(topic, i % count)

    def _loop(self) -> None:
        began, made = time.monotonic(), 0
        while not self._stop.wait(self.TICK):
            due = int((time.monotonic() - began) * self.rate) - made
            with self._lock:
                slots = [(t, p) for t, n in sorted(self._partitions.items()) if t not in self._paused for p in range(n)]
            for _ in range(max(0, due)):
                made += 1
                if slots:
                    self._send(*slots[made % len(slots)])
            self._producer.poll(0)
        self._producer.poll(0)

    def _send(self, topic: str, partition: int) -> None:
        with self._lock:
            self._seq += 1
            value = f"{topic}:{self._epochs[topic]}:{self._seq}".encode()
            self._inflight[topic] += 1
        while True:
            try:
                self._producer.produce(topic, value, partition=partition, on_delivery=self._delivered)
                self.sent += 1
                return
            except BufferError:  # local queue full (a broker is down): let deliveries drain
                self._producer.poll(0.05)
            except Exception as exc:  # noqa: BLE001 - e.g. unknown partition right after a change
                self._count_failure(topic, str(exc))
                return

    def _delivered(self, err: KafkaError | None, msg) -> None:  # type: ignore[no-untyped-def]
        topic = msg.topic()
        if err is not None:
            self._count_failure(topic, str(err))
            return
        parsed = parse_value(msg.value())
        self._on_ack(topic, parsed[1] if parsed else 0, msg.partition(), msg.offset())
        with self._lock:
            self.acked += 1
            self._inflight[topic] -= 1
            self._lock.notify_all()

    def _count_failure(self, topic: str, error: str) -> None:
        with self._lock:
            self.failed += 1
            self.last_error = error
            self._inflight[topic] -= 1
            self._lock.notify_all()
