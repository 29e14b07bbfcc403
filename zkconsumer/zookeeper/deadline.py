"""A point in time by which a sequence of bounded ZooKeeper (and fetcher) calls must be done."""

from __future__ import annotations

import time


class Deadline:
    """A point in time by which a sequence of calls must be done (shutdown(timeout) uses one)."""

    def __init__(self, seconds: float | None) -> None:
        self._end = None if seconds is None else time.monotonic() + max(0.0, seconds)

    def remaining(self, cap: float) -> float:
        if self._end is None:
            return cap
        return max(0.0, min(cap, self._end - time.monotonic()))

    def expired(self) -> bool:
        return self._end is not None and time.monotonic() >= self._end
