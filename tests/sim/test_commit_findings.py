"""Regressions for issue #42 findings 5, 6 and 8: commits wait for no back-off, Kafka-only commits are
gated by the lease, and shutdown commits under the rebalance lock as a release does."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from confluent_kafka import TopicPartition as KafkaTP

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, committed
from harness.zkmodel import Fault, FaultKind
from zkconsumer.zookeeper import znodes

QUIET_FAILURE = Fault(FaultKind.FAIL_BEFORE, drop_link=False)  # ConnectionLoss, the link stays up


def _settle(s: Schedule, members: list[SimMember], rounds: int = 6) -> None:
    s.calm_rounds(members, rounds, consume=None)


def _consume_all(m: SimMember) -> None:
    for _ in range(20):
        m.consume(50)


def test_finding_5_a_commit_does_not_wait_for_the_back_off_between_attempts() -> None:
    s = Schedule(0, Options(members=0, partitions=4))
    m1 = s.add_member()
    _settle(s, [m1])
    assert len(m1.assignment.owned()) == 4
    # Scala's defaults: a failed attempt is followed by a long back-off before the next one.
    m1.rebalancer.config = dataclasses.replace(m1.config, rebalance_backoff_ms=60_000, rebalance_max_retries=2)
    failed = threading.Event()

    def hook(client: Any, op: str, path: str) -> Fault | None:
        if threading.current_thread() is run and not failed.is_set():
            failed.set()
            return QUIET_FAILURE  # the attempt's first call fails: the run backs off
        return None

    s.model.set_fault_hook(hook)
    run = threading.Thread(target=m1.rebalancer.synced_rebalance, args=("test: a change",), daemon=True)
    run.start()
    assert failed.wait(10.0)
    s.log.produce((TOPIC, 0), 5)
    _consume_all(m1)
    commit = threading.Thread(target=m1.commit, daemon=True)
    commit.start()
    commit.join(10.0)
    committed_while_backing_off = not commit.is_alive() and run.is_alive()
    m1.rebalancer.begin_shutdown()  # ends the back-off
    run.join(10.0)
    commit.join(10.0)
    assert committed_while_backing_off
    assert committed(s.model, GROUP, (TOPIC, 0)) == 5


class RecordingKafka:
    """The Kafka side of offsets.storage=kafka: every commit it was sent."""

    def __init__(self) -> None:
        self.commits: list[dict[tuple[str, int], int]] = []

    def commit(self, *, offsets: list[KafkaTP], asynchronous: bool) -> list[KafkaTP]:
        self.commits.append({(tp.topic, tp.partition): tp.offset for tp in offsets})
        return offsets


def test_finding_6_a_kafka_only_commit_is_refused_once_the_session_expired_while_the_link_was_down() -> None:
    s = Schedule(0, Options(members=0, partitions=2, session_timeout_ms=4000))
    m1 = s.add_member()
    _settle(s, [m1])
    kafka = RecordingKafka()
    m1.offsets.use_zookeeper, m1.offsets.use_kafka = False, True  # offsets.storage=kafka, no dual commit
    m1.fetcher.consumer = kafka  # the Consumer Kafka-side commits go through
    s.log.produce((TOPIC, 0), 5)
    _consume_all(m1)
    m1.renew_lease()
    m1.commit()
    assert kafka.commits == [{(TOPIC, 0): 5, (TOPIC, 1): 0}]
    s.log.produce((TOPIC, 0), 5)
    _consume_all(m1)
    link_down: list[str] = []

    def hook(client: Any, op: str, path: str) -> None:
        # The commit's look at the topic's incarnation is where its link drops; the session expires
        # meanwhile, and the read is answered after the reconnect, in a new session.
        if client is m1.client and op == "exists" and path == znodes.topic_path(TOPIC) and not link_down:
            link_down.append(path)
            s.model.disconnect(m1.client)
            s.model.advance(6000)
            s.model.reconnect(m1.client)

    s.model.set_fault_hook(hook)
    m1.commit()  # auto-commit in flight: its positions would rewind a successor's progress
    assert link_down and m1.group.live_session != m1.group.session
    assert kafka.commits == [{(TOPIC, 0): 5, (TOPIC, 1): 0}]


def test_finding_8_a_shutdown_during_a_release_never_commits_on_the_successors_node() -> None:
    s = Schedule(0, Options(members=0, partitions=4))
    m1 = s.add_member()
    _settle(s, [m1])
    for p in range(4):
        s.log.produce((TOPIC, p), 5)
    _consume_all(m1)
    m1.commit()  # every offset node exists: a later write is a set, fenced by the owner node's version
    for p in range(4):
        s.log.produce((TOPIC, p), 5)
    _consume_all(m1)
    m2 = s.add_member()
    m2.rebalance()  # claims nothing: m1 holds every node; m2 watches those it waits for
    s.model.deliver(m1.client)
    assert m1.pending
    moving: set[tuple[str, int]] = set()
    s_at_multi, t_done = threading.Event(), threading.Event()
    shutdown = threading.Thread(target=m1.rebalancer.shutdown, args=(1.0,), daemon=True)

    def hook(client: Any, op: str, path: str) -> Fault | None:
        if client is not m1.client:
            return None
        offsets = {znodes.offset_path(GROUP, *k) for k in m1.assignment.releasing()}
        if threading.current_thread() is rebalance and op == "multi" and path in offsets:
            return QUIET_FAILURE  # the commit before the release fails: the final commit has work
        if threading.current_thread() is rebalance and op in ("delete", "multi-delete") and "/owners/" in path:
            if not shutdown.is_alive() and not moving:
                moving.update(m1.assignment.releasing())
                shutdown.start()  # called directly, while the attempt deletes the moving nodes
                while shutdown.is_alive() and not s_at_multi.wait(0.05):
                    pass  # until the final commit read the owner nodes and is about to write
            return None
        if threading.current_thread() is shutdown and op == "multi":
            if path in {znodes.offset_path(GROUP, *k) for k in moving}:
                s_at_multi.set()
                t_done.wait(10.0)  # meanwhile the successor claims and commits further
        return None

    def rebalance_then_successor() -> None:
        m1.rebalancer.synced_rebalance("member joined")
        s.model.deliver(m2.client)
        m2.trigger("owner node deleted")
        m2.rebalance()
        for key in moving:
            s.log.produce(key, 10)
        _consume_all(m2)
        m2.commit()
        t_done.set()

    s.model.set_fault_hook(hook)
    rebalance = threading.Thread(target=rebalance_then_successor, daemon=True)
    rebalance.start()
    rebalance.join(20.0)
    shutdown.join(20.0)
    assert moving and not rebalance.is_alive() and not shutdown.is_alive()
    assert all(m2.assignment.owned().get(k) for k in moving)
    assert {k: committed(s.model, GROUP, k) for k in moving} == {k: 20 for k in moving}
