"""The last step off ZooKeeper on a real cluster (issue #54): at `broker`, the members restarted one at a time with zkconsumer.coordination=broker deliver nothing twice.

Each ZooKeeper-mode member leaves (its final commit to ZooKeeper, carried to Kafka through its seat
and read back before its owner nodes go: SwitchFollower.carry_on_leaving, its log line the evidence)
and comes back broker-coordinated, starting from Kafka's committed offset, with the second member
leaving right after the first one's return. A refused commit during the brokers' rebalance, which
the carry tries again, is timing this test does not force (tests/sim/test_seat_leaving_carry.py
does): before the carry, three runs of this test saw a seat's commit refused (ILLEGAL_GENERATION)
but no offset delivered twice, and failed only for want of the leaving members' read-back.
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from harness import members
from harness.members import Recorder, drain
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

PARTITIONS = 4
SETTINGS = {**members.FAST, "auto.commit.enable": True, "auto.commit.interval.ms": 300}


def _wait_for_markers(zk, group: str, names: list[str], step: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    folder = znodes.zkconsumer_members_path(group)
    want = {f"{group}_{n}": step for n in names}
    deadline = time.monotonic() + timeout
    while True:
        steps = {c: json.loads(zk.get(f"{folder}/{c}")[0])["switch"]["seen"] for c in zk.get_children(folder)}
        if steps == want:
            return
        assert time.monotonic() < deadline, f"markers never all said {step}: {steps}"
        time.sleep(0.2)


def test_a_rolling_restart_at_broker_to_broker_coordination_delivers_nothing_twice(
    cluster, zk, run, topic_factory, produce, group_id, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="zkconsumer.coordinator.rebalancer")
    topic = topic_factory(partitions=PARTITIONS)
    recorder = Recorder()
    sent: set[tuple[str, int, int]] = set()

    def produce_some(count: int) -> None:
        sent.update((m.topic, m.partition, m.offset) for m in produce(topic, count, partitions=PARTITIONS))

    base = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, **SETTINGS}
    conns: dict[str, ConsumerConnector] = {}
    try:
        for name in ("a", "b"):
            conns[name] = ConsumerConnector({**base, "consumer.id": name})
            drain(name, conns[name].create_message_streams({topic: 1})[topic], recorder)
        members.wait_for_balanced(zk, group_id, [topic], members=2, timeout=60)
        switched = run(
            "migrate", "switch", "--group", group_id, "--to", "broker",
            "--bootstrap-servers", cluster.bootstrap_servers, "--timeout", "60",
        )  # fmt: skip
        assert switched.exit_code == 0, switched.output
        _wait_for_markers(zk, group_id, ["a", "b"], "broker")
        produce_some(200)
        recorder.wait_for(sent, timeout=30)

        for name in ("a", "b"):  # the rolling restart, one member after the other without a pause
            produce_some(40)  # delivered just before the shutdown: only its final commit covers them
            recorder.wait_for(sent, timeout=30)
            conns.pop(name).shutdown()
            again = f"{name}2"
            conns[again] = ConsumerConnector(
                {**base, "consumer.id": again, "zkconsumer.coordination": "broker",
                 "librdkafka.bootstrap.servers": cluster.bootstrap_servers}
            )  # fmt: skip
            drain(again, conns[again].create_message_streams({topic: 1})[topic], recorder)
        produce_some(200)
        recorder.wait_for(sent, timeout=60)
        time.sleep(2.0)  # anything delivered again arrives by now
        assert not recorder.errors, recorder.errors
        twice = sorted(k for k, n in recorder.keys().items() if n > 1)
        assert twice == [], f"{len(twice)} offsets delivered twice, first {twice[:5]}"
        assert {d.member for d in recorder.deliveries} >= {"a2", "b2"}
        # each leaving member's own evidence: Kafka read back ZooKeeper's offsets before its nodes went
        lines = [r.getMessage() for r in caplog.records]
        for name in ("a", "b"):
            carried = [line for line in lines if line.startswith(f"{group_id}_{name}: leaving: Kafka holds")]
            assert carried, [line for line in lines if f"{group_id}_{name}:" in line][-10:]
        assert not [line for line in lines if "behind ZooKeeper" in line]
    finally:
        for conn in conns.values():
            conn.shutdown()
