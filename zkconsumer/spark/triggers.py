"""What a trigger may plan beyond maxOffsetsPerTrigger: minOffsetsPerTrigger/maxTriggerDelay admission, Trigger.AvailableNow's targets."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.errors import ZOOKEEPER_FAILURES, ZkConsumerError
from zkconsumer.errors import describe as describe_error
from zkconsumer.spark.offsets import Key

PAUSE_S = 1.0  # between two planning attempts of a trigger that could not plan yet
MIN_WAIT_S = 60.0

# Spark's duration units (minOffsetsPerTrigger's maxTriggerDelay), in milliseconds
_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60_000  # Spark's "15m"


def duration_ms(text: str) -> int:
    """Spark's time strings ("15m", "30s", "500ms", "2h", bare digits: ms) -> milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in ("", *_UNITS_MS):
        raise ValueError(f"{text!r} is not a duration like 15m, 30s or 500ms")
    return int(int(match.group(1)) * _UNITS_MS.get(match.group(2) or "ms", 1))


class TriggerAdmission:
    """Delays a trigger while fewer than `min_rows` offsets are available, at most `max_delay_ms`
    since the last trigger that ran a batch (Spark's KafkaMicroBatchStream.delayBatch): the first
    trigger, and any after the delay, run whatever is there."""

    def __init__(self, min_rows: int, max_delay_ms: int) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self._last_ms: float | None = None  # when the last batch was admitted

    def delay(self, available: int, now_ms: float) -> bool:
        """True: plan nothing this trigger. False: the batch runs (and the delay counts from now)."""
        if self._last_ms is not None and now_ms - self._last_ms < self.max_delay_ms and available < self.min_rows:
            return True
        self._last_ms = now_ms
        return False


class AvailableNowIncomplete(ZkConsumerError, RuntimeError):
    """A Trigger.AvailableNow run could not read every target within its wait; the message names
    the partitions, how far each got and who owns them. Running it again may succeed."""

    retriable = True


def wait_bound_s(config: ConsumerConfig) -> float:
    """How long a run waits for what stops it planning (a lease not confirmed, partitions released,
    ownership not had yet): two session timeouts (a crashed predecessor's owner nodes expire with its
    session) plus a whole rebalance's back-offs, and at least MIN_WAIT_S."""
    rebalance_s = (config.rebalance_max_retries + 1) * config.rebalance_backoff_ms / 1000.0
    return max(MIN_WAIT_S, 2 * config.zookeeper_session_timeout_ms / 1000.0 + rebalance_s)


class AvailableNowRun:
    """The targets prepareForTriggerAvailableNow set (None: a partition owned then whose log end the
    brokers did not give yet; a partition the run comes to own gets the log end of its first plan),
    and the deadline for the trigger that waits. Every partition the run owned at any trigger is
    its own to finish: Spark ends the run the first time latestOffset() returns its start, so the
    reader returns start only when `unread` is empty (and the run owned something, if the
    subscription has partitions), and fails the run naming what is left otherwise."""

    def __init__(
        self,
        targets: Mapping[Key, int | None],
        wait_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.targets: dict[Key, int | None] = dict(targets)
        self.wait_s = wait_s
        self._clock = clock
        self._deadline: float | None = None

    def owns(self, keys: Iterable[Key]) -> None:
        """Partitions the run owns now: each is the run's until it reaches its target, even when no
        trigger could plan it yet (a lease blip, broker trouble, a rebalance moving it on)."""
        for key in keys:
            self.targets.setdefault(key, None)

    def cap(self, highs: Mapping[Key, int]) -> dict[Key, int]:
        """The planned log ends, never past a partition's target (set here for new partitions)."""
        out = {}
        for key, high in highs.items():
            if self.targets.get(key) is None:
                self.targets[key] = high
            target = self.targets[key]
            out[key] = high if target is None else min(high, target)
        return out

    def unread(
        self, positions: Mapping[Key, int], highs: Mapping[Key, int]
    ) -> dict[Key, tuple[int | None, int | None]]:
        """key -> (position, target) of each target not reached yet. A log that now ends below its
        target (truncated) counts as read to its end."""
        out: dict[Key, tuple[int | None, int | None]] = {}
        for key, target in sorted(self.targets.items()):
            position = positions.get(key)
            goal = target if target is None or key not in highs else min(target, highs[key])
            if goal is None or position is None or position < goal:
                out[key] = (position, target)
        return out

    def unfinished(self, member: Any, positions: Mapping[Key, int], highs: Mapping[Key, int]) -> str | None:
        """Why a run whose trigger planned nothing is not done (None: it is), naming each partition
        and its owner. `member` is the reader's StreamMember."""
        owned = member.owned()
        self.owns(owned)
        unread = self.unread(positions, highs)
        if not unread and not self.targets:
            # Nothing owned yet: a crashed predecessor's owner nodes live until its session expires.
            try:
                keys = [(t, p) for t, (_, n) in member.subscription().items() for p in range(n)]
            except ZOOKEEPER_FAILURES as exc:
                return f"nothing owned, and the subscription unknown: {describe_error(exc)}"
            if not keys:
                return None
            owners = _owners(member, keys)
            return "this query owns none of the subscription's partitions yet: " + ", ".join(
                f"{t}-{p} (owner {owners.get((t, p)) or 'none'})" for t, p in sorted(keys)
            )
        if not unread:
            return None
        owners = _owners(member, unread)
        return "targets not read: " + ", ".join(
            f"{t}-{p} at {'no position' if pos is None else pos} of {'its log end' if goal is None else goal} "
            f"(owner {owners.get((t, p)) or 'none'})"
            for (t, p), (pos, goal) in unread.items()
        )

    def planned(self) -> None:
        """A trigger planned data: the next one that cannot gets the whole wait again."""
        self._deadline = None

    def out_of_time(self) -> bool:
        """Starts the wait on the first call after `planned`; True once it has run out."""
        now = self._clock()
        if self._deadline is None:
            self._deadline = now + self.wait_s
        return now >= self._deadline


def _owners(member: Any, keys: Iterable[Key]) -> dict[Key, str | None]:
    """Owners for a message: none named when ZooKeeper does not answer (the wait goes on)."""
    try:
        owners: dict[Key, str | None] = member.owners(keys)
    except ZOOKEEPER_FAILURES:
        return {}
    return owners
