"""Which rebalance attempts count against rebalance.max.retries: a wait on watched owner nodes is free
for zkconsumer.rebalance.watched.wait.ms, a plain back-off is not."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.coordinator.assignors import AssignmentError
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.retries import AttemptOutcome, RebalanceStats, run_attempts
from zkconsumer.errors import ConsumerRebalanceFailed

KEY = ("t", 0)


def _config(**changes: Any) -> ConsumerConfig:
    config = ConsumerConfig.from_mapping({"zookeeper.connect": "localhost:2181", "group.id": "g"})
    # 4 retries, 10 ms back-off, watched waits free for 200 ms
    settings = dict(rebalance_max_retries=4, rebalance_backoff_ms=10, rebalance_watched_wait_ms=200)
    return dataclasses.replace(config, **{**settings, **changes})


class Holder:
    """A group whose one node in our way is watched (watch_until_free never finds it gone)."""

    def __init__(self, watchable: bool = True) -> None:
        self.watchable = watchable
        self.watches = 0

    def watch_until_free(self, keys: Any, on_free: Callable[[], None], *, any_free: bool = False) -> bool:
        if not self.watchable:
            raise TimeoutError("no answer")  # kazoo's timeouts are retriable
        self.watches += 1
        return False


def _run(config: ConsumerConfig, group: Holder, free_after_s: float | None) -> tuple[bool, int, float]:
    began = time.monotonic()
    calls = 0

    def attempt() -> AttemptOutcome:
        nonlocal calls
        calls += 1
        if free_after_s is not None and time.monotonic() - began >= free_after_s:
            return AttemptOutcome(done=True, claimed=1)
        return AttemptOutcome(done=False, blocked=(KEY,))

    done = run_attempts(
        attempt,
        "test",
        consumer_id="g_me",
        config=config,
        listener=ConsumerRebalanceListener(),
        stats=RebalanceStats(),
        group=group,  # type: ignore[arg-type]
        stopping=threading.Event(),
    )
    return done, calls, time.monotonic() - began


def test_waiting_on_a_watched_holder_slower_than_the_back_offs_succeeds() -> None:
    done, calls, _ = _run(_config(), Holder(), free_after_s=0.12)  # 12 back-offs: more than 4 retries
    assert done and calls > 4


def test_a_holder_that_never_lets_go_fails_after_the_watched_wait() -> None:
    done, calls, seconds = _run(_config(), Holder(), free_after_s=None)
    assert not done
    assert seconds >= 0.2  # watched waits were free for the whole budget
    assert seconds < 2.0  # and then the retries ran out


def test_a_wait_with_nothing_watched_counts_as_before() -> None:
    done, calls, _ = _run(_config(), Holder(watchable=False), free_after_s=0.12)
    assert not done and calls == 4  # Scala's count: rebalance.max.retries attempts


def test_the_watched_wait_defaults_to_the_retries_session_timeouts() -> None:
    config = ConsumerConfig.from_mapping({"zookeeper.connect": "z:2181", "group.id": "g"})
    assert config.rebalance_watched_wait_ms == 4 * 6000  # 4 retries x the 6 s session timeout
    config = ConsumerConfig.from_mapping(
        {"zookeeper.connect": "z:2181", "group.id": "g", "rebalance.backoff.ms": 9000, "rebalance.max.retries": 2}
    )
    assert config.rebalance_watched_wait_ms == 2 * 9000  # a back-off longer than the session counts instead
    config = ConsumerConfig.from_mapping(
        {"zookeeper.connect": "z:2181", "group.id": "g", "zkconsumer.rebalance.watched.wait.ms": "0"}
    )
    assert config.rebalance_watched_wait_ms == 0


def test_a_group_that_cannot_be_assigned_fails_the_attempt_and_the_run_is_retried_later() -> None:
    """Scala's IllegalArgumentException from roundrobin (threads differing by topic, up to 0.10.1)
    fails the attempt: every attempt is made, then the run reports ConsumerRebalanceFailed instead
    of raising (which would make the member leave the group as for a bug)."""
    failures: list[BaseException] = []

    class Listener(ConsumerRebalanceListener):
        def on_rebalance_failed(self, error: ConsumerRebalanceFailed) -> None:
            failures.append(error)

    calls = 0

    def attempt() -> AttemptOutcome:
        nonlocal calls
        calls += 1
        raise AssignmentError("roundrobin (Kafka <= 0.10.1) requires all consumers to subscribe to the same topics")

    done = run_attempts(
        attempt,
        "test",
        consumer_id="g_me",
        config=_config(),
        listener=Listener(),
        stats=RebalanceStats(),
        group=Holder(),  # type: ignore[arg-type]
        stopping=threading.Event(),
    )
    assert done is False and calls == 4
    assert len(failures) == 1 and "requires all consumers" in str(failures[0])
