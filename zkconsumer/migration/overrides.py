"""Overrides: the blockers of a migration the operator chose to pass (--allow-rewind, --force-live-*, --clamp-to-log-end)."""

from __future__ import annotations

from dataclasses import dataclass

# Overrides, by the CLI flag that gives them.
FORCE_LIVE_TARGET, FORCE_LIVE_SOURCE = "--force-live-target", "--force-live-source"
ALLOW_REWIND, CLAMP_TO_LOG_END = "--allow-rewind", "--clamp-to-log-end"


@dataclass(frozen=True)
class Overrides:
    allow_rewind: bool = False
    force_live_target: bool = False
    force_live_source: bool = False
    clamp_to_log_end: bool = False

    def given(self, flag: str | None) -> bool:
        return {
            ALLOW_REWIND: self.allow_rewind,
            FORCE_LIVE_TARGET: self.force_live_target,
            FORCE_LIVE_SOURCE: self.force_live_source,
            CLAMP_TO_LOG_END: self.clamp_to_log_end,
        }.get(flag or "", False)
