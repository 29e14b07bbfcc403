"""Owner: the thread id an owner node holds, and the session that created it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Owner:
    """An owner node: the thread id it holds and the session that created it (its ephemeralOwner)."""

    thread_id: str
    session: int
