"""Collapse repeated librdkafka log lines (one per reconnect attempt while a broker is down) into one per interval."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

_NUMBERS = re.compile(r"\d+")


class RepeatFilter(logging.Filter):
    """Passes a line, then drops lines that differ from it only in numbers for `interval_s`; the
    next one to pass says how many were dropped. Keyed per librdkafka facility and text shape.

    A member whose broker is down logged about 19 "Connect ... failed: Connection refused" lines a
    second; 15 such members on 2 cores starved the broker that was recovering its logs.
    """

    def __init__(self, interval_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, list[float]] = {}  # shape -> [last passed at, dropped since]

    def filter(self, record: logging.LogRecord) -> bool:
        key = _NUMBERS.sub("#", record.getMessage())
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.interval_s:
                seen[1] += 1
                return False
            dropped = int(seen[1]) if seen is not None else 0
            self._seen[key] = [now, 0]
            if len(self._seen) > 1000:  # shapes of one-off lines must not pile up
                self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.interval_s}
        if dropped:
            record.msg = f"{record.getMessage()} ({dropped} similar lines in the last {self.interval_s:.0f}s)"
            record.args = None
        return True


def throttled_logger(name: str, interval_s: float = 30.0) -> logging.Logger:
    """`logging.getLogger(name)` with one RepeatFilter attached (idempotent per logger)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RepeatFilter) for f in logger.filters):
        logger.addFilter(RepeatFilter(interval_s))
    return logger
