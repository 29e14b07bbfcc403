"""A named daemon thread that runs one job at a fixed interval until stopped (auto-commit, the lease, the watchdog)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from zkconsumer.errors import describe, is_retriable

log = logging.getLogger(__name__)


class PeriodicTask:
    """Runs fn every `interval_s` (seconds, or a callable asked before each wait) on a named daemon
    thread until stop(); retriable errors are logged, others handed to `on_error` (the member leaves).

    Example::

        committer = PeriodicTask("g_c1-autocommit", 60.0, lambda: rebalancer.commit())
        committer.start(); ...; committer.stop()
    """

    def __init__(
        self,
        name: str,
        interval_s: float | Callable[[], float],
        fn: Callable[[], object],
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._interval = interval_s if callable(interval_s) else (lambda: interval_s)
        self._fn = fn
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _loop(self) -> None:
        # The first run is one interval after start, like Scala's auto-commit scheduler.
        while not self._stop.wait(self._interval()):
            try:
                self._fn()
            except Exception as exc:  # noqa: BLE001 - retriable: report and keep the schedule; else surface
                if self._stop.is_set() and is_retriable(exc):
                    log.debug("%s stopped during a run: %s", self._thread.name, describe(exc))
                    return  # the session closing under a run still under way: expected, not news
                if self._on_error is not None and not is_retriable(exc):
                    log.exception("%s failed with a bug: %s", self._thread.name, describe(exc))
                    self._on_error(exc)
                    return
                log.warning("%s failed: %s; trying again in %.1fs", self._thread.name, describe(exc), self._interval())
