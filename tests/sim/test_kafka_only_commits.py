"""Regressions (review of issue #42): Kafka-only commits (offsets.storage=kafka, no dual commit) against a successor's offsets.

Issue #42 gated Kafka-only commits by the lease (`Commits.ownership_unconfirmed`): ZooKeeper must vouch
for our session. That gate is per member, not per partition: ZooKeeper commits are fenced per owner
node, Kafka-only ones are not. These tests look at the two ways a Kafka-only commit can still write
old positions over a successor's progress.
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import TopicPartition as KafkaTP

from harness.sim_follower import LostFollower
from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Schedule
from harness.simulation import SimMember
from zkconsumer.connector import ConsumerConnector
from zkconsumer.group_member import GroupMember
from zkconsumer.zookeeper import znodes

KEY = (TOPIC, 0)


class KafkaOffsets:
    """The broker-side offset store of the group: the last offset committed per partition, whoever
    committed it (a simple commit with generation -1 is accepted from anyone, as Scala's are)."""

    def __init__(self) -> None:
        self.offsets: dict[tuple[str, int], int] = {}
        self.commits: list[dict[tuple[str, int], int]] = []

    def commit(self, *, offsets: list[KafkaTP], asynchronous: bool) -> list[KafkaTP]:
        sent = {(tp.topic, tp.partition): tp.offset for tp in offsets}
        self.commits.append(sent)
        self.offsets.update(sent)
        return offsets

    def committed(self, partitions: list[KafkaTP], timeout: float) -> list[KafkaTP]:
        return [KafkaTP(tp.topic, tp.partition, self.offsets.get((tp.topic, tp.partition), -1001)) for tp in partitions]


def _settle(s: Schedule, members: list[SimMember], rounds: int = 8) -> None:
    s.calm_rounds(members, rounds)


def _kafka_only(m: SimMember, kafka: KafkaOffsets) -> None:
    m.offsets.use_zookeeper, m.offsets.use_kafka = False, True  # offsets.storage=kafka, dual.commit off
    m.fetcher.consumer = kafka  # type: ignore[assignment]  # the Consumer Kafka-side commits go through


def test_a_kafka_only_commit_of_a_partition_in_doubt_leaves_its_successor_alone() -> None:
    """Failed on 9a44e14 (finding K1). A stale Scala member deletes our owner node of t-0 and a Scala
    claimant takes it, resumes from our Kafka commit and commits further. We heard of it (the
    watch fired: t-0 is in doubt, stopped), but our auto-commit runs before our rebalance does: a
    Kafka-only commit sends every owned partition's position (KAFKA-1510), the doubted one too, with
    no owner check, and the successor's offset goes back. A ZooKeeper commit in the same place reads
    the owner node afresh and writes nothing (test_ownership_doubt)."""
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    _settle(s, [m1])
    assert set(m1.assignment.owned()) == {(TOPIC, 0), (TOPIC, 1)}
    kafka = KafkaOffsets()
    _kafka_only(m1, kafka)
    s.log.produce(KEY, 10)
    _settle(s, [m1], 2)
    m1.commit()
    ours = kafka.offsets[KEY]
    assert ours > 0

    path = znodes.owner_path(GROUP, *KEY)
    s.admin.delete(path)  # a Scala member acting on a stale topic registry: blind delete
    scala = s.model.client("scala")
    scala.start()
    scala.create(path, znodes.encode_owner(f"{GROUP}_scala-0"), ephemeral=True)
    s.model.deliver(m1.client)  # our watch fires: t-0 is in doubt, its delivery stopped
    info = m1.assignment.get(KEY)
    assert info is not None and not info.active and m1.pending, "the doubt machinery did not act"
    # The Scala successor resumes from our Kafka offset, consumes 10 more and commits that.
    s.log.produce(KEY, 10)
    kafka.commit(offsets=[KafkaTP(TOPIC, 0, ours + 10)], asynchronous=False)

    m1.commit()  # auto-commit's thread wins the rebalance lock before the rebalance thread does
    assert kafka.offsets[KEY] == ours + 10, (
        f"a Kafka-only commit of a partition in doubt rewound its successor from {ours + 10} to {kafka.offsets[KEY]}"
    )


class _NoThread:
    def stop(self, timeout: float) -> None:
        pass


class _SimMemberParts:
    """What GroupMember.stop uses of a GroupMember, over a simulated member's parts (no threads)."""

    def __init__(self, m: SimMember) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self.rebalancer = m.rebalancer
        self.tasks: list[Any] = []
        self.watchdog = None
        self.worker = _NoThread()
        self.membership = m.membership
        self.streams = m.streams
        self.consumer_id = m.consumer_id
        self.assignment = m.assignment
        self.group = m.group

    def stop(self, deadline: Any, timeout: float) -> dict[tuple[str, int], int]:
        return GroupMember.stop(self, deadline, timeout)  # type: ignore[arg-type]

    def _carry_on_leaving(self, switch: Any, timeout: float) -> None:
        GroupMember._carry_on_leaving(self, switch, timeout)  # type: ignore[arg-type]


class _DyingConnector:
    """What ConsumerConnector._die and _leave use of a connector, over a simulated member's parts:
    the production code of a background failure (leave the group, final commit) runs unchanged."""

    def __init__(self, m: SimMember) -> None:
        self.failure: BaseException | None = None
        self._closed = False
        self.consumer_id = m.consumer_id
        self.assignment = m.assignment
        self.group = m.group
        self._member = _SimMemberParts(m)
        self._zk = m.client
        self.config = m.config  # ZooKeeper coordination
        self._broker = None
        self.left = threading.Event()

    def shutdown(self, timeout: float = 1.0) -> dict[tuple[str, int], int]:
        self._closed = True
        try:
            return ConsumerConnector._leave(self, timeout)  # type: ignore[arg-type]
        finally:
            self.left.set()


def test_a_member_that_dies_after_its_lease_ran_out_does_not_commit_old_positions_to_kafka() -> None:
    """Failed on 9a44e14 (finding K2). Kafka-only storage; the member's server is a follower that lost
    its leader: it still answers reads (for syncLimit x tickTime), but no renewal (a sync) gets
    through, so the lease runs out and `ownership_unconfirmed` refuses commits, as it should: the
    leader expires the session and a successor owns and commits t-0. Then a background thread fails
    (`ConsumerConnector._die`): it calls `streams.fail`, whose `gate.end()` makes the gate usable for
    good (lease = inf), before the leave's final commit asks that same gate whether the lease still
    holds (`Commits.ownership_unconfirmed`); the commit's only ZooKeeper request, the topic's
    incarnation, is a read the follower answers: our old positions go to Kafka."""
    s = Schedule(0, Options(members=0, partitions=2, session_timeout_ms=4000))
    m1 = s.add_member()
    _settle(s, [m1])
    kafka = KafkaOffsets()
    _kafka_only(m1, kafka)
    s.log.produce(KEY, 10)
    _settle(s, [m1], 2)
    m1.commit()
    assert kafka.offsets[KEY] > 0
    s.log.produce(KEY, 5)
    _settle(s, [m1], 1)  # consumed further, not committed yet

    follower = LostFollower(s.model, m1.client)
    follower.cut()
    for _ in range(20):  # 5 s: renewals go unanswered, the leader expires the session
        s.model.advance(ROUND_MS)
        m1.renew_lease()
    assert m1.group.session not in s.model.live_sessions()
    assert not m1.streams.gate.usable()
    assert m1.rebalancer.commits.ownership_unconfirmed() is not None  # commits are refused now...
    # ...and a successor owns t-0 and has committed past our position.
    kafka.commit(offsets=[KafkaTP(TOPIC, 0, 30)], asynchronous=False)
    before = len(kafka.commits)

    dying = _DyingConnector(m1)
    ConsumerConnector._die(dying, RuntimeError("a bug in a background thread"))  # type: ignore[arg-type]
    assert dying.left.wait(10.0)
    assert kafka.commits[before:] == [], (
        f"the leave's final commit wrote {kafka.commits[before:]} to Kafka after the lease had run out "
        f"(the successor's 30 is now {kafka.offsets[KEY]})"
    )


def test_a_plain_leave_after_the_lease_ran_out_commits_nothing_to_kafka() -> None:
    """Holds (kept as a regression): the same member leaving by `shutdown()` instead of a failure.
    Rebalancer.shutdown commits before `streams.close()` ends the gate, so the lease still counts
    and the final Kafka-only commit is refused. Fails if the final commit moves after the close."""
    s = Schedule(0, Options(members=0, partitions=2, session_timeout_ms=4000))
    m1 = s.add_member()
    _settle(s, [m1])
    kafka = KafkaOffsets()
    _kafka_only(m1, kafka)
    s.log.produce(KEY, 10)
    _settle(s, [m1], 2)
    follower = LostFollower(s.model, m1.client)
    follower.cut()
    for _ in range(20):
        s.model.advance(ROUND_MS)
        m1.renew_lease()
    assert not m1.streams.gate.usable()
    leaving = _DyingConnector(m1)
    leaving.shutdown(1.0)
    assert kafka.commits == []
