"""The stream reader's planning against a fake member (the real Assignment) and fake logs: incarnations, new partitions, batch 0, stop."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from kazoo.exceptions import SessionExpiredError

from zkconsumer.cluster.broker_nodes import BrokerInfo
from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.errors import ZooKeeperAccessDenied
from zkconsumer.spark.broker_trouble import Answers
from zkconsumer.spark.offsets import DataLossError, batch_ranges, decode_offsets
from zkconsumer.spark.options import SourceOptions, parse_options
from zkconsumer.spark.stream_member import MemberLeft, StreamMember
from zkconsumer.spark.stream_reader import ReadAllAvailable, ZkStreamReader

Key = tuple[str, int]
T0, T1 = ("t", 0), ("t", 1)


class FakeMember:
    """A ConsumerConnector(fetch=False) reduced to its partition state (the real Assignment) and the
    offset nodes it writes: key -> (offset, incarnation of the topic the node was written in)."""

    def __init__(self) -> None:
        self.assignment = Assignment()
        self.nodes: dict[Key, tuple[int, int | None]] = {}
        self.left = False
        self.confirmed = True  # what the member's delivery gate says (connected, lease running)
        self.failure: BaseException | None = None  # set when the member left the group on a failure
        self.consumer_id = "q_driver-1"
        self.owner_nodes: dict[Key, str] = {}  # other members' owner nodes, as ZooKeeper names them

    def ownership_confirmed(self) -> bool:
        return self.confirmed

    def claim(self, key: Key, committed: int, epoch: int) -> None:
        """Claimed (again) in incarnation `epoch`; `committed` is what read_offsets gave (-1: none)."""
        self.assignment.install([PartitionTopicInfo(key[0], key[1], "q-0", StreamQueue(2), committed, epoch)])

    def release(self, keys: Iterable[Key]) -> None:
        self.assignment.drop(keys)

    def owned_positions(self) -> dict[Key, int]:
        return self.assignment.positions()

    def commit_positions(
        self, positions: Mapping[Key, int], *, epochs: Mapping[str, int | None] | None = None
    ) -> dict[Key, bool]:
        recorded = (
            self.assignment.record_positions(positions)
            if epochs is None
            else self.assignment.record_positions(positions, epochs)
        )
        done = {i.key: i for i in recorded}
        for key, info in done.items():
            self.nodes[key] = (info.consumed_offset, info.epoch)
            info.committed_offset = info.consumed_offset  # what the real offset store does once written
        return {k: k in done for k in positions}

    def shutdown(self) -> None:
        self.left = True


class StandInMember(StreamMember):
    """The real StreamMember over a FakeMember, with the brokers' log spans from a dict; `down`:
    partitions the brokers answer nothing for (after every attempt); `at_time`: what ListOffsets
    answers for a timestamp lookup of a partition (-1: no message at or after it)."""

    def __init__(self, opts: SourceOptions, member: FakeMember, logs: dict[Key, tuple[int, int]]) -> None:
        super().__init__(opts)
        self._conn, self.fake, self.logs = member, member, logs
        self.down: set[Key] = set()
        self.at_time: dict[Key, int] = {}
        self.times_asked: list[dict[Key, int]] = []

    def _join(self) -> Any:
        return self.fake

    def spans(self, keys: Any) -> Answers[tuple[int, int]]:
        return Answers(
            {k: self.logs[k] for k in keys if k not in self.down},
            {k: "LEADER_NOT_AVAILABLE" for k in keys if k in self.down},
        )

    def times(self, times: Mapping[Key, int]) -> Answers[int]:
        self.times_asked.append(dict(times))
        return Answers(
            {k: self.at_time.get(k, -1) for k in times if k not in self.down},
            {k: "LEADER_NOT_AVAILABLE" for k in times if k in self.down},
        )

    def subscription(self) -> dict[str, tuple[int, int]]:
        """The topics of the logs now: incarnation of their claims (100 unclaimed), partition count."""
        epochs = {k[0]: i.epoch for k, i in self.fake.assignment.owned_infos().items()}
        counts: dict[str, int] = {}
        for topic, partition in self.logs:
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        return {t: (epochs.get(t, 100), n) for t, n in counts.items()}

    def topic_epochs(self, topics: Any) -> dict[str, int | None]:
        """ZooKeeper's topic nodes: a test's `cluster` stand-in, else the topics of the logs (the
        incarnation of their claims, 100 unclaimed); a topic without a log is deleted."""
        if hasattr(self.fake, "cluster"):
            return dict(self.fake.cluster.topic_epochs(topics))
        epochs = {k[0]: i.epoch for k, i in self.fake.assignment.owned_infos().items() if i.epoch is not None}
        there = {k[0] for k in self.logs}
        return {t: (epochs.get(t, 100) if t in there else None) for t in topics}

    def owners(self, keys: Any) -> dict[Key, str | None]:
        mine = self.fake.assignment.owned()
        return {k: mine.get(k) or self.fake.owner_nodes.get(k) for k in keys}


class Reader(ZkStreamReader):
    """The real reader and its real StreamMember; only the connector and the brokers' log spans are fakes."""

    def __init__(self, member: FakeMember, logs: dict[Key, tuple[int, int]], **options: str) -> None:
        opts = parse_options(
            {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t", **options}, streaming=True
        )
        super().__init__(opts, StandInMember(opts, member, logs))
        self.logs = logs


def test_a_restarted_query_does_not_reuse_its_checkpoint_inside_a_re_created_topic() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    checkpoint = reader.latestOffset(first, ReadAllAvailable())  # batch 0 [0, 30) done: 30 committed
    assert decode_offsets(checkpoint) == {T0: 30} and member.nodes[T0] == (30, 100)
    # The topic is deleted and created again with 45 messages; read_offsets ignores the old node.
    restarted_member = FakeMember()
    restarted_member.claim(T0, -1, epoch=200)
    restarted = Reader(restarted_member, {T0: (0, 45)}, startingOffsets="earliest", failOnDataLoss="false")
    end = restarted.latestOffset(checkpoint, ReadAllAvailable())
    assert batch_ranges(checkpoint, end) == [(T0, 0, 45)], "the new topic is read from its start"
    assert restarted_member.nodes.get(T0, (0, 200)) == (0, 200), "no old position in the new topic's node"


def test_a_running_query_re_claiming_a_re_created_topic_starts_over_and_never_commits_old_positions() -> None:
    member = FakeMember()
    member.claim(T0, 50, epoch=100)
    reader = Reader(member, {T0: (0, 80)}, failOnDataLoss="false")
    end = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    assert batch_ranges(reader.initialOffset(), end) == [(T0, 50, 80)]
    # Re-created while batch [50, 80) runs; the rebalance re-claims the new incarnation (nothing committed).
    member.claim(T0, -1, epoch=200)
    reader.logs[T0] = (0, 60)
    reader.commit(end)  # Spark's commit of the old batch: 80 belongs to the old topic
    assert T0 not in member.nodes or member.nodes[T0][0] != 80
    nxt = reader.latestOffset(end, ReadAllAvailable())
    assert batch_ranges(end, nxt) == [(T0, 0, 60)], "the new incarnation from its start, not from 80 (or 60)"
    assert all(offset <= 60 for offset, epoch in member.nodes.values() if epoch == 200)


@pytest.mark.parametrize("recreated", [True, False])
def test_fail_on_data_loss_fails_a_running_query_whose_topic_is_deleted_or_re_created(recreated: bool) -> None:
    """Finding 6 (issue 52): only replayed batches failed; Spark's source reports both as data loss."""
    member = FakeMember()
    member.claim(T0, 50, epoch=100)
    member.claim(("u", 0), 0, epoch=300)
    reader = Reader(member, {T0: (0, 80), ("u", 0): (0, 5)}, topics="t,u")
    end = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    if recreated:
        member.claim(T0, -1, epoch=200)
        reader.logs[T0] = (0, 60)
    else:
        member.release([T0])  # the rebalance after the deletion drops it
        del reader.logs[T0]
    with pytest.raises(DataLossError, match="topic t was deleted" + (" and created again" if recreated else "")):
        reader.latestOffset(end, ReadAllAvailable())
    if not recreated:  # failOnDataLoss=false: dropped, the other topic goes on
        reader = Reader(member, reader.logs, topics="t,u", failOnDataLoss="false")
        reader.logs[("u", 0)] = (0, 9)
        nxt = reader.latestOffset(end, ReadAllAvailable())
        assert decode_offsets(nxt) == {("u", 0): 9}


def test_a_partition_new_to_a_running_query_starts_at_earliest_even_with_starting_offsets_latest() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    reader = Reader(member, {T0: (0, 0)})  # default startingOffsets: latest
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadAllAvailable()) is start  # nothing yet
    reader.logs[T1] = (0, 25)  # a partition added to the topic; 25 messages before the trigger
    member.claim(T1, -1, epoch=100)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, end) == [(T1, 0, 25)]


def test_batch_zero_replays_exactly_although_initial_offset_answers_differently_after_a_restart() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    member.claim(T1, 7, epoch=100)
    reader = Reader(member, {T0: (0, 40), T1: (0, 20)})  # startingOffsets latest: T0 starts at 40
    initial = reader.initialOffset()
    reader.logs[T0] = (0, 55)
    end0 = reader.latestOffset(initial, ReadAllAvailable())
    assert batch_ranges(initial, end0) == [(T0, 40, 55), (T1, 7, 20)]
    # The query dies before batch 0 completes; meanwhile the log grows and the group's offset moves.
    # Spark keeps end0 only and asks the new process for initialOffset() again.
    member2 = FakeMember()
    member2.claim(T0, -1, epoch=100)
    member2.claim(T1, 12, epoch=100)
    again = Reader(member2, {T0: (0, 70), T1: (0, 20)}).initialOffset()
    assert decode_offsets(again) != decode_offsets(initial)
    assert batch_ranges(again, end0) == [(T0, 40, 55), (T1, 7, 20)]


def test_stop_leaves_the_group_without_committing_a_batch_spark_has_not_confirmed() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    reader.latestOffset(reader.initialOffset(), ReadAllAvailable())  # batch 0 [0, 30): maybe cancelled by the stop
    reader.stop()
    assert member.left and member.nodes.get(T0, (0, 100))[0] == 0


def test_positions_counted_in_an_old_incarnation_are_not_recorded_into_the_new_claim() -> None:
    assignment = Assignment()
    assignment.install([PartitionTopicInfo("t", 0, "q-0", StreamQueue(2), -1, 200)])
    assert assignment.record_positions({T0: 80}, {"t": 100}) == []
    assert assignment.positions() == {T0: -1}
    assert [i.consumed_offset for i in assignment.record_positions({T0: 5}, {"t": 200})] == [5]


def test_nothing_new_is_planned_while_zookeeper_does_not_vouch_for_the_ownership() -> None:
    """A freeze past the session timeout: kazoo still says CONNECTED, but the lease ran out and
    another member may already own the partitions (before: the query planned them anyway)."""
    member = FakeMember()
    member.claim(T0, 10, epoch=100)
    reader = Reader(member, {T0: (0, 40)})
    start = reader.initialOffset()
    member.confirmed = False
    assert reader.latestOffset(start, ReadAllAvailable()) is start
    member.confirmed = True
    assert batch_ranges(start, reader.latestOffset(start, ReadAllAvailable())) == [(T0, 10, 40)]


def test_nothing_new_is_planned_when_the_lease_runs_out_during_the_planning_commit() -> None:
    """A disconnection leaves delivery (and planning) to the lease: a trigger that starts while it
    holds can block in its ZooKeeper commit until it has run out; it must then plan nothing."""

    class LinkDown(FakeMember):
        down = False

        def commit_positions(self, positions, *, epochs=None):  # type: ignore[no-untyped-def]
            if not self.down:
                return super().commit_positions(positions, epochs=epochs)
            self.confirmed = False  # the write waited with the link down: the lease ran out meanwhile
            raise SessionExpiredError()

    member = LinkDown()
    member.claim(T0, 0, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())  # batch [0, 30)
    reader.logs[T0] = (0, 60)
    member.down = True  # the next trigger starts with the lease still running, then commits 30
    assert reader.latestOffset(first, ReadAllAvailable()) is first
    member.down, member.confirmed = False, True  # back: the same trigger plans [30, 60)
    assert batch_ranges(first, reader.latestOffset(first, ReadAllAvailable())) == [(T0, 30, 60)]


def test_a_deleted_topics_fenced_partitions_are_not_planned_nor_their_offsets_listed() -> None:
    """Between the topic's deletion (the member fences its partitions at once) and the next
    rebalance, the query must not ask the brokers for their log offsets: that failed the query."""
    member = FakeMember()
    member.claim(T0, 0, epoch=100)
    member.assignment.install([PartitionTopicInfo("gone", 0, "q-0", StreamQueue(2), 5, 7)])
    reader = Reader(member, {T0: (0, 20), ("gone", 0): (0, 9)}, failOnDataLoss="false")
    start = reader.initialOffset()
    assert decode_offsets(start) == {T0: 0, ("gone", 0): 5}
    member.assignment.fence_topic("gone", None)
    del reader.logs[("gone", 0)]  # the brokers no longer know it: asking raises (KeyError here)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, end) == [(T0, 0, 20)]


class FlakyBrokers:
    """/brokers/ids as the member reads it: answers until the session ends under the read."""

    def __init__(self, error: Exception) -> None:
        self.error: Exception | None = None
        self.later = error

    def brokers(self) -> list[BrokerInfo]:
        if self.error is not None:
            raise self.error
        return [BrokerInfo(1, "b1", 9092, ("PLAINTEXT://b1:9092",), None, 4)]


def test_planning_keeps_the_brokers_read_last_when_the_session_ends_under_the_read() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    brokers = FlakyBrokers(SessionExpiredError())
    member.cluster = brokers  # type: ignore[attr-defined]
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert {r.bootstrap for t in reader.partitions(start, end) for r in t.ranges} == {"b1:9092"}
    brokers.error = brokers.later  # the driver's session expires while Spark plans the next batch
    assert {r.bootstrap for t in reader.partitions(start, end) for r in t.ranges} == {"b1:9092"}
    brokers.error = ValueError("a bug")  # not retriable: the query must fail, not plan on
    with pytest.raises(ValueError):
        reader.partitions(start, end)


def test_planning_without_a_broker_list_read_before_fails_on_a_session_end() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    brokers = FlakyBrokers(SessionExpiredError())
    brokers.error = brokers.later
    member.cluster = brokers  # type: ignore[attr-defined]
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    with pytest.raises(SessionExpiredError):
        reader.partitions(start, end)


def test_a_member_that_left_on_a_failure_fails_the_next_planning_call() -> None:
    # Its gate is open for good once it left (its iterators must not block), so ownership looks
    # confirmed and nothing is owned: the query would plan nothing forever, with no error.
    member = FakeMember()
    member.claim(T0, 10, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    start = reader.initialOffset()
    cause = ZooKeeperAccessDenied("ZooKeeper refused claim 1 partitions to this client: NoAuth")
    member.failure = cause
    member.assignment.lose_all()
    with pytest.raises(MemberLeft, match="left the group: ZooKeeperAccessDenied: ZooKeeper refused claim") as raised:
        reader.latestOffset(start, ReadAllAvailable())
    assert raised.value.__cause__ is cause


def test_a_partition_handed_over_to_a_new_query_later_resumes_at_the_groups_commits() -> None:
    # ignoreCommittedOffsets=true and startingOffsets are about where the query starts, once (as
    # Spark): a partition another member hands over later resumes at that member's commit, and
    # again after it was away and back.
    member = FakeMember()
    member.claim(T0, 5, epoch=100)
    reader = Reader(member, {T0: (0, 30), T1: (0, 40)}, startingOffsets="earliest", ignoreCommittedOffsets="true")
    start = reader.initialOffset()
    assert decode_offsets(start) == {T0: 0}  # the new query ignores the group's 5 for T0, as asked
    end = reader.latestOffset(start, ReadAllAvailable())
    member.claim(T1, 33, epoch=100)  # handed over by a member that committed 33
    later = reader.latestOffset(end, ReadAllAvailable())
    assert batch_ranges(end, later) == [(T1, 33, 40)]
    member.release([T1])
    reader.logs[T1] = (0, 70)
    member.claim(T1, 55, epoch=100)  # away and back: the other member got to 55 meanwhile
    assert batch_ranges(later, reader.latestOffset(later, ReadAllAvailable())) == [(T1, 55, 70)]


def test_a_query_without_the_checkpoint_option_is_told_once_what_a_stop_leaves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Spark gives a Python source nothing but its options: without the checkpoint, stop() cannot
    # know which batch the sink completed, and ZooKeeper stays one batch behind after a stop.
    caplog.set_level(logging.WARNING, logger="zkconsumer.spark.source")
    Reader(FakeMember(), {})
    assert [r.getMessage() for r in caplog.records if "checkpointLocation is not set" in r.getMessage()]
    caplog.clear()
    Reader(FakeMember(), {}, checkpointLocation="/chk/q")
    assert not [r for r in caplog.records if "checkpointLocation" in r.getMessage()]


def test_a_partition_released_while_the_trigger_commits_is_not_in_its_batch() -> None:
    """The planning commit waits for the member's rebalance lock; a rebalance holding it may release
    a partition of the trigger's snapshot. Another member may own it then: the batch must not read
    it (a clean-clone run once planned it, and both read it at once)."""

    class Rebalancing(FakeMember):
        during_commit: Iterable[Key] = ()

        def commit_positions(self, positions, *, epochs=None):  # type: ignore[no-untyped-def]
            self.release(self.during_commit)  # the rebalance ran first, then the commit took the lock
            self.during_commit = ()
            return super().commit_positions(positions, epochs=epochs)

    member = Rebalancing()
    member.claim(T0, 0, epoch=100)
    member.claim(T1, 0, epoch=100)
    reader = Reader(member, {T0: (0, 30), T1: (0, 30)}, startingOffsets="earliest")
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())  # batch [0, 30) of both
    reader.logs.update({T0: (0, 60), T1: (0, 60)})
    member.during_commit = [T1]
    second = reader.latestOffset(first, ReadAllAvailable())
    assert batch_ranges(first, second) == [(T0, 30, 60)]  # T1 stays where it was, unread
    assert member.nodes == {T0: (30, 100)}  # and its commit was refused: no longer ours
    member.claim(T1, 45, epoch=100)  # back later, after another member got to 45
    assert batch_ranges(second, reader.latestOffset(second, ReadAllAvailable())) == [(T1, 45, 60)]
