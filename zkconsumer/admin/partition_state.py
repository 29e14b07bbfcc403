"""PartitionState: one partition of a group as read: its offset, owner, log start/end, lag and problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zkconsumer.admin.owner import Owner
from zkconsumer.admin.problem import Problem
from zkconsumer.zookeeper import znodes


@dataclass
class PartitionState:
    """One partition of a group: its committed offset, owner, log start/end and the problems found on it."""

    topic: str
    partition: int
    offset: int | None  # None: no offset node (Scala reads -1)
    owner: Owner | None
    log_start: int | None = None
    log_end: int | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset < 0 or self.log_end is None:
            return None
        return max(0, self.log_end - self.offset)

    @property
    def consumer_id(self) -> str | None:
        if self.owner is None:
            return None
        try:
            return znodes.consumer_id_of_thread(self.owner.thread_id)
        except ValueError:
            return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "current_offset": self.offset,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "lag": self.lag,
            "owner": None if self.owner is None else self.owner.thread_id,
            "consumer_id": self.consumer_id,
            "problems": [p.kind for p in self.problems],
        }
