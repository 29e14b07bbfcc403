"""Step: where a group stands in its move between ZooKeeper and the brokers, and what to do next."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """Where the group appears to be in the migration, judged from what both sides show now."""

    name: str
    detail: str
    next: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "detail": self.detail, "next": self.next}
