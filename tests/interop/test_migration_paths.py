"""Moving a live group off ZooKeeper and back: stop-and-copy, the rolling dual-commit path, and rollback.

Each test keeps a producer running the whole time, consumes with zkconsumer and Scala 1.1.1
members coordinated in ZooKeeper, hands the group to broker-coordinated confluent-kafka
`subscribe()` consumers with `zkconsumer migrate`, and checks: every acknowledged message was
delivered at least once, and how many were delivered on both sides of the switch (the
migration's duplicate window; 0 after clean stops, whose final commits are exact).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from harness.chaos_producer import SteadyProducer
from harness.members import committed_offsets
from tests.interop.broker_members import BrokerMember, committed_in_kafka
from zkconsumer.cli.main import cli

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.migration]

PARTITIONS = 6
RATE = 300  # messages/s while everything below happens
DUAL_COMMIT = {"offsets.storage": "kafka", "dual.commit.enabled": "true", "auto.commit.interval.ms": 1000}


class Acked:
    """Every (topic, partition, offset) the producer had acknowledged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.keys: set[tuple[str, int, int]] = set()

    def __call__(self, topic: str, epoch: int, partition: int, offset: int) -> None:
        with self._lock:
            self.keys.add((topic, partition, offset))

    def snapshot(self) -> set[tuple[str, int, int]]:
        with self._lock:
            return set(self.keys)


@pytest.fixture
def migrate(cluster):  # type: ignore[no-untyped-def]
    """migrate(*args) -> (exit code, output) of `zkconsumer migrate ...` run in-process; with
    --json among the args, the output is the parsed document on stdout."""
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, Any]:
        result = runner.invoke(
            cli,
            ["migrate", *args, "--bootstrap-server", cluster.bootstrap_servers],
            catch_exceptions=False,
            env={"ZKCONSUMER_ZOOKEEPER": cluster.zookeeper_connect, "COLUMNS": "200"},
        )
        if "--json" in args:
            return result.exit_code, json.loads(result.stdout)
        return result.exit_code, result.output

    return invoke


@pytest.fixture
def producing(cluster, topic_factory):  # type: ignore[no-untyped-def]
    topic = topic_factory(partitions=PARTITIONS)
    acked = Acked()
    producer = SteadyProducer(cluster.bootstrap_servers, {topic: PARTITIONS}, rate=RATE, on_ack=acked)
    producer.start()
    try:
        yield topic, acked, producer
    finally:
        producer.stop()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def start_zookeeper_group(mixed, topic: str, phase: str) -> None:  # type: ignore[no-untyped-def]
    """A Scala member and two zkconsumer members; names carry the phase, as each member keeps its own record."""
    mixed.add_scala(f"c-scala-{phase}", {topic: 1})
    mixed.add_py(f"a-py-{phase}", {topic: 2})
    mixed.add_py(f"b-py-{phase}", {topic: 1})
    mixed.wait_ready()
    mixed.balanced([topic])


def stop_zookeeper_group(mixed) -> None:  # type: ignore[no-untyped-def]
    for name in [*mixed.py, *mixed.scala]:
        mixed.leave(name)
    wait_until(lambda: not mixed.zk.get_children(f"/consumers/{mixed.group}/ids"), "the registrations to go")


def consumed_by_now(mixed, acked: Acked) -> None:  # type: ignore[no-untyped-def]
    """Let the ZooKeeper-side members read everything acknowledged so far."""
    mixed.wait_for(acked.snapshot(), timeout=60)


def hand_to_broker_members(
    cluster, group: str, topic: str, acked: Acked, producer: SteadyProducer, zookeeper_side: Counter
) -> tuple[Counter, Counter]:
    """Broker members take over until production stops and everything is read; returns both sides' counts."""
    members = [BrokerMember(cluster.bootstrap_servers, group, [topic], f"broker-{i}") for i in range(2)]
    try:
        for member in members:
            assert member.assigned_once.wait(60), f"{member.name} was never assigned partitions"
        time.sleep(2)  # they consume under production for a while
        producer.stop()
        everything = acked.snapshot()

        def missing() -> list[tuple[str, int, int]]:
            return sorted(everything - set(zookeeper_side) - set(_sum(m.keys() for m in members)))

        try:
            wait_until(lambda: not missing(), "every acknowledged message to be delivered on one side or the other")
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}: {len(missing())} missing, e.g. {missing()[:10]}; broker members' errors: "
                f"{[e for m in members for e in m.errors][:5]}"
            ) from None
        assert not [e for m in members for e in m.errors], [e for m in members for e in m.errors]
    finally:
        for member in members:
            member.close()
    return zookeeper_side, _sum(m.keys() for m in members)


def _sum(counters) -> Counter:  # type: ignore[no-untyped-def,type-arg]
    total: Counter = Counter()  # type: ignore[type-arg]
    for counter in counters:
        total.update(counter)
    return total


def report(path: str, zookeeper_side: Counter, broker_side: Counter) -> int:  # type: ignore[type-arg]
    both = set(zookeeper_side) & set(broker_side)
    within = sum(n - 1 for n in (zookeeper_side + broker_side).values() if n > 1) - len(both)
    print(
        f"migration path={path} zookeeper_side={len(zookeeper_side)} broker_side={len(broker_side)} "
        f"across_switch_duplicates={len(both)} other_duplicates={within}"
    )
    return len(both)


def zookeeper_offsets(mixed, topic: str) -> dict[int, int]:  # type: ignore[no-untyped-def]
    return committed_offsets(mixed.zk, mixed.group, topic)


def test_stop_and_copy_to_broker_coordination_then_rollback(cluster, mixed, producing, migrate) -> None:
    topic, acked, producer = producing
    group = mixed.group
    start_zookeeper_group(mixed, topic, "zk")
    consumed_by_now(mixed, acked)

    # A live group is a blocker for the copy: nothing is written.
    code, doc = migrate("offsets", "--group", group, "--to", "kafka", "--execute", "--json")
    assert code == 3 and "source-zookeeper-members" in {b["code"] for b in doc["blockers"]}, doc
    assert committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == {}

    stop_zookeeper_group(mixed)  # final commits
    at_switch = zookeeper_offsets(mixed, topic)
    assert set(at_switch) == set(range(PARTITIONS)), at_switch

    code, doc = migrate("plan", "--group", group, "--json")
    assert code == 0 and doc["step"]["name"] == "stopped", doc
    code, out = migrate("offsets", "--group", group, "--to", "kafka")  # dry run
    assert code == 0 and committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == {}, out
    code, out = migrate("offsets", "--group", group, "--to", "kafka", "--execute")
    assert code == 0, out
    assert committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == at_switch
    code, out = migrate("offsets", "--group", group, "--to", "kafka", "--execute")  # idempotent
    assert code == 0, out

    zookeeper_side = mixed.keys()
    zookeeper_side, broker_side = hand_to_broker_members(cluster, group, topic, acked, producer, zookeeper_side)
    assert report("stop-and-copy", zookeeper_side, broker_side) == 0, "delivered on both sides of a clean switch"

    # Rollback: the broker members have left (committing); copy back and let ZooKeeper members resume.
    in_kafka = committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS)
    code, out = migrate("offsets", "--group", group, "--to", "zookeeper", "--execute")
    assert code == 0, out
    assert zookeeper_offsets(mixed, topic) == in_kafka
    end = SteadyProducer(cluster.bootstrap_servers, {topic: PARTITIONS}, rate=RATE, on_ack=acked)
    end.start()
    try:
        before_rollback = mixed.keys()
        start_zookeeper_group(mixed, topic, "back")
        time.sleep(2)
    finally:
        end.stop()
    mixed.wait_for(acked.snapshot() - set(zookeeper_side) - set(broker_side), timeout=60)
    back = mixed.keys() - before_rollback  # what the members delivered after the rollback
    assert report("rollback", broker_side, back) == 0, "delivered on both sides of the rollback"


def test_rolling_migration_through_dual_commit(cluster, mixed, producing, migrate) -> None:
    topic, acked, producer = producing
    group = mixed.group
    start_zookeeper_group(mixed, topic, "zk")
    consumed_by_now(mixed, acked)

    # (1) a rolling restart into dual commit: one member at a time, the group keeps consuming.
    dual = {k.replace(".", "_"): v for k, v in DUAL_COMMIT.items()}
    for name, streams in [("a-py", 2), ("b-py", 1)]:
        mixed.leave(f"{name}-zk")
        mixed.add_py(f"{name}-dual", {topic: streams}, **dual)
        mixed.balanced([topic])
    mixed.leave("c-scala-zk")
    mixed.add_scala("c-scala-dual", {topic: 1}, **dual)
    mixed.wait_ready()
    mixed.balanced([topic])
    consumed_by_now(mixed, acked)
    wait_until(
        lambda: len(committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS)) == PARTITIONS,
        "dual commit to reach Kafka for every partition",
        timeout=30,
    )
    code, doc = migrate("plan", "--group", group, "--json")
    assert code == 3 and doc["step"]["name"] == "dual-commit-live", doc  # live members block the copy

    # (2) the ZooKeeper group stops with a final commit, written to both stores.
    stop_zookeeper_group(mixed)
    at_switch = zookeeper_offsets(mixed, topic)
    assert committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == at_switch

    # (3) the copy has nothing left to do, and says so; running it is harmless.
    code, doc = migrate("offsets", "--group", group, "--to", "kafka", "--execute", "--json")
    assert code == 0 and doc["writes"] == 0 and doc["step"]["name"] == "copied", doc
    assert committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == at_switch

    # (4) broker-coordinated consumers start from there.
    zookeeper_side, broker_side = hand_to_broker_members(cluster, group, topic, acked, producer, mixed.keys())
    assert report("rolling", zookeeper_side, broker_side) == 0, "delivered on both sides of a clean switch"


def test_stop_and_copy_after_the_group_crashed(cluster, mixed, producing, migrate) -> None:
    """kill -9 instead of a clean stop: the duplicate window is exactly what the members delivered
    after their last commit (auto.commit.interval.ms of traffic, more on a loaded machine)."""
    topic, acked, producer = producing
    group = mixed.group
    for name, streams in [("a-scala", 2), ("b-scala", 1)]:
        mixed.add_scala(name, {topic: streams}, auto_commit_interval_ms=1000)
    mixed.wait_ready()
    mixed.balanced([topic])
    wait_until(lambda: len(zookeeper_offsets(mixed, topic)) == PARTITIONS, "a first commit of every partition")
    time.sleep(1.5)  # past a commit: the crash lands in the middle of the interval
    for name in ["a-scala", "b-scala"]:
        mixed.kill(name)
    # Their owner nodes stay until their sessions expire: until then the copy is blocked.
    code, doc = migrate("offsets", "--group", group, "--to", "kafka", "--execute", "--json")
    assert code == 3 and doc["blocked"], doc
    assert committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == {}
    wait_until(lambda: not mixed.zk.get_children(f"/consumers/{group}/ids"), "the killed members' sessions to expire")
    at_switch = zookeeper_offsets(mixed, topic)
    assert set(at_switch) == set(range(PARTITIONS)), at_switch
    code, out = migrate("offsets", "--group", group, "--to", "kafka", "--execute")
    assert code == 0, out
    assert committed_in_kafka(cluster.bootstrap_servers, group, topic, PARTITIONS) == at_switch

    zookeeper_side, broker_side = hand_to_broker_members(cluster, group, topic, acked, producer, mixed.keys())
    duplicates = report("stop-and-copy-after-kill", zookeeper_side, broker_side)
    after_last_commit = {k for k in zookeeper_side if k[2] >= at_switch[k[1]]}
    assert set(zookeeper_side) & set(broker_side) == after_last_commit, "a duplicate from before the last commit"
    print(f"migration crash window: {duplicates} messages, {duplicates / RATE:.2f}s of production at {RATE} msg/s")
