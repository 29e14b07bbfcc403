"""`groups status` beside Burrow 1.2.1 on the same groups: one scenario per status, and the owner cases Burrow cannot see.

Each scenario is a group whose nodes this test writes as a member would (its registration, its owner
node, its commits, every PERIOD seconds), on a one-partition topic of its own. Both tools watch all
of them over the same WATCH seconds; the table they give is printed (docs/cli.md shows it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer

from harness.burrow import Burrow
from zkconsumer.testing.probes import ClusterStartError
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.ecosystem]

ZKCONSUMER = os.path.join(os.path.dirname(sys.executable), "zkconsumer")
PERIOD = 3.0  # between a scenario's steps: each step produces, waits, then commits
SETTLE = 1.2  # produce -> commit: more than Burrow's offset refresh, so its lag counts what was produced
WATCH, INTERVAL = 15.0, 1.0


class Scripted:
    """One group on one single-partition topic, its nodes written by this test as a member's would be."""

    def __init__(self, zk, producer: Producer, group: str, topic: str) -> None:  # type: ignore[no-untyped-def]
        self.zk, self.producer, self.group, self.topic = zk, producer, group, topic
        self.produced = 0

    def produce(self, n: int) -> None:
        for _ in range(n):
            self.producer.produce(self.topic, value=b"x", partition=0)
        assert self.producer.flush(30) == 0
        self.produced += n

    def register(self, consumer_id: str, client=None) -> None:  # type: ignore[no-untyped-def]
        registration = znodes.Registration(((self.topic, 1),), "static", str(int(time.time() * 1000)))
        path = znodes.member_path(self.group, f"{self.group}_{consumer_id}")
        (client or self.zk).create(path, registration.encode(), ephemeral=True, makepath=True)

    def own(self, consumer_id: str, client=None) -> None:  # type: ignore[no-untyped-def]
        path = znodes.owner_path(self.group, self.topic, 0)
        (client or self.zk).create(
            path, znodes.encode_owner(f"{self.group}_{consumer_id}-0"), ephemeral=True, makepath=True
        )

    def commit(self, offset: int) -> None:
        path = znodes.offset_path(self.group, self.topic, 0)
        if self.zk.exists(path) is None:
            self.zk.create(path, znodes.encode_offset(offset), makepath=True)
        else:
            self.zk.set(path, znodes.encode_offset(offset))  # a new write even for the same value, as Burrow sees it


@dataclass(frozen=True)
class Scenario:
    name: str
    initial: int  # messages in the log before the group's nodes are written
    setup: Callable[[Scripted], None]  # the group's nodes
    commit_at: Callable[[Scripted, int], int | None]  # step k -> the offset to commit then (None: no commit)
    produce: int  # per step, before the commit
    ours: tuple[str, str]  # expected (partition, group) statuses
    burrow: tuple[str, str]


def member_owning(committed: int) -> Callable[[Scripted], None]:
    def setup(s: Scripted) -> None:
        s.register("a")
        s.own("a")
        s.commit(committed)

    return setup


def foreign_session_owner(other) -> Callable[[Scripted], None]:  # type: ignore[no-untyped-def]
    def setup(s: Scripted) -> None:
        s.register("a")
        s.own("a", client=other)
        s.commit(20)

    return setup


def gave_up(s: Scripted) -> None:
    s.register("a")
    s.register("b")
    s.commit(10)


def owner_gone(s: Scripted) -> None:
    s.own("ghost")
    s.commit(20)


def unowned_caught_up(s: Scripted) -> None:
    s.commit(20)


def rewinding(_s: Scripted, k: int) -> int:
    """20, 30, 40, back to 25, 35, 45, back to 30...: every window of three commits holds a rewind."""
    return 20 + 10 * (k % 3) + 5 * (k // 3)


def to_log_end(s: Scripted, _k: int) -> int:
    return s.produced


def scenarios(other) -> list[Scenario]:  # type: ignore[no-untyped-def]
    return [
        Scenario("caught up", 20, member_owning(20), to_log_end, 5, ("OK", "OK"), ("OK", "OK")),
        Scenario("slow", 20, member_owning(10), lambda s, k: 15 + 5 * k, 10, ("WARN", "WARN"), ("WARN", "WARN")),
        Scenario("stopped", 20, member_owning(10), lambda s, k: None, 5, ("STOP", "ERR"), ("STOP", "ERR")),
        Scenario("stalled", 20, member_owning(10), lambda s, k: 10, 2, ("STALL", "ERR"), ("STALL", "ERR")),
        Scenario("rewound", 100, member_owning(10), rewinding, 0, ("REWIND", "ERR"), ("REWIND", "ERR")),
        Scenario("owner not registered", 20, owner_gone, to_log_end, 5, ("ERR", "ERR"), ("OK", "OK")),
        Scenario("owner node of another session", 20, foreign_session_owner(other), to_log_end, 5, ("ERR", "ERR"), ("OK", "OK")),
        Scenario("nobody owns it, caught up", 20, unowned_caught_up, lambda s, k: None, 0, ("WARN", "WARN"), ("OK", "OK")),
        Scenario("members own nothing, lag", 20, gave_up, lambda s, k: None, 0, ("ERR", "ERR"), ("STOP", "ERR")),
    ]  # fmt: skip


@pytest.fixture
def burrow(cluster, tmp_path_factory) -> Iterator[Burrow]:  # type: ignore[no-untyped-def]
    try:
        monitor = Burrow(
            cluster.zookeeper_connect, cluster.bootstrap_servers, tmp_path_factory.mktemp("burrow"), offset_refresh=1
        ).start()
    except ClusterStartError as exc:
        pytest.fail(f"Burrow did not start:\n{exc}", pytrace=False)
    yield monitor
    monitor.stop()


def test_verdicts_beside_burrow(cluster, zk, burrow, topic_factory, group_id) -> None:  # type: ignore[no-untyped-def]
    other = cluster.zk_client()  # the session of the "another session" owner node
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    cases = scenarios(other)
    groups = [Scripted(zk, producer, f"{group_id}-{i}", topic_factory(partitions=1)) for i in range(len(cases))]
    for case, s in zip(cases, groups):
        burrow.wait_for_topic(s.topic, 1)  # Burrow drops commits of topics it does not know yet
        s.produce(case.initial)
    # Burrow's lag of a commit is against the log end it last fetched (clamped at 0): a commit read
    # before it fetched the initial messages would count as caught up (rule 1: OK) for 10 commits.
    deadline = time.monotonic() + 30
    for case, s in zip(cases, groups):
        while burrow.get(f"/v3/kafka/local/topic/{s.topic}").get("offsets") != [case.initial]:
            assert time.monotonic() < deadline, f"Burrow never saw the log end {case.initial} of {s.topic}"
            time.sleep(0.2)
    for case, s in zip(cases, groups):
        case.setup(s)
    deadline = time.monotonic() + 60
    while not {s.group for s in groups} <= set(burrow.groups()):
        assert time.monotonic() < deadline, f"Burrow never listed every group: {burrow.groups()}"
        time.sleep(0.5)

    stop = threading.Event()
    failures: list[BaseException] = []

    def drive(case: Scenario, s: Scripted) -> None:
        try:
            step = 0
            while not stop.wait(PERIOD - SETTLE):
                s.produce(case.produce)
                if stop.wait(SETTLE):
                    return
                offset = case.commit_at(s, step)
                if offset is not None:
                    s.commit(offset)
                step += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    drivers = [threading.Thread(target=drive, args=(c, s), daemon=True) for c, s in zip(cases, groups)]
    env = dict(os.environ, ZKCONSUMER_ZOOKEEPER=cluster.zookeeper_connect)
    try:
        for thread in drivers:
            thread.start()
        watches = [
            subprocess.Popen(
                [
                    ZKCONSUMER,
                    "groups",
                    "status",
                    "-g",
                    s.group,
                    "--watch",
                    str(WATCH),
                    "--interval",
                    str(INTERVAL),
                    "--json",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for s in groups
        ]
        ours = []
        for watch in watches:
            out, err = watch.communicate(timeout=WATCH + 60)
            assert out, err
            ours.append(json.loads(out))
        theirs = [burrow.group_lag(s.group) for s in groups]
        windows = {s.group: burrow.get(f"/v3/kafka/local/consumer/{s.group}") for s in groups}  # Burrow's commits
    finally:
        stop.set()
        for thread in drivers:
            thread.join()
        other.stop()
        other.close()
        producer.flush(10)
    assert not failures, failures

    rows = []
    for case, doc, answer in zip(cases, ours, theirs):
        (partition,) = doc["partitions"]
        (burrow_partition,) = answer["status"]["partitions"]
        got = ((partition["status"], doc["status"]), (burrow_partition["status"], answer["status"]["status"]))
        rows.append((case, got, partition["reason"], doc["why"]))
    print("\n| Scenario | zkconsumer: partition | zkconsumer: group, why | Burrow 1.2.1: partition | Burrow: group |")
    print("|---|---|---|---|---|")
    for case, ((p, g), (bp, bg)), reason, why in rows:
        print(f"| {case.name} | {p}: {reason} | {g}: {why} | {bp} | {bg} |")
    wrong = [
        f"{case.name}: ours {got[0]} (want {case.ours}), Burrow {got[1]} (want {case.burrow})"
        for case, got, _, _ in rows
        if got != (case.ours, case.burrow)
    ]
    for case, s in zip(cases, groups):
        print(f"{case.name}: Burrow's window {json.dumps(windows[s.group].get('topics'))}")
    assert not wrong, "\n".join(wrong)
