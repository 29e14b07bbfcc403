"""WantedOffset: one partition of one group an offset plan (import, reset) is asked to write."""

from __future__ import annotations

from dataclasses import dataclass

from zkconsumer.partitions import TopicPartition


@dataclass(frozen=True)
class WantedOffset:
    """A partition a command wants to write: `offset` from a file (import), or None for the reset target's."""

    group: str
    topic: str
    partition: int
    offset: int | None = None
    source: str = ""  # where it came from ("line 3"), for messages

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    def name(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}group {self.group}, topic {self.topic}, partition {self.partition}"
