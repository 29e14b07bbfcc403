"""Run: one ingest run's ranges and where its output goes, recorded before the write so a rerun can finish or undo it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """One run directory: its name and (once complete) what its marker records."""

    name: str
    ranges: dict[int, tuple[int, int]] | None  # partition -> [start, end); None: no marker
    group: str | None = None
    epoch: int | None = None  # the topic's incarnation (its node's czxid) the ranges belong to
    written_at: int | None = None  # ms; markers from before epochs were recorded have only this
