"""Spark's minOffsetsPerTrigger / maxTriggerDelay: whether a trigger waits for more data (pure; the time is passed in)."""

from __future__ import annotations

import re

_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60_000  # Spark's "15m"


def duration_ms(text: str) -> int:
    """Spark's time strings ("15m", "30s", "500ms", "2h", bare digits: ms) -> milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in ("", *_UNITS_MS):
        raise ValueError(f"{text!r} is not a duration like 15m, 30s or 500ms")
    return int(int(match.group(1)) * _UNITS_MS.get(match.group(2) or "ms", 1))


class TriggerAdmission:
    """Delays a trigger while fewer than `min_rows` offsets are available, at most `max_delay_ms`
    since the last trigger that ran a batch (Spark's KafkaMicroBatchStream.delayBatch): the first
    trigger, and any after the delay, run whatever is there."""

    def __init__(self, min_rows: int, max_delay_ms: int) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self._last_ms: float | None = None  # when the last batch was admitted

    def delay(self, available: int, now_ms: float) -> bool:
        """True: plan nothing this trigger. False: the batch runs (and the delay counts from now)."""
        if self._last_ms is not None and now_ms - self._last_ms < self.max_delay_ms and available < self.min_rows:
            return True
        self._last_ms = now_ms
        return False
