"""Each group's lag over the last hour from the exporter's own refreshes: a small fixed ring of points per group."""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zkconsumer.admin import GroupVerdict

SPAN_S = 3600.0
MAX_POINTS = 720  # at most one point per 5 s over an hour: 721 points x 21 bytes = 15 KB per group


@dataclass
class _Ring:
    """One group's points in four preallocated arrays (no object per point); `start` is the oldest."""

    at_ms: array[int]
    lag: array[int]  # total lag in messages (-1: no log end was known)
    lag_s: array[float]  # the longest wait of a first unconsumed message, seconds (NaN: unknown)
    status: array[int]  # the group's LagStatus value
    start: int = 0
    size: int = 0


class LagHistory:
    """Per group, (when, total lag, max lag seconds, status) at most every `step_s` over `span_s`.

    The refresh thread calls `record` after every refresh; HTTP threads call `points`. A refresh
    less than `step_s` after a group's newest point replaces that point instead of adding one, so
    the newest point is always the last refresh's and the ring holds `span_s / step_s + 1` points
    at most. Groups the view no longer has are dropped.

    Example::

        history = LagHistory(interval_s=10)
        history.record(state.at_ms, {name: g.verdict for name, g in state.groups.items()})
        history.points("billing")["lag"]   # oldest first
    """

    def __init__(self, interval_s: float, span_s: float = SPAN_S, max_points: int = MAX_POINTS) -> None:
        self.span_s = span_s
        self.step_s = max(interval_s, span_s / max_points)
        self.capacity = int(math.ceil(span_s / self.step_s)) + 1
        self._lock = threading.Lock()
        self._rings: dict[str, _Ring] = {}

    def record(self, at_ms: int, verdicts: Mapping[str, GroupVerdict]) -> None:
        """One point per group of `verdicts` at `at_ms`; every other group's history is forgotten."""
        step_ms = int(self.step_s * 1000)
        with self._lock:
            for gone in [g for g in self._rings if g not in verdicts]:
                del self._rings[gone]
            for group, verdict in verdicts.items():
                ring = self._rings.get(group)
                if ring is None:
                    ring = self._rings[group] = self._new_ring()
                self._put(ring, at_ms, step_ms, verdict)

    def _new_ring(self) -> _Ring:
        n = self.capacity
        return _Ring(array("q", bytes(8 * n)), array("q", bytes(8 * n)), array("f", bytes(4 * n)), array("b", bytes(n)))

    def _put(self, ring: _Ring, at_ms: int, step_ms: int, verdict: GroupVerdict) -> None:
        known = any(v.lag is not None for v in verdict.partitions.values())
        ages = [v.age.seconds for v in verdict.partitions.values() if v.age is not None]
        newest = (ring.start + ring.size - 1) % self.capacity
        before = (newest - 1) % self.capacity
        if ring.size > 1 and ring.at_ms[newest] - ring.at_ms[before] < step_ms:
            slot = newest  # the newest point is inside its step yet: it moves up to now
        else:
            slot = self._append(ring)
        ring.at_ms[slot] = at_ms
        ring.lag[slot] = verdict.total_lag if known else -1
        ring.lag_s[slot] = max(ages) if ages else math.nan
        ring.status[slot] = int(verdict.status)

    def _append(self, ring: _Ring) -> int:
        if ring.size < self.capacity:
            ring.size += 1
        else:
            ring.start = (ring.start + 1) % self.capacity
        return (ring.start + ring.size - 1) % self.capacity

    def points(self, group: str) -> dict[str, Any] | None:
        """The group's points, oldest first, as columns (`lag` None and `max_lag_seconds` None where
        unknown); None for a group without history."""
        with self._lock:
            ring = self._rings.get(group)
            if ring is None:
                return None
            order = [(ring.start + i) % self.capacity for i in range(ring.size)]
            return {
                "span_s": self.span_s,
                "step_s": self.step_s,
                "at_ms": [ring.at_ms[i] for i in order],
                "lag": [None if ring.lag[i] < 0 else ring.lag[i] for i in order],
                "max_lag_seconds": [None if math.isnan(ring.lag_s[i]) else round(ring.lag_s[i], 1) for i in order],
                "status": [ring.status[i] for i in order],
            }

    def __len__(self) -> int:
        with self._lock:
            return len(self._rings)
