"""Test-side Kafka helpers over confluent-kafka: create topics, produce numbered messages, read back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from zkconsumer.consumer.log_throttle import throttled_logger

if TYPE_CHECKING:
    from zkconsumer.consumer.chunks import Message

# librdkafka's own log lines (served by poll/flush), through Python logging instead of raw to stderr
_LIBRDKAFKA_LOG = throttled_logger("zkconsumer.testing.librdkafka")

# host:port -> the librdkafka settings its broker needs (versions.KafkaRelease.client_settings: a
# pre-0.10 broker must be named, it answers no ApiVersions). The helpers here are called with a
# bootstrap string by many tests, so LocalCluster registers its brokers' addresses while it runs.
_BROKER_SETTINGS: dict[str, dict[str, str]] = {}


def register_brokers(addresses: Iterable[str], settings: Mapping[str, str]) -> None:
    """Clients of these host:port addresses get `settings`; empty settings forget the addresses."""
    for address in addresses:
        if settings:
            _BROKER_SETTINGS[address] = dict(settings)
        else:
            _BROKER_SETTINGS.pop(address, None)


def client_settings(bootstrap: str) -> dict[str, str]:
    """What a librdkafka client of `bootstrap` must add to its config (see register_brokers)."""
    for address in bootstrap.split(","):
        if address.strip() in _BROKER_SETTINGS:
            return dict(_BROKER_SETTINGS[address.strip()])
    return {}


@dataclass(frozen=True)
class Produced:
    """One acknowledged message: where it landed and what it held."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


def admin(bootstrap: str) -> AdminClient:
    """An AdminClient whose librdkafka log lines go to the zkconsumer.testing.librdkafka logger; they
    queue until the client is polled, so every helper here polls it after its requests (`client.poll(0)`)."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _LIBRDKAFKA_LOG}  # hints omit Logger
    return AdminClient({**config, **client_settings(bootstrap)})


def _result(client: AdminClient, future: Any, timeout: float) -> Any:
    """future.result(timeout), then poll `client` so librdkafka's queued log lines reach the logger
    (as zkconsumer.spark.broker_offsets.LogOffsets does for its planner client)."""
    try:
        return future.result(timeout)
    finally:
        client.poll(0)


def create_topic(
    bootstrap: str, name: str, partitions: int, replication_factor: int = 1, timeout: float = 60.0, *, min_isr: int = 1
) -> None:
    """Create the topic and wait until every partition has a leader and `min_isr` replicas in sync
    (with acks=all a write needs the topic's min.insync.replicas of them)."""
    deadline = time.monotonic() + timeout
    retried = False
    while True:
        client = admin(bootstrap)  # keep a reference: a collected client cancels its futures
        futures = client.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor)],
            operation_timeout=timeout,
        )
        try:
            _result(client, futures[name], timeout)
            break
        except KafkaException as exc:
            error = exc.args[0]
            # The controller can move between the client's metadata and its request (a broker
            # restarted by an earlier test): a fresh client asks the new controller.
            if retried and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                break  # an earlier attempt did land after all
            moved = error.code() == KafkaError.NOT_CONTROLLER  # not flagged retriable by librdkafka
            if not (moved or error.retriable()) or time.monotonic() > deadline:
                raise
            retried = True
            time.sleep(0.5)
    wait_for_leaders(bootstrap, name, partitions, timeout, min_isr=min_isr)


def write_topic(zk: Any, name: str, partitions: int, broker_ids: Iterable[int], replication_factor: int = 1) -> None:
    """Create a topic as `kafka-topics --create --zookeeper` did before CreateTopics (0.10.1): its
    config node, then its partition map (replicas round-robin over `broker_ids`), which the
    controller acts on (`zk`: a kazoo client in the brokers' chroot)."""
    brokers = sorted(broker_ids)
    if not 1 <= replication_factor <= len(brokers):
        raise ValueError(f"topic {name}: replication factor {replication_factor} needs as many brokers, got {brokers}")
    layout = {str(p): [brokers[(p + i) % len(brokers)] for i in range(replication_factor)] for p in range(partitions)}
    compact = (",", ":")  # as Kafka's Json.encode writes them
    zk.ensure_path("/config/topics")
    zk.create(f"/config/topics/{name}", json.dumps({"version": 1, "config": {}}, separators=compact).encode())
    topic = json.dumps({"version": 1, "partitions": layout}, separators=compact).encode()
    zk.create(f"/brokers/topics/{name}", topic, makepath=True)


def add_partitions(bootstrap: str, name: str, total: int, timeout: float = 60.0, *, zk: Any = None) -> None:
    """Grow a topic to `total` partitions. Brokers before 1.0 have no CreatePartitions: with `zk`
    (a kazoo client in the brokers' chroot) the topic node is rewritten instead, as
    `kafka-topics --alter --zookeeper` did, and the controller creates the new partitions."""
    # A pre-0.10 broker (one whose clients are told its version) would never answer: librdkafka
    # waits for a controller that Metadata v0 does not name. ZooKeeper at once, then.
    if zk is None or not client_settings(bootstrap):
        client = admin(bootstrap)
        try:
            _result(client, client.create_partitions([NewPartitions(name, total)])[name], timeout)
            wait_for_leaders(bootstrap, name, total, timeout)
            return
        except KafkaException as exc:
            if zk is None or exc.args[0].code() != KafkaError._UNSUPPORTED_FEATURE:
                raise
    path = f"/brokers/topics/{name}"
    data, stat = zk.get(path)
    doc = json.loads(data)
    layout = doc["partitions"]
    replicas = [layout[str(p)] for p in sorted(map(int, layout))]
    for p in range(len(layout), total):  # new partitions copy the existing replica lists in turn
        layout[str(p)] = replicas[p % len(replicas)]
    zk.set(path, json.dumps(doc).encode(), version=stat.version)
    wait_for_leaders(bootstrap, name, total, timeout)


def wait_topic_deleted(zk: Any, name: str, timeout: float = 60.0) -> None:
    """Until the controller finished deleting `name`: its topic node and its deletion request are gone
    (`zk`: a kazoo client in the brokers' chroot). Only then can the name be created again."""
    deadline = time.monotonic() + timeout
    while zk.exists(f"/brokers/topics/{name}") is not None or zk.exists(f"/admin/delete_topics/{name}") is not None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} still not deleted after {timeout:.0f}s")
        time.sleep(0.1)


def delete_topic(bootstrap: str, name: str, timeout: float = 60.0) -> None:
    """Delete a topic; a broker that failed the request (its own ZooKeeper session expired on a
    starved machine: "Unknown broker error") is asked again until `timeout`."""
    client = admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        try:
            _result(client, client.delete_topics([name], operation_timeout=timeout)[name], timeout)
            return
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return  # an earlier attempt went through after all
            if exc.args[0].fatal() or time.monotonic() > deadline:
                raise
            time.sleep(2.0)


def wait_for_leaders(bootstrap: str, name: str, partitions: int, timeout: float, *, min_isr: int = 1) -> None:
    """Until the topic has `partitions` partitions, each with a leader and at least `min_isr` in-sync replicas."""
    client = admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        try:
            meta = client.list_topics(name, timeout=10).topics.get(name)
        except KafkaException as exc:
            # librdkafka 2.16 cannot parse a Metadata v0 answer naming a topic without partitions yet
            # ("Protocol parse failure for Metadata v0", _BAD_MSG): what a 0.8.2/0.9 broker answers
            # between the topic's creation and its partitions' first leaders.
            if exc.args[0].code() != KafkaError._BAD_MSG:
                raise
            meta = None
        finally:
            client.poll(0)  # hands librdkafka's queued log lines to the logger
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) >= partitions
            and all(p.leader >= 0 and len(p.isrs) >= min_isr for p in meta.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"topic {name}: not every partition has a leader and {min_isr} in-sync replicas after {timeout:.0f}s"
            )
        time.sleep(0.2)


def produce_numbered(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    partitions: int | None = None,
    start: int = 0,
    value_size: int | None = None,
    keyed: bool = False,
    idempotent: bool = True,
) -> list[Produced]:
    """Produce messages `start`..`start+count-1` and return every acknowledged one.

    With `partitions`, message i goes to partition i % partitions (deterministic spread);
    otherwise the partitioner chooses. Values are b"<topic>-<i>", padded to `value_size`.
    `idempotent=False` for brokers older than 0.11 (versions.KafkaRelease.idempotent_producer).
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "acks": "all",
            "enable.idempotence": idempotent,
            "logger": _LIBRDKAFKA_LOG,
            **client_settings(bootstrap),
        }
    )
    acked: list[Produced] = []
    failures: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            failures.append(err)
        else:
            acked.append(Produced(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()))

    for i in range(start, start + count):
        value = f"{topic}-{i}".encode()
        if value_size is not None:
            value = value.ljust(value_size, b".")
        kwargs: dict[str, Any] = {"partition": i % partitions} if partitions else {}
        while True:
            try:
                producer.produce(
                    topic, value, key=str(i).encode() if keyed else None, on_delivery=on_delivery, **kwargs
                )
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    if failures or remaining:
        raise KafkaException(failures[0] if failures else KafkaError(KafkaError._MSG_TIMED_OUT))
    return acked


def produce_bulk(
    bootstrap: str, topic: str, count: int, size: int, partitions: int, flush_timeout: float = 300.0
) -> None:
    """Benchmark loading: `count` messages of `size` bytes, round-robin over `partitions`, no acks kept."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "acks": 1,
            "logger": _LIBRDKAFKA_LOG,
            **client_settings(bootstrap),
        }
    )
    payload = b"x" * size
    for i in range(count):
        while True:
            try:
                producer.produce(topic, payload, partition=i % partitions)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.05)
    if producer.flush(flush_timeout):
        raise TimeoutError(f"{topic}: messages still unsent after {flush_timeout:.0f}s")


def end_offsets(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (log start, log end) from the brokers."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "zkconsumer-testing-watermarks",
            "enable.auto.commit": False,
            "logger": _LIBRDKAFKA_LOG,
            **client_settings(bootstrap),
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in sorted(meta.partitions)
        }
    finally:
        consumer.close()


def read_all(bootstrap: str, topic: str, timeout: float = 60.0) -> list[Produced]:
    """Every message currently in the topic, read with assign() from the log start to the end."""
    ends = end_offsets(bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "zkconsumer-testing-readback",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "logger": _LIBRDKAFKA_LOG,
            **client_settings(bootstrap),
        }
    )
    try:
        wanted = {p: hi for p, (lo, hi) in ends.items() if hi > lo}
        consumer.assign([TopicPartition(topic, p, ends[p][0]) for p in wanted])
        out: list[Produced] = []
        done: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(done) < len(wanted):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read_all({topic}) timed out; finished partitions {sorted(done)}")
            for raw in consumer.consume(1000, 1.0):
                error = raw.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(error)
                    continue
                msg = cast("Message", raw)  # consumed without error: topic, partition, offset are set
                out.append(Produced(msg.topic(), msg.partition(), msg.offset(), msg.key(), cast(bytes, msg.value())))
                if msg.offset() + 1 >= wanted[msg.partition()]:
                    done.add(msg.partition())
        return out
    finally:
        consumer.close()
