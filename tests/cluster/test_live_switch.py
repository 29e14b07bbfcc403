"""The live switch on a real cluster: three running zkconsumer members follow `migrate switch --to broker` and back, nothing lost, no offset delivered twice."""

from __future__ import annotations

import json
import threading
import time

import pytest

from harness import members
from harness.members import Recorder, committed_offsets, drain, kafka_offsets
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

PARTITIONS = 6
SETTINGS = {**members.FAST, "auto.commit.enable": True, "auto.commit.interval.ms": 300}


class Producer:
    """Sequence-numbered messages, a batch every 100 ms, until stopped; every acknowledged key kept."""

    def __init__(self, produce, topic: str) -> None:  # type: ignore[no-untyped-def]
        self._produce, self.topic = produce, topic
        self.sent: set[tuple[str, int, int]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="switch-producer", daemon=True)
        self.errors: list[BaseException] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        number = 0
        try:
            while not self._stop.is_set():
                for m in self._produce(self.topic, 24, partitions=PARTITIONS, start=number):
                    self.sent.add((m.topic, m.partition, m.offset))
                number += 24
                time.sleep(0.1)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            self.errors.append(exc)


def _overlaps(recorder: Recorder) -> list[str]:
    """Offsets delivered by two members, and hand-overs where the next member delivered an offset
    before the previous one delivered the offset below it (two deliverers at once)."""
    found = []
    seen: dict[tuple[str, int, int], str] = {}
    by_partition: dict[tuple[str, int], list[members.Delivery]] = {}
    for d in recorder.deliveries:
        key = (d.topic, d.partition, d.offset)
        if key in seen and seen[key] != d.member:
            found.append(f"{key} by {seen[key]} and {d.member}")
        seen.setdefault(key, d.member)
        by_partition.setdefault((d.topic, d.partition), []).append(d)
    for part, deliveries in by_partition.items():
        ordered = sorted(deliveries, key=lambda d: (d.offset, d.at))
        for before, after in zip(ordered, ordered[1:]):
            if before.member != after.member and after.at < before.at:
                found.append(
                    f"{part}: {after.member} delivered {after.offset} before {before.member} delivered {before.offset}"
                )
    return found


def _marker_steps(zk, group: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    folder = znodes.zkconsumer_members_path(group)
    out = {}
    for child in zk.get_children(folder):
        marker = json.loads(zk.get(f"{folder}/{child}")[0])
        out[child] = marker["switch"]["seen"]
    return out


def _wait_for_markers(zk, group: str, step: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while (steps := _marker_steps(zk, group)) != dict.fromkeys((f"{group}_{m}" for m in "abc"), step):
        assert time.monotonic() < deadline, f"markers never all said {step}: {steps}"
        time.sleep(0.2)


def test_three_running_members_switch_to_the_brokers_and_back_losing_nothing(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    recorder = Recorder()
    producer = Producer(produce, topic)
    conns = {}
    try:
        for name in ("a", "b", "c"):
            conn = ConsumerConnector(
                {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": name, **SETTINGS}
            )
            conns[name] = conn
            drain(name, conn.create_message_streams({topic: 1})[topic], recorder)
        producer.start()
        before = members.wait_for_balanced(zk, group_id, [topic], members=3, timeout=60)
        _wait_for_markers(zk, group_id, "zookeeper")

        to_broker = run(
            "migrate", "switch", "--group", group_id, "--to", "broker",
            "--bootstrap-servers", cluster.bootstrap_servers, "--timeout", "120",
        )  # fmt: skip
        assert to_broker.exit_code == 0, to_broker.output
        assert "wrote step broker" in to_broker.stdout, to_broker.output
        _wait_for_markers(zk, group_id, "broker")
        at_broker = members.owner_table(zk, group_id, [topic])
        moved = sorted(k for k in before if at_broker.get(k) != before[k])
        assert len(at_broker) == PARTITIONS and moved, (before, at_broker)  # the brokers' assignment took over

        # At `broker`, with production paused and everything delivered and committed, the two stores agree.
        producer.stop()
        recorder.wait_for(producer.sent, timeout=60)
        for conn in conns.values():
            conn.commit_offsets()
        zookeeper = committed_offsets(zk, group_id, topic)
        assert len(zookeeper) == PARTITIONS
        assert kafka_offsets(cluster.bootstrap_servers, group_id, topic, PARTITIONS) == zookeeper

        producer = Producer(produce, topic)
        producer.sent = set(recorder.keys())  # what counts as sent so far: all of it was delivered
        producer.start()
        back = run(
            "migrate", "switch", "--group", group_id, "--to", "zookeeper",
            "--bootstrap-servers", cluster.bootstrap_servers, "--timeout", "120",
        )  # fmt: skip
        assert back.exit_code == 0, back.output
        assert zk.exists(znodes.switch_path(group_id)) is None
        time.sleep(2)  # still delivering at `zookeeper`
        producer.stop()
        assert not producer.errors, producer.errors
        recorder.wait_for(producer.sent, timeout=60)
        assert not recorder.errors, recorder.errors
        assert _overlaps(recorder) == []
        assert {d.member for d in recorder.deliveries} == {"a", "b", "c"}
    finally:
        producer.stop()
        for conn in conns.values():
            conn.shutdown()
