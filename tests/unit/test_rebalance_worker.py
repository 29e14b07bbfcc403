"""RebalanceWorker: coalesced triggers, retry forever with jittered back-off, prompt stop, surfaced crashes."""

from __future__ import annotations

import threading
import time

import pytest
import tenacity

from zkconsumer.coordinator.worker import RebalanceWorker


class Runs:
    """A rebalance stand-in that fails `failures` times, then succeeds; records reasons and times."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.reasons: list[str] = []
        self.times: list[float] = []
        self.done = threading.Event()

    def __call__(self, reason: str) -> bool:
        self.reasons.append(reason)
        self.times.append(time.monotonic())
        if len(self.reasons) > self.failures:
            self.done.set()
            return True
        return False


def worker(run, *, backoff_s: float = 0.02, recheck_s: float = 0.2, on_crash=None) -> RebalanceWorker:  # type: ignore[no-untyped-def]
    w = RebalanceWorker(
        "g_c1",
        run,
        backoff_s=backoff_s,
        recheck_s=recheck_s,
        on_crash=on_crash or (lambda exc: pytest.fail(f"crashed: {exc}")),
    )
    w.start()
    return w


def test_a_failing_rebalance_is_retried_until_it_succeeds() -> None:
    runs = Runs(failures=6)  # more than any rebalance.max.retries round: Scala would give up
    w = worker(runs)
    w.trigger("member joined")
    assert runs.done.wait(10)
    w.stop()
    assert runs.reasons[0] == "member joined"
    assert runs.reasons[1:] == [f"retry {n} after a failed rebalance" for n in range(1, 7)]
    assert w.failed_runs == 0 and w.total_failed_runs == 6
    gaps = [b - a for a, b in zip(runs.times, runs.times[1:])]
    assert all(gap >= 0.02 * 0.9 for gap in gaps)  # never a busy loop
    assert max(gaps) < 1.0  # capped near recheck_s (0.2 s), not unbounded


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    wait = RebalanceWorker("g_c1", lambda _r: True, backoff_s=1.0, recheck_s=30.0, on_crash=lambda _e: None).backoff()

    def delay(attempt: int) -> float:
        state = tenacity.RetryCallState(tenacity.Retrying(), fn=None, args=(), kwargs={})
        state.attempt_number = attempt
        return wait(state)

    for attempt in range(1, 12):
        samples = [delay(attempt) for _ in range(200)]
        low = min(2.0 ** (attempt - 1), 30.0)
        assert all(low - 1e-9 <= s <= min(low + 1.0, 30.0) for s in samples), attempt
        if low + 1.0 <= 30.0:
            assert max(samples) - min(samples) > 0.1, "no jitter"  # members spread out


def test_a_trigger_cuts_the_backoff_short() -> None:
    runs = Runs(failures=1)
    w = worker(runs, backoff_s=30.0, recheck_s=60.0)
    w.trigger("member joined")
    time.sleep(0.3)  # the first run failed; the worker now backs off ~30 s
    assert len(runs.reasons) == 1
    w.trigger("member left")
    assert runs.done.wait(5)
    w.stop()
    assert runs.reasons == ["member joined", "member left"]


def test_stop_during_backoff_returns_promptly() -> None:
    runs = Runs(failures=10**6)
    w = worker(runs, backoff_s=30.0, recheck_s=60.0)
    w.trigger("start")
    time.sleep(0.2)
    began = time.monotonic()
    w.stop(timeout=5)
    assert not w.thread.is_alive()
    assert time.monotonic() - began < 2.0


def test_recheck_zero_waits_for_the_next_trigger() -> None:
    runs = Runs(failures=1)
    w = worker(runs, recheck_s=0)
    w.trigger("start")
    time.sleep(0.3)
    assert runs.reasons == ["start"] and w.failed_runs == 1
    w.trigger("member joined")
    assert runs.done.wait(5)
    w.stop()


def test_a_bug_in_the_rebalance_is_surfaced_not_retried() -> None:
    crashed: list[BaseException] = []
    got = threading.Event()

    def run(_reason: str) -> bool:
        raise AssertionError("bug")

    w = worker(run, on_crash=lambda exc: (crashed.append(exc), got.set()))
    w.trigger("start")
    assert got.wait(5)
    w.thread.join(5)
    assert not w.thread.is_alive()
    assert isinstance(crashed[0], AssertionError)


def test_triggers_during_a_run_coalesce_into_one_more_run() -> None:
    gate = threading.Event()
    reasons: list[str] = []

    def run(reason: str) -> bool:
        reasons.append(reason)
        if len(reasons) == 1:
            gate.wait(5)
        return True

    w = worker(run)
    w.trigger("a")
    time.sleep(0.1)
    for reason in ("b", "c", "b"):
        w.trigger(reason)
    gate.set()
    time.sleep(0.3)
    w.stop()
    assert reasons == ["a", "b, c"]


def test_activity_moves_with_each_round_and_is_none_while_one_is_under_way() -> None:
    entered, release = threading.Event(), threading.Event()

    def run(reason: str) -> bool:
        entered.set()
        return release.wait(5)

    w = worker(run)
    try:
        assert w.activity() == 0
        w.trigger("member joined")
        assert entered.wait(5)
        assert w.activity() is None  # a change in flight: the watchdog waits it out
        release.set()
        deadline = time.monotonic() + 5
        while w.activity() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert w.activity() == 3  # the trigger, the run's start and its end
    finally:
        release.set()
        w.stop(timeout=5)
