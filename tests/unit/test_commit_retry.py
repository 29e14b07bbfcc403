"""OffsetStore.commit's retries (tenacity): how often, how long between, what is logged and raised."""

from __future__ import annotations

import logging

import pytest
from kazoo.exceptions import ConnectionLoss

from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.fetcher import CurrentFetcher, NoFetcher
from zkconsumer.offsets import store as store_module
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.zookeeper.deadline import Deadline


class FlakyGroup:
    """Stands in for GroupZk (and ClusterMetadata): commit_offsets raises the queued errors first, then writes."""

    def __init__(self, errors: list[Exception]) -> None:
        self.group_id = "billing"
        self.io = self  # GroupZk.io.deadline
        self.deadline = Deadline(None)
        self.errors = errors
        self.calls = 0
        self.writes: list[dict[tuple[str, int], int]] = []

    def topic_epochs(self, topics):  # type: ignore[no-untyped-def]
        return dict.fromkeys(topics)

    def commit_offsets(self, offsets, owners):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        self.writes.append(dict(offsets))
        return dict.fromkeys(offsets, True)


def info(partition: int, offset: int) -> PartitionTopicInfo:
    return PartitionTopicInfo("t", partition, f"g_c-{partition}", StreamQueue(2), offset, None)


def store(group: FlakyGroup) -> OffsetStore:
    return OffsetStore(
        group,  # type: ignore[arg-type]
        cluster=group,  # type: ignore[arg-type]
        storage="zookeeper",
        dual_commit=False,
        fetcher=CurrentFetcher(lambda _bootstrap: NoFetcher()),
        backoff_ms=1,
        timeout_ms=1000,
    )


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(store_module.time, "sleep", slept.append)
    return slept


def test_a_retriable_failure_is_retried_after_the_backoff_and_logged(
    sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    group = FlakyGroup([ConnectionLoss(), ConnectionLoss()])
    a = info(0, 0)
    a.consumed_offset = 7
    offsets = store(group)
    offsets._backoff_s = 0.25
    assert offsets.commit([a], attempts=3) == 1
    assert group.calls == 3 and group.writes == [{("t", 0): 7}] and offsets.failures == 0
    assert sleeps == [0.25, 0.25]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w.split(" failed")[0] for w in warnings] == ["offset commit attempt 1/3", "offset commit attempt 2/3"]


def test_the_last_attempts_own_error_is_raised_and_counted(
    sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    group = FlakyGroup([ConnectionLoss(), ConnectionLoss("the second")])
    a = info(0, 0)
    a.consumed_offset = 7
    offsets = store(group)
    with pytest.raises(ConnectionLoss, match="the second"):
        offsets.commit([a], attempts=2)
    assert group.calls == 2 and len(sleeps) == 1 and offsets.failures == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("offset commit failed after 2 attempts")


def test_a_bug_is_raised_at_once(sleeps: list[float]) -> None:
    group = FlakyGroup([KeyError("bug")])
    a = info(0, 0)
    a.consumed_offset = 7
    offsets = store(group)
    with pytest.raises(KeyError):
        offsets.commit([a], attempts=5)
    assert group.calls == 1 and sleeps == [] and offsets.failures == 1


def test_no_retry_past_a_shutdown_deadline(sleeps: list[float]) -> None:
    group = FlakyGroup([ConnectionLoss(), ConnectionLoss()])
    group.deadline = Deadline(0.0)  # expired: a shutdown has no time left
    a = info(0, 0)
    a.consumed_offset = 7
    with pytest.raises(ConnectionLoss):
        store(group).commit([a], attempts=5)
    assert group.calls == 1 and sleeps == []


def test_the_wait_never_runs_past_the_deadline(sleeps: list[float]) -> None:
    group = FlakyGroup([ConnectionLoss()])
    group.deadline = Deadline(0.05)
    a = info(0, 0)
    a.consumed_offset = 7
    offsets = store(group)
    offsets._backoff_s = 10.0
    assert offsets.commit([a], attempts=3) == 1
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 0.05


def test_zero_attempts_writes_nothing(sleeps: list[float]) -> None:
    group = FlakyGroup([])
    a = info(0, 0)
    a.consumed_offset = 7
    assert store(group).commit([a], attempts=0) == 0
    assert group.calls == 0
