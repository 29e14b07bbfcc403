"""The query's rule for broker trouble: which partitions the brokers left unanswered, since when, and when that fails the query."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark.offsets import Key

T = TypeVar("T")

# How long a partition may stay unreadable (every fetchOffset.numRetries attempt of every trigger
# met broker trouble) before the query fails naming it: a rolling restart or one broker's reboot
# passes well within it, a partition whose every replica is gone does not.
DEFAULT_UNREADABLE_TIMEOUT_MS = 300_000


@dataclass(frozen=True)
class Answers(Generic[T]):
    """What one broker lookup (all its attempts) gave: the partitions answered, and for each one
    left unanswered the last error the brokers gave for it."""

    found: dict[Key, T]
    trouble: dict[Key, str] = field(default_factory=dict)


class PartitionsUnreadable(ZkConsumerError, RuntimeError):
    """Partitions the brokers did not answer for longer than unreadablePartitionTimeoutMs: the
    query fails naming each one, how long, and the last error (restarting it once the brokers
    serve them again resumes from its checkpoint)."""

    retriable = True


def names(keys: Iterable[Key]) -> str:
    """t-0, t-1, ... (at most 8 named) for messages."""
    keys = sorted(set(keys))
    return ", ".join(f"{t}-{p}" for t, p in keys[:8]) + (f", ... ({len(keys)} in all)" if len(keys) > 8 else "")


class TroubleClock:
    """Since when each partition has been unreadable (pure: the caller passes the time).

    `saw` takes one lookup's outcome: answered partitions are cleared, unanswered ones keep their
    first time; `overdue` names those unreadable for at least the bound."""

    def __init__(self, bound_ms: int) -> None:
        self.bound_ms = bound_ms
        self.since: dict[Key, float] = {}
        self.last_error: dict[Key, str] = {}

    def saw(self, answered: Iterable[Key], trouble: Mapping[Key, str], now_ms: float) -> None:
        for key in answered:
            self.since.pop(key, None)
            self.last_error.pop(key, None)
        for key, why in trouble.items():
            self.since.setdefault(key, now_ms)
            self.last_error[key] = why

    def forget(self, keys: Iterable[Key]) -> None:
        """Partitions no longer the query's (released): their trouble is another member's now."""
        for key in keys:
            self.since.pop(key, None)
            self.last_error.pop(key, None)

    def overdue(self, now_ms: float) -> dict[Key, float]:
        """key -> ms unreadable, for those past the bound."""
        return {k: now_ms - t for k, t in sorted(self.since.items()) if now_ms - t >= self.bound_ms}

    def check(self, now_ms: float, what: str) -> None:
        """Raises PartitionsUnreadable when a partition is past the bound; `what` says which lookup."""
        late = self.overdue(now_ms)
        if late:
            detail = "; ".join(
                f"{t}-{p} for {ms / 1000.0:.0f} s ({self.last_error.get((t, p), 'no answer')})"
                for (t, p), ms in late.items()
            )
            raise PartitionsUnreadable(
                f"the brokers did not answer {what} for {detail}: past unreadablePartitionTimeoutMs="
                f"{self.bound_ms} (each trigger tried fetchOffset.numRetries times). Restart the query once "
                "these partitions have a leader again; it resumes from its checkpoint"
            )
