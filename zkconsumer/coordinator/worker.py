"""The rebalance thread: coalesces triggers into rebalance runs, retries failed runs forever with back-off."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import tenacity

log = logging.getLogger(__name__)


class _Stopping(Exception):
    """Raised out of the worker's back-off sleep when stop() is called."""


class RebalanceWorker:
    """Coalesces rebalance triggers into runs on one named thread (Scala's watcher executor).

    Watch callbacks only call `trigger()`, which never blocks; a burst of events becomes
    one more run. A failed run (every one of rebalance.max.retries attempts failed) is
    retried forever, never given up as Scala does: after jittered exponential back-off
    (tenacity) from `backoff_s` up to `recheck_s`, so failing members do not retry in
    lockstep. A new trigger cuts the back-off short. `failed_runs` counts failed runs in
    a row (0 once one succeeds): a member with a non-zero count owns nothing it should.

    Example::

        worker = RebalanceWorker("g_c1", run=lambda reason: rebalancer.synced_rebalance(reason),
                                 backoff_s=2.0, recheck_s=30.0, on_crash=streams.fail_all)
        worker.start(); worker.trigger("member joined"); ...; worker.stop()
    """

    def __init__(
        self,
        consumer_id: str,
        run: Callable[[str], bool],
        *,
        recheck_s: float,
        on_crash: Callable[[BaseException], None],
        backoff_s: float = 2.0,
    ) -> None:
        self._run = run
        self._recheck_s = recheck_s
        self._backoff_s = min(max(backoff_s, 0.001), recheck_s) if recheck_s > 0 else backoff_s
        self._on_crash = on_crash
        self._cond = threading.Condition()
        self._reasons: list[str] = []
        self._stopping = False
        self.failed_runs = 0
        self.total_failed_runs = 0
        self._activity = 0  # triggers, run starts and run ends so far
        self._running = False
        self._thread = threading.Thread(target=self._loop, name=f"{consumer_id}_watcher_executor", daemon=True)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def start(self) -> None:
        self._thread.start()

    def trigger(self, reason: str) -> None:
        with self._cond:
            if reason not in self._reasons:
                self._reasons.append(reason)
            self._activity += 1
            self._cond.notify()

    @property
    def pending(self) -> list[str]:
        """The reasons waiting for the next run, the list itself: a driver that runs the attempts on
        its own thread (the simulation, never a started worker) takes them from it."""
        return self._reasons

    def activity(self) -> int | None:
        """A count that moves with every trigger, run start and run end; None while a run is under
        way or pending (the watchdog's "a change is in flight")."""
        with self._cond:
            return None if self._running or self._reasons else self._activity

    def stop(self, timeout: float = 30.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def backoff(self) -> Callable[[tenacity.RetryCallState], float]:
        """The wait between failed runs: backoff_s doubling per failure plus up to backoff_s of
        jitter, capped at recheck_s."""
        doubling = tenacity.wait_exponential(multiplier=self._backoff_s, max=self._recheck_s)
        jitter = tenacity.wait_random(0, self._backoff_s)
        return lambda state: min(doubling(state) + jitter(state), self._recheck_s)

    def _loop(self) -> None:
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_result(lambda ok: not ok),
            # recheck 0 turns retrying off: a failed run then waits for the next trigger
            stop=tenacity.stop_never if self._recheck_s > 0 else tenacity.stop_after_attempt(1),
            wait=self.backoff(),
            sleep=self._pause,
            before_sleep=self._say_retrying,
            retry_error_callback=lambda _state: False,
            reraise=True,
        )
        while True:
            with self._cond:
                while not self._reasons and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
            try:
                retrying(self._run_pending)
            except _Stopping:
                return
            except BaseException as exc:  # a bug, not a ZooKeeper/Kafka failure: surface it
                log.exception("rebalance worker crashed; failing every stream")
                self._on_crash(exc)
                return

    def _run_pending(self) -> bool:
        with self._cond:
            if self._stopping:
                raise _Stopping()
            reasons, self._reasons = self._reasons, []
            self._activity += 1
            self._running = True
        try:
            ok = self._run(", ".join(reasons) or f"retry {self.failed_runs} after a failed rebalance")
        finally:
            with self._cond:
                self._activity += 1
                self._running = False
        if ok:
            self.failed_runs = 0
        else:
            self.failed_runs += 1
            self.total_failed_runs += 1
        return ok

    def _say_retrying(self, state: tenacity.RetryCallState) -> None:
        delay = state.next_action.sleep if state.next_action else 0.0
        log.error(
            "%s: rebalance has failed %d times in a row; owning nothing it should until it "
            "succeeds; retrying in %.1f s (or at the next group change)",
            self._thread.name,
            self.failed_runs,
            delay,
        )

    def _pause(self, seconds: float) -> None:
        """tenacity's sleep: returns early on a new trigger, raises _Stopping on stop()."""
        with self._cond:
            if not self._reasons and not self._stopping:
                self._cond.wait(seconds)
            if self._stopping:
                raise _Stopping()
