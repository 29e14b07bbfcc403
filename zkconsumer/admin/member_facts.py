"""MemberFacts: what an unstick plan knows of one registered member (its session, kind and what it owns)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class MemberFacts:
    """A registered member: the session holding its node, its threads per topic, why Scala cannot read it."""

    consumer_id: str
    session: int
    threads: Mapping[str, int]  # topic -> thread count
    zkconsumer: bool = False  # marked itself under /consumers/<g>/zkconsumer/members
    problem: str | None = None  # its registration cannot be read, or makes Scala's assignors throw
