"""Group-test helpers: record deliveries from draining threads, read and await ownership in ZooKeeper."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from zkconsumer.cluster import broker_nodes
from zkconsumer.config.compat import DEFAULT, Compat
from zkconsumer.consumer.stream import KafkaStream
from zkconsumer.coordinator.assignors import AssignmentInput, assign
from zkconsumer.coordinator.rebalance_plan import GroupView, assignment_input, member_threads
from zkconsumer.errors import ConsumerError, ConsumerTimeout
from zkconsumer.zookeeper import znodes


@dataclass(frozen=True)
class Delivery:
    member: str
    topic: str
    partition: int
    offset: int
    value: bytes | None
    at: float


# Settings of a member in the cluster tests: a short session, quick retries, reading from the start,
# iterators that give up waiting after 200 ms (ConsumerTimeout) so a test's loop can look around.
FAST = {
    "zookeeper.session.timeout.ms": 6000,
    "rebalance.backoff.ms": 500,
    "rebalance.max.retries": 20,
    "auto.offset.reset": "smallest",
    "consumer.timeout.ms": 200,
}


def keys_of(produced: Iterable[object]) -> set[tuple[str, int, int]]:
    """(topic, partition, offset) of produced messages (anything with those attributes)."""
    return {(m.topic, m.partition, m.offset) for m in produced}  # type: ignore[attr-defined]


class Recorder:
    """Thread-safe log of every message any member handed to the application."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.deliveries: list[Delivery] = []
        self.errors: list[BaseException] = []

    def add(self, member: str, topic: str, partition: int, offset: int, value: bytes | None) -> None:
        with self._lock:
            self.deliveries.append(Delivery(member, topic, partition, offset, value, time.monotonic()))

    def count(self) -> int:
        with self._lock:
            return len(self.deliveries)

    def keys(self) -> collections.Counter[tuple[str, int, int]]:
        """(topic, partition, offset) -> times delivered."""
        with self._lock:
            return collections.Counter((d.topic, d.partition, d.offset) for d in self.deliveries)

    def wait_for(self, expected: Iterable[tuple[str, int, int]], timeout: float) -> None:
        """Until every expected (topic, partition, offset) was delivered at least once."""
        want = set(expected)
        deadline = time.monotonic() + timeout
        while True:
            missing = want - set(self.keys())
            if not missing:
                return
            if self.errors:
                raise AssertionError(f"a drain thread failed: {self.errors[0]!r}") from self.errors[0]
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(missing)} of {len(want)} messages never delivered, e.g. {sorted(missing)[:5]}"
                )
            time.sleep(0.05)


def drain(
    member: str, streams: Iterable[KafkaStream], recorder: Recorder, on_message: Callable[[object], None] | None = None
) -> list[threading.Thread]:
    """One thread per stream, recording each message *before* asking for the next one."""
    threads = []
    for stream in streams:

        def run(stream: KafkaStream = stream) -> None:
            try:
                while True:
                    try:
                        for msg in stream:
                            recorder.add(member, msg.topic(), msg.partition(), msg.offset(), msg.value())
                            if on_message is not None:
                                on_message(msg)
                        return
                    except ConsumerTimeout:
                        continue
            except ConsumerError as exc:
                recorder.errors.append(exc)

        thread = threading.Thread(target=run, name=f"drain-{stream.name}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def owner_table(zk, group: str, topics: Iterable[str]) -> dict[tuple[str, int], str]:  # type: ignore[no-untyped-def]
    """(topic, partition) -> owner thread id, read from /consumers/G/owners."""
    table = {}
    for topic in topics:
        folder = znodes.owners_path(group, topic)
        if zk.exists(folder) is None:
            continue
        for child in zk.get_children(folder):
            path = f"{folder}/{child}"
            try:
                data, _ = zk.get(path)
            except Exception:  # noqa: BLE001 - vanished while reading
                continue
            table[(topic, int(child))] = znodes.decode_owner(data, path)
    return table


def expected_assignment(
    zk,
    group: str,
    strategy: str = "range",
    compat: Compat = DEFAULT,  # type: ignore[no-untyped-def]
) -> dict[tuple[str, int], str]:
    """What the assignor says for the group's current registrations and topics."""
    ids = zk.get_children(znodes.ids_path(group))
    regs = {cid: znodes.Registration.decode(zk.get(znodes.member_path(group, cid))[0], cid) for cid in ids}
    view = GroupView(regs, tuple(zk.get_children(znodes.BROKER_TOPICS)))
    threads = member_threads(view, exclude_internal=True, compat=compat)
    partitions = {}
    for topic in {t for per in threads.values() for t in per}:
        stat = zk.exists(znodes.topic_path(topic))
        partitions[topic] = (
            sorted(broker_nodes.decode_topic_partitions(zk.get(znodes.topic_path(topic))[0], topic)) if stat else []
        )
    inp: AssignmentInput = assignment_input(threads, partitions)
    return assign(strategy, inp, compat)


def wait_for_balanced(
    zk,
    group: str,
    topics: Iterable[str],
    *,
    members: int | None = None,  # type: ignore[no-untyped-def]
    strategy: str = "range",
    timeout: float = 60.0,
    compat: Compat = DEFAULT,
) -> dict[tuple[str, int], str]:
    """Until owner nodes equal the assignor's answer (as `compat`'s release computes it) for the
    current members (and their count)."""
    topics = list(topics)
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            ids = zk.get_children(znodes.ids_path(group))
            if members is None or len(ids) == members:
                want = expected_assignment(zk, group, strategy, compat)
                want = {k: v for k, v in want.items() if k[0] in topics}
                have = owner_table(zk, group, topics)
                if want and have == want:
                    return have
                last = (sorted(ids), len(have), len(want))
        except Exception as exc:  # noqa: BLE001 - membership moving under us: look again
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"group {group} did not converge within {timeout:.0f}s (last: {last})")


def kafka_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's broker-committed offsets, read by a Consumer that never subscribes (never joins)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def committed_offsets(zk, group: str, topic: str) -> dict[int, int]:  # type: ignore[no-untyped-def]
    folder = znodes.offsets_path(group, topic)
    if zk.exists(folder) is None:
        return {}
    out = {}
    for child in zk.get_children(folder):
        path = f"{folder}/{child}"
        out[int(child)] = znodes.decode_offset(zk.get(path)[0], path)
    return out
