"""Blocker: why a migration direction cannot be carried out as planned, and the override that would pass it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkconsumer.partitions import TopicPartition


@dataclass(frozen=True)
class Blocker:
    """Why the copy must not run. `override`: the flag that allows it anyway (None: nothing does)."""

    code: str
    message: str
    override: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "override": self.override,
            "partitions": [{"topic": t, "partition": p} for t, p in self.partitions],
        }
