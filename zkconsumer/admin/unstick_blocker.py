"""Blocker: why an unstick plan will not (or not safely) make the group rebalance."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Blocker:
    """A node that would make the members' rebalance fail again; never deleted here (a live session holds it)."""

    node: str
    reason: str
    remedy: str

    def line(self) -> str:
        return f"{self.node}: {self.reason}; {self.remedy}"
