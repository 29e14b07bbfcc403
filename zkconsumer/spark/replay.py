"""Whether a batch's offset ranges still count in their topic's current incarnation (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zkconsumer.spark.offsets import Key


@dataclass(frozen=True)
class Stale:
    """A topic whose recorded offsets belong to another incarnation (re-created) or to none (deleted)."""

    topic: str
    recorded: int
    current: int | None

    def describe(self) -> str:
        now = "deleted" if self.current is None else f"deleted and created again (incarnation {self.current})"
        return f"topic {self.topic} was {now} since the batch was planned in its incarnation {self.recorded}"


def split_stale(
    ranges: Sequence[tuple[Key, int, int]], recorded: Mapping[str, int], current: Mapping[str, int | None]
) -> tuple[list[tuple[Key, int, int]], list[Stale]]:
    """(ranges to read, topics whose ranges are dropped). A topic without a recorded incarnation
    (offsets written before they were recorded) or not looked up is trusted, as before."""
    stale = {
        t: Stale(t, recorded[t], current[t])
        for t in sorted({k[0] for k, _, _ in ranges})
        if t in recorded and t in current and current[t] != recorded[t]
    }
    return [r for r in ranges if r[0][0] not in stale], list(stale.values())
