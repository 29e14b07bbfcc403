"""Problem: one thing wrong with a group (its kind, one of admin.problems' constants, and a line naming the node)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong: `kind` (a constant of admin.problems), a line naming the node, and the partition if any."""

    kind: str
    detail: str
    topic: str | None = None
    partition: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "partition": self.partition, "detail": self.detail}
