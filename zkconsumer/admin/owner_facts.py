"""OwnerFacts: what an unstick plan knows of one owner node (its thread id and session)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OwnerFacts:
    """An owner node: the thread id it holds (None: not one) and the session holding it."""

    thread_id: str | None
    session: int
    czxid: int = 0
