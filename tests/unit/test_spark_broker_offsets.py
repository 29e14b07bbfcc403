"""Log offset lookups under broker trouble: Spark's fetchOffset retries, the planner riding out a leader election."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from test_spark_stream_reader import T0, FakeMember, Key, Reader, StandInMember

from zkconsumer.spark.broker_offsets import LogOffsets, OffsetLookupFailed, OffsetsUnavailable
from zkconsumer.spark.offsets import batch_ranges, decode_offsets
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
    """AdminClient.list_offsets over fixed logs; the first `failures` lookups of every partition fail."""

    def __init__(self, logs: dict[Key, tuple[int, int]], errors: list[int]) -> None:
        self.logs, self.errors, self.calls, self.started = logs, list(errors), 0, 0

    def list_offsets(self, request: dict[TopicPartition, Any], **_: object) -> dict[TopicPartition, Answer]:
        self.calls += 1
        code = self.errors.pop(0) if self.errors and self.calls % 2 == 1 else None  # per spans(): 2 calls
        out = {}
        for tp, spec in request.items():
            low, high = self.logs[(tp.topic, tp.partition)]
            error = KafkaException(KafkaError(code)) if code is not None else None
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
    assert offsets.spans([T0]) == {T0: (3, 40)}
    assert slept == [0.25, 0.25]
    assert admin.started == 3, "a new client for every retry: the old one keeps stale leader epochs"
    offsets, _ = lookups({T0: (3, 40)}, [KafkaError.NOT_LEADER_FOR_PARTITION] * 3, attempts=3, sleep=slept.append)
    with pytest.raises(OffsetsUnavailable, match="in 3 attempts") as raised:
        offsets.spans([T0])
    assert raised.value.retriable


def test_no_leader_found_during_a_restart_is_broker_trouble_that_passes() -> None:
    """librdkafka's _NOENT ("Failed to query partition leaders: No leaders found") failed a query
    under a rolling restart of every broker (the suite, 2026-11-29): it is retried like the others."""
    offsets, admin = lookups({T0: (3, 40)}, [KafkaError._NOENT] * 2, attempts=3, sleep=lambda s: None)
    assert offsets.spans([T0]) == {T0: (3, 40)}
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

    def spans(self, keys: Any) -> dict[Key, tuple[int, int]]:
        return StreamMember.spans(self, keys)  # the real one, past the stand-in's dict


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
