"""Move: one partition's offset in a migration plan: source, target, the log, and what the copy does with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkconsumer.migration.actions import WRITING
from zkconsumer.partitions import TopicPartition


@dataclass(frozen=True)
class Move:
    """One partition in one direction: `new` is the offset written to the target (None: nothing)."""

    topic: str
    partition: int
    source: int | None
    target: int | None
    action: str
    new: int | None = None
    log_start: int | None = None
    log_end: int | None = None
    note: str = ""

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def writes(self) -> bool:
        return self.action in WRITING

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "source_offset": self.source,
            "target_offset": self.target,
            "new_offset": self.new,
            "action": self.action,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "note": self.note,
        }
