"""PlannedWrite: one partition's planned offset change, and what became of it (written, refused, failed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class PlannedWrite:
    """One partition's offset change; `new` None (or `refused`) means it will not be written.

    `current` is the valid ZooKeeper offset (None: none, or one older than the topic). With
    `to_kafka` the group also commits to Kafka (`kafka`: its offset there), and the new offset
    is written to both, as its members read the larger of the two.
    """

    group: str
    topic: str
    partition: int
    current: int | None
    new: int | None
    log_start: int | None = None
    log_end: int | None = None
    note: str = ""
    refused: str | None = None
    written: bool = False
    kafka: int | None = None
    to_kafka: bool = False
    failed: str | None = None  # why it was not written although planned (the command stopped)
    epoch: int | None = None  # the topic's incarnation (czxid) the plan counted in; None: read at the write

    @property
    def effective(self) -> int | None:
        """The offset a member resumes from: the larger of ZooKeeper's and Kafka's."""
        found = [o for o in (self.current, self.kafka if self.to_kafka else None) if o is not None and o >= 0]
        return max(found) if found else None

    @property
    def target(self) -> int:
        """`new`, of a row that needs_write (or was written)."""
        assert self.new is not None
        return self.new

    @property
    def needs_write(self) -> bool:
        if self.new is None or self.refused or self.failed:
            return False
        return self.new != self.current or (self.to_kafka and self.new != self.kafka)

    @property
    def status(self) -> str:
        if self.failed:
            return f"not written: {self.failed}"
        if self.written:
            return f"partly written: {self.refused}" if self.refused else "written"
        if self.refused:
            return f"refused: {self.refused}"
        if self.new is None:
            return "skipped"
        return "planned" if self.needs_write else "unchanged"

    def add_note(self, text: str) -> None:
        if text:
            self.note = f"{self.note}; {text}" if self.note else text

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "current_offset": self.current,
            "kafka_offset": self.kafka if self.to_kafka else None,
            "new_offset": self.new,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "note": self.note,
            "status": self.status,
        }
