"""RateTracker: messages per second in and out of each partition, from two consecutive snapshots of a group."""

from __future__ import annotations

from zkconsumer.admin.snapshot import GroupSnapshot
from zkconsumer.partitions import TopicPartition


class RateTracker:
    """Messages/s per partition from two consecutive snapshots: OUT from committed offsets, IN from log ends."""

    def __init__(self) -> None:
        self._previous: tuple[float, dict[TopicPartition, tuple[int | None, int | None]]] | None = None

    def update(self, snapshot: GroupSnapshot) -> dict[TopicPartition, tuple[float | None, float | None]]:
        now = {(r.topic, r.partition): (r.offset, r.log_end) for r in snapshot.partitions}
        rates: dict[TopicPartition, tuple[float | None, float | None]] = {}
        if self._previous is not None:
            then, before = self._previous
            elapsed = snapshot.taken_at - then
            for key, (offset, end) in now.items():
                old_offset, old_end = before.get(key, (None, None))
                rates[key] = (_rate(old_end, end, elapsed), _rate(old_offset, offset, elapsed))
        self._previous = (snapshot.taken_at, now)
        return rates


def _rate(old: int | None, new: int | None, elapsed: float) -> float | None:
    if old is None or new is None or old < 0 or new < 0 or elapsed <= 0:
        return None
    return max(0.0, (new - old) / elapsed)
