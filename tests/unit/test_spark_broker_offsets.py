"""Log offset lookups under broker trouble: Spark's fetchOffset retries, the planner riding out a leader election."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from test_spark_stream_reader import T0, FakeMember, Key, Reader, StandInMember

from zkconsumer.spark.broker_offsets import LogOffsets, OffsetLookupFailed, OffsetsUnavailable, all_answered
from zkconsumer.spark.broker_trouble import Answers, PartitionsUnreadable
from zkconsumer.spark.offsets import batch_ranges, decode_offsets, encode_offsets
from zkconsumer.spark.options import OptionError, parse_options
from zkconsumer.spark.stream_member import StreamMember
from zkconsumer.spark.stream_reader import ReadAllAvailable


class Answer:
    def __init__(self, offset: int | None, error: Exception | None) -> None:
        self.offset, self.error = offset, error

    def result(self, timeout: float | None = None) -> Answer:
        if self.error is not None:
            raise self.error
        return self


class FakeAdmin:
    """AdminClient.list_offsets over fixed logs: the next code of `errors` fails a whole lookup
    (both of spans()'s requests); partitions in `down` fail every request (no leader); `at_time`
    answers timestamp lookups (offset of the first message at or after the time)."""

    def __init__(self, logs: dict[Key, tuple[int, int]], errors: list[int]) -> None:
        self.logs, self.errors, self.calls, self.started = logs, list(errors), 0, 0
        self.down: set[Key] = set()
        self.at_time: dict[Key, int] = {}
        self.requests: list[list[Key]] = []
        self.poison: set[Key] = set()  # a request naming one of these fails whole (_NOENT: no leaders found)
        self.invalid: set[Key] = set()  # answered -1001 without an error (every replica offline)

    def list_offsets(self, request: dict[TopicPartition, Any], **_: object) -> dict[TopicPartition, Answer]:
        self.calls += 1
        timed = any(hasattr(spec, "timestamp") for spec in request.values())
        code = self.errors.pop(0) if self.errors and (timed or self.calls % 2 == 1) else None
        self.requests.append([(tp.topic, tp.partition) for tp in request])
        out = {}
        for tp, spec in request.items():
            key = (tp.topic, tp.partition)
            low, high = self.logs[key]
            failed = code if code is not None else (KafkaError.LEADER_NOT_AVAILABLE if key in self.down else None)
            if failed is None and self.poison & {(t.topic, t.partition) for t in request}:
                failed = KafkaError._NOENT
            error = KafkaException(KafkaError(failed)) if failed is not None else None
            if key in self.invalid:
                out[tp] = Answer(-1001, error)
            elif hasattr(spec, "timestamp"):
                out[tp] = Answer(self.at_time.get(key, -1), error)
            else:
                out[tp] = Answer(low if spec._value == -2 else high, error)  # OffsetSpec.earliest()
        return out

    def poll(self, timeout: float) -> int:
        return 0


def lookups(logs: dict[Key, tuple[int, int]], errors: list[int], **kwargs: Any) -> tuple[LogOffsets, FakeAdmin]:
    """LogOffsets over one FakeAdmin (its errors shared by every client it starts); `admin.started`
    counts the clients."""
    admin = FakeAdmin(logs, errors)

    def start(config: dict[str, Any]) -> FakeAdmin:
        admin.started += 1
        return admin

    return LogOffsets("b1:9092", read_committed=True, client_factory=start, **kwargs), admin


def test_log_offsets_are_tried_num_retries_times_interval_apart_on_broker_trouble() -> None:
    slept: list[float] = []
    offsets, admin = lookups(
        {T0: (3, 40)}, [KafkaError.FENCED_LEADER_EPOCH] * 2, attempts=3, interval_s=0.25, sleep=slept.append
    )
    assert offsets.spans([T0]) == Answers({T0: (3, 40)})
    assert slept == [0.25, 0.25]
    assert admin.started == 3, "a new client for every retry: the old one keeps stale leader epochs"
    offsets, _ = lookups({T0: (3, 40)}, [KafkaError.NOT_LEADER_FOR_PARTITION] * 3, attempts=3, sleep=slept.append)
    got = offsets.spans([T0])
    assert got.found == {} and "NOT_LEADER" in got.trouble[T0]
    with pytest.raises(OffsetsUnavailable, match=r"did not answer for t-0 after every") as raised:
        all_answered(got, "b1:9092")  # a batch read plans all or nothing
    assert raised.value.retriable


def test_no_leader_found_during_a_restart_is_broker_trouble_that_passes() -> None:
    """librdkafka's _NOENT ("Failed to query partition leaders: No leaders found") failed a query
    under a rolling restart of every broker (the suite, 2026-11-29): it is retried like the others."""
    offsets, admin = lookups({T0: (3, 40)}, [KafkaError._NOENT] * 2, attempts=3, sleep=lambda s: None)
    assert offsets.spans([T0]) == Answers({T0: (3, 40)})
    assert admin.started == 3


def test_an_error_no_retry_fixes_fails_at_once_naming_the_partitions() -> None:
    slept: list[float] = []
    offsets, admin = lookups({T0: (0, 5)}, [KafkaError.TOPIC_AUTHORIZATION_FAILED], sleep=slept.append)
    with pytest.raises(OffsetLookupFailed, match="t-0 from b1:9092 failed.*not retried") as raised:
        offsets.spans([T0])
    assert not raised.value.retriable and slept == [] and admin.calls == 2


def test_the_fetch_offset_options_take_sparks_names_and_defaults() -> None:
    base = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}
    opts = parse_options(base, streaming=True)
    assert (opts.fetch_offset_attempts, opts.fetch_offset_interval_ms) == (3, 1000)
    opts = parse_options({**base, "fetchOffset.numRetries": "5", "fetchOffset.retryIntervalMs": "0"}, streaming=True)
    assert (opts.fetch_offset_attempts, opts.fetch_offset_interval_ms) == (5, 0)
    assert "fetchoffset.numretries" not in opts.consumer_props
    with pytest.raises(OptionError, match="(?i)fetchOffset.numRetries"):
        parse_options({**base, "fetchOffset.numRetries": "0"}, streaming=True)


class BrokerTrouble(StandInMember):
    """The real StreamMember and its real LogOffsets, over an admin client whose lookups fail."""

    def __init__(self, opts: Any, member: FakeMember, logs: dict[Key, tuple[int, int]], errors: list[int]) -> None:
        super().__init__(opts, member, logs)
        self._log_offsets, self.admin = lookups(logs, errors, attempts=opts.fetch_offset_attempts, interval_s=0)

    def spans(self, keys: Any) -> Answers[tuple[int, int]]:
        return StreamMember.spans(self, keys)  # the real one, past the stand-in's dict

    def times(self, times: Any) -> Answers[int]:
        return StreamMember.times(self, times)


def troubled(member: FakeMember, logs: dict[Key, tuple[int, int]], errors: list[int], **options: str) -> Reader:
    reader = Reader(member, logs, **{"fetchOffset.retryIntervalMs": "0", **options})
    reader.member = BrokerTrouble(reader.opts, member, logs, errors)
    return reader


def test_a_leader_election_under_a_trigger_plans_nothing_that_trigger_instead_of_failing_the_query() -> None:
    member = FakeMember()
    member.claim(T0, 10, epoch=100)
    reader = troubled(member, {T0: (0, 40)}, [])
    start = reader.initialOffset()
    reader.member.admin.errors = [KafkaError.LEADER_NOT_AVAILABLE] * 3  # type: ignore[attr-defined]
    assert reader.latestOffset(start, ReadAllAvailable()) is start
    assert batch_ranges(start, reader.latestOffset(start, ReadAllAvailable())) == [(T0, 10, 40)]


def test_brokers_down_when_the_query_starts_leave_its_starts_to_the_first_trigger_they_answer() -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    reader = troubled(member, {T0: (5, 40)}, [KafkaError._TRANSPORT] * 3)  # startingOffsets latest
    start = reader.initialOffset()
    assert decode_offsets(start) == {}
    reader.logs[T0] = (5, 60)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert decode_offsets(end) == {T0: 60}, "startingOffsets=latest still applies"


# ---- issue 52: one rule for broker trouble, per partition ----------------------------------------
T1 = ("t", 1)


def test_one_partition_without_a_leader_is_retried_alone_and_does_not_hide_the_others() -> None:
    slept: list[float] = []
    offsets, admin = lookups({T0: (0, 40), T1: (0, 30)}, [], attempts=3, sleep=slept.append)
    admin.down = {T1}
    got = offsets.spans([T0, T1])
    assert got.found == {T0: (0, 40)} and "LEADER_NOT_AVAILABLE" in got.trouble[T1]
    assert admin.requests[2:] == [[T1]] * 4, "the retries ask only for the partition in trouble"
    assert slept == [1.0, 1.0]


def test_an_offset_of_minus_1001_without_an_error_is_no_answer() -> None:
    """Seen on the real cluster (tests/spark/test_spark_broker_trouble.py, one offline partition):
    librdkafka answered -1001 for the partition whose only broker was down, and the planner took
    it for a log [-1001, -1001) and failed the query with DataLossError."""
    offsets, admin = lookups({T0: (0, 40), T1: (0, 30)}, [], sleep=lambda s: None)
    admin.invalid = {T1}
    admin.at_time = {T0: 12}
    got = offsets.spans([T0, T1])
    assert got.found == {T0: (0, 40)} and "-1001" in got.trouble[T1]
    timed = offsets.times({T0: 5, T1: 5})
    assert timed.found == {T0: 12} and set(timed.trouble) == {T1}
    admin.invalid, admin.at_time = set(), {}
    assert offsets.times({T0: 5}).found == {T0: -1}, "-1: no message that late, an answer"


def test_a_request_wide_error_is_retried_per_partition_so_the_healthy_one_is_answered() -> None:
    offsets, admin = lookups({T0: (0, 40), T1: (0, 30)}, [], attempts=2, sleep=lambda s: None)
    admin.poison = admin.down = {T1}
    got = offsets.spans([T0, T1])
    assert got.found == {T0: (0, 40)} and set(got.trouble) == {T1}


def test_timestamp_lookups_are_retried_and_never_raise_the_raw_kafka_exception() -> None:
    """Finding 2: startingTimestamp's lookup raised KafkaException(LEADER_NOT_AVAILABLE)."""
    offsets, admin = lookups({T0: (0, 40), T1: (0, 30)}, [KafkaError.LEADER_NOT_AVAILABLE], sleep=lambda s: None)
    admin.at_time = {T0: 12, T1: 7}
    assert offsets.times({T0: 1000, T1: 1000}) == Answers({T0: 12, T1: 7})
    admin.down = {T1}
    got = offsets.times({T0: 1000, T1: 1000})
    assert got.found == {T0: 12} and set(got.trouble) == {T1}


def test_a_timestamp_started_query_rides_out_a_leader_election_at_its_start() -> None:
    """Finding 2: initialOffset() with startingTimestamp failed the query on LEADER_NOT_AVAILABLE."""
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    reader = troubled(member, {T0: (0, 40)}, [KafkaError.LEADER_NOT_AVAILABLE] * 3, startingTimestamp="1000")
    reader.member.admin.at_time = {T0: 25}  # type: ignore[attr-defined]
    start = reader.initialOffset()
    assert decode_offsets(start) == {}, "its start is left to the first trigger the brokers answer"
    end = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, end) == [(T0, 25, 40)], "the time still applies"


def test_one_offline_partition_does_not_stall_the_healthy_one() -> None:
    """Finding 3: one request for all owned partitions planned the healthy one in 0 of 5 triggers."""
    member = FakeMember()
    member.claim(T0, 10, epoch=100)
    member.claim(T1, 5, epoch=100)
    reader = troubled(member, {T0: (0, 40), T1: (0, 30)}, [])
    start = reader.initialOffset()
    reader.member.admin.down = {T1}  # type: ignore[attr-defined]
    reader.logs[T0] = (0, 50)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, end) == [(T0, 10, 50)] and decode_offsets(end)[T1] == 5
    reader.member.admin.down = set()  # type: ignore[attr-defined]
    assert batch_ranges(end, reader.latestOffset(end, ReadAllAvailable())) == [(T1, 5, 30)]


def test_a_partition_unreadable_past_the_bound_fails_the_query_by_name() -> None:
    member = FakeMember()
    member.claim(T0, 10, epoch=100)
    member.claim(T1, 5, epoch=100)
    reader = troubled(member, {T0: (0, 40), T1: (0, 30)}, [], unreadablePartitionTimeoutMs="60000")
    now = [1000.0]
    reader.clock = lambda: now[0]
    start = reader.initialOffset()
    reader.member.admin.down = {T1}  # type: ignore[attr-defined]
    end = reader.latestOffset(start, ReadAllAvailable())
    now[0] += 59
    end = reader.latestOffset(end, ReadAllAvailable())  # still within the bound: the rest is planned
    now[0] += 2
    with pytest.raises(
        PartitionsUnreadable, match=r"t-1 for 61 s \(.*LEADER_NOT_AVAILABLE.*unreadablePartitionTimeoutMs=60000"
    ) as raised:
        reader.latestOffset(end, ReadAllAvailable())
    assert "t-0" not in str(raised.value), "only the partition in trouble is named"


def test_a_restart_whose_first_trigger_planned_nothing_keeps_the_checkpoints_precedence() -> None:
    """Finding 5: the first trigger was used up before its lookup; after broker trouble the query
    resumed at ZooKeeper's 500 instead of the checkpoint's 100."""
    checkpoint = encode_offsets({T0: 100}, epochs={"t": 100})
    member = FakeMember()
    member.claim(T0, 500, epoch=100)  # an operator moved ZooKeeper ahead while the query was down
    reader = troubled(member, {T0: (0, 900)}, [KafkaError.LEADER_NOT_AVAILABLE] * 3)
    assert reader.latestOffset(checkpoint, ReadAllAvailable()) is checkpoint
    end = reader.latestOffset(checkpoint, ReadAllAvailable())
    assert batch_ranges(checkpoint, end) == [(T0, 100, 900)], "the checkpoint wins, as logged"


def test_a_partition_kept_from_the_first_plan_and_handed_over_meanwhile_resumes_at_the_members_commit() -> None:
    """Found by the model (harness/spark_model.py, seed 9): the checkpoint's precedence kept for a
    partition broker trouble left out of the first plan outlived a hand-over; the query re-read
    what a Scala member had read and committed, and wrote ZooKeeper back to 0."""
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    member.claim(T1, -1, epoch=100)
    reader = troubled(member, {T0: (0, 19), T1: (0, 11)}, [], startingOffsets="earliest")
    start = reader.initialOffset()
    reader.member.admin.down = {T0}  # type: ignore[attr-defined]
    first = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, first) == [(T1, 0, 11)]
    reader.member.admin.down = set()  # type: ignore[attr-defined]
    member.release([T0])  # a Scala member takes it, reads [0, 19) and commits 19
    member.nodes[T0] = (19, 100)
    member.claim(T0, 19, epoch=100)
    nxt = reader.latestOffset(first, ReadAllAvailable())
    assert decode_offsets(nxt)[T0] == 19 and batch_ranges(first, nxt) == []
    assert member.nodes[T0] == (19, 100), "ZooKeeper not written back"
