"""Lag verdicts (pure): Burrow's rules over a window of commits, plus what only a group's owner nodes can tell.

A partition's verdict has one status and the reason for it. The status is Burrow's (its
`StatusConstant`s, in its order of severity), from the same five rules Burrow's evaluator applies
to a window of commits; where the owner nodes say something Burrow cannot see (nobody owns the
partition, its owner is not a registered member, its owner node is held by another session than
the member's registration), that decides first, since no amount of waiting mends it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from zkconsumer.partitions import TopicPartition, partitions_text


class LagStatus(enum.IntEnum):
    """Burrow's statuses, in its order: a group takes its worst partition's, capped at ERR."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit seen of a partition: its offset, when it was made (ms), and its lag then."""

    offset: int
    at_ms: int
    lag: int


def lag_status(window: Sequence[Commit], current_lag: int, now_ms: int) -> LagStatus:
    """Burrow's evaluation of a window of commits, oldest first (its rules 1-5, in its order)."""
    if not window or current_lag <= 0 or any(c.lag == 0 for c in window):
        return LagStatus.OK  # rule 1: caught up at some point of the window
    if any(b.offset < a.offset for a, b in pairwise(window)):
        return LagStatus.REWIND  # rule 2
    first, last = window[0].at_ms, window[-1].at_ms
    if now_ms - last > last - first:
        return LagStatus.STOP  # rule 3: silent for longer than the window spans
    if all(b.offset == a.offset for a, b in pairwise(window)):
        return LagStatus.STALL  # rule 4: commits, but never further
    if all(b.lag >= a.lag for a, b in pairwise(window)):
        return LagStatus.WARN  # rule 5: moving, but the lag never shrinks
    return LagStatus.OK


@dataclass(frozen=True, slots=True)
class LagAge:
    """How long the first message not yet consumed has waited, from samples of the log end."""

    seconds: float
    at_least: bool  # the oldest sample already showed it: it may have waited longer
    within_s: float  # the sampling interval it is exact to (0 when nothing waits)


def lag_age(committed: int, log_ends: Sequence[tuple[int, int]], now_ms: int) -> LagAge:
    """The message at `committed` arrived between the last sample whose log end did not reach past
    it and the first that did; its age counts from that first sample (a lower bound, exact to the
    interval between the two). `log_ends`: (at_ms, log end) samples, oldest first."""
    if not log_ends or committed >= log_ends[-1][1]:
        return LagAge(0.0, False, 0.0)
    before = None
    for at_ms, end in log_ends:
        if end > committed:
            return LagAge(
                max(0.0, (now_ms - at_ms) / 1000.0),
                before is None,
                0.0 if before is None else (at_ms - before) / 1000.0,
            )
        before = at_ms
    raise AssertionError("unreachable: the last sample is past `committed`")


class Ownership(enum.Enum):
    """What the owner nodes say of one partition."""

    OWNED = "owned"
    UNOWNED = "no owner node"
    OWNER_GONE = "owner is not a registered member"
    FOREIGN_SESSION = "owner node held by another session than its member's registration"
    # No owner, and no registered member subscribes to the topic: offsets left from a retired or
    # renamed topic. Not a rebalance's to mend (its plan covers subscribed topics only).
    UNSUBSCRIBED = "no registered member subscribes to its topic"


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What a sampler gathered of one partition: its commits in the window and its owner node."""

    window: tuple[Commit, ...]
    committed: int | None
    log_end: int | None
    log_ends: tuple[tuple[int, int], ...]  # (at_ms, log end) samples in the window, oldest first
    owner: str | None  # the owner node's thread id, None without one
    ownership: Ownership
    log_start: int | None = None  # None: not read (the exporter asks log ends only)


@dataclass(frozen=True, slots=True)
class PartitionVerdict:
    status: LagStatus
    why: str | None  # the reason; None: nobody owns it and `lag` messages wait (`reason` says so when asked)
    lag: int | None
    age: LagAge | None
    ownership: Ownership
    unseen: bool = False  # no log end now: `lag` is at least the last log end seen minus the offset

    @property
    def reason(self) -> str:
        """Why the partition has its status. The commonest reason, of a partition without owner
        whose messages wait, is built when asked: ZooKeeper-era clusters hold 100,000s of those.
        An unseen partition says so: its lag is only a lower bound."""
        said = f"nobody owns it and {self.lag} messages wait" if self.why is None else self.why
        return f"{said} (unseen: no broker gave its log end, the lag is at least this)" if self.unseen else said


def partition_verdict(facts: PartitionFacts, now_ms: int) -> PartitionVerdict:
    """One partition's status and why: ownership first, then Burrow's rules on its commits."""
    # No log end now: the last one seen in the window is a lower bound (a log end only grows), so a
    # broker gone does not turn waiting messages into a lag of 0.
    end = facts.log_end if facts.log_end is not None else (facts.log_ends[-1][1] if facts.log_ends else None)
    # No offset committed ever: lag unknown, as `groups describe` says (Burrow leaves such a
    # partition out; kafka_exporter's -1 is no number): never "caught up", never a lag from 0.
    # Below the log start, the messages between are gone: what is left to read starts there.
    readable = (
        facts.committed if facts.log_start is None or facts.committed is None else max(facts.committed, facts.log_start)
    )
    lag = None if end is None or readable is None else max(0, end - readable)
    age = None if facts.committed is None or not facts.log_ends else lag_age(facts.committed, facts.log_ends, now_ms)
    if facts.log_end is None:
        return replace(_verdict(facts, lag, age, now_ms), unseen=True)
    return _verdict(facts, lag, age, now_ms)


def _verdict(facts: PartitionFacts, lag: int | None, age: LagAge | None, now_ms: int) -> PartitionVerdict:
    if facts.ownership is Ownership.UNSUBSCRIBED:
        # Left behind, not late: warned of (a member may have dropped a topic by mistake), never ERR;
        # its lag is left out of the group's (group_verdict) and the exporter forgets it later.
        waiting = "its log end is unknown" if lag is None else f"{lag} messages are left behind"
        reason = f"no registered member subscribes to its topic ({waiting}): a retired or renamed topic?"
        return PartitionVerdict(LagStatus.WARN, reason, lag, age, facts.ownership)
    if facts.ownership is Ownership.UNOWNED:
        if lag:
            return PartitionVerdict(LagStatus.ERR, None, lag, age, facts.ownership)
        if facts.committed is None:
            reason = "nobody owns it and no offset was committed: lag unknown"
            return PartitionVerdict(LagStatus.WARN, reason, lag, age, facts.ownership)
        if facts.log_end is None:
            reason = "nobody owns it; its log end is unknown (no broker answered): messages may wait"
            return PartitionVerdict(LagStatus.WARN, reason, lag, age, facts.ownership)
        reason = "nobody owns it (caught up so far: new messages will wait)"
        return PartitionVerdict(LagStatus.WARN, reason, lag, age, facts.ownership)
    if facts.ownership is not Ownership.OWNED:
        reason = f"{facts.ownership.value} ({facts.owner})"
        return PartitionVerdict(LagStatus.ERR, reason, lag, age, facts.ownership)
    if facts.committed is None:
        reason = "no offset committed: lag unknown (its owner started per auto.offset.reset)"
        return PartitionVerdict(LagStatus.NOTFOUND, reason, lag, age, facts.ownership)
    if facts.log_end is None:
        reason = "the log end is not known (no broker answered)"
        if lag:
            reason += f": at least {lag} messages waited when it was last seen"
        return PartitionVerdict(LagStatus.NOTFOUND, reason, lag, age, facts.ownership)
    out_of_range = _out_of_range(facts)
    if out_of_range is not None:
        return PartitionVerdict(LagStatus.WARN, out_of_range, lag, age, facts.ownership)
    status = lag_status(facts.window, lag or 0, now_ms)
    return PartitionVerdict(status, _reason(status, facts, lag or 0, now_ms), lag, age, facts.ownership)


def _out_of_range(facts: PartitionFacts) -> str | None:
    """Why the owner's next fetch from the committed offset is out of range (as `groups describe`
    and `verify` flag it), None when it is not: it will reset per its auto.offset.reset."""
    committed, end, start = facts.committed, facts.log_end, facts.log_start
    if committed is None or end is None:
        return None
    if committed > end:
        return (
            f"offset {committed} is past the log end {end} (a re-created topic, an unclean leader election?): "
            "the owner's next fetch is out of range and resets per its auto.offset.reset"
        )
    if start is not None and committed < start:
        return (
            f"offset {committed} is below the log start {start} ({start - committed} messages deleted unread): "
            "the owner's next fetch is out of range and resets per its auto.offset.reset"
        )
    return None


def _reason(status: LagStatus, facts: PartitionFacts, lag: int, now_ms: int) -> str:
    window = facts.window
    if status is LagStatus.OK:
        return "caught up" if lag == 0 or not window else "consuming: the lag shrank in the window"
    if status is LagStatus.REWIND:
        went = next((a.offset, b.offset) for a, b in pairwise(window) if b.offset < a.offset)
        return f"the committed offset went back from {went[0]} to {went[1]}"
    if status is LagStatus.STOP:
        return f"no commit for {(now_ms - window[-1].at_ms) / 1000:.0f} s while {lag} messages wait"
    if status is LagStatus.STALL:
        return f"commits stay at offset {window[-1].offset} while {lag} messages wait"
    return f"slower than the producers: the lag never shrank over {len(window)} commits (now {lag})"


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    status: LagStatus
    group_reasons: tuple[str, ...]  # the group's own (a rebalance that gave up); `reasons` adds the partitions'
    partitions: Mapping[TopicPartition, PartitionVerdict]
    total_lag: int

    @property
    def reasons(self) -> tuple[str, ...]:
        """The group's own reasons, then a line per partition neither OK nor NOTFOUND, in partition
        order: built when asked (an exporter's 100,000 partitions would hold 100,000 such lines)."""
        flagged = (
            f"{t}-{p}: {v.status.name} {v.reason}"
            for (t, p), v in sorted(self.partitions.items())
            if v.status not in (LagStatus.OK, LagStatus.NOTFOUND)
        )
        return (*self.group_reasons, *flagged)


def group_verdict(
    partitions: Mapping[TopicPartition, PartitionVerdict], members: Iterable[str], owning: Iterable[str]
) -> GroupVerdict:
    """The group's status: its worst partition's, capped at ERR as Burrow does, and an ERR of its
    own when registered members own nothing while partitions have no owner (a rebalance that gave
    up: Scala's ConsumerRebalanceFailedException leaves a member so until the group changes)."""
    status = max((v.status for v in partitions.values()), default=LagStatus.NOTFOUND)
    status = min(status, LagStatus.ERR)
    idle = sorted(set(members) - set(owning))
    unowned = [tp for tp, v in partitions.items() if v.ownership is Ownership.UNOWNED]
    reasons: tuple[str, ...] = ()
    unseen = [tp for tp, v in partitions.items() if v.unseen]
    if unseen:  # said whatever the status: an ERR group's lag may be more than it reads
        reasons = (f"{len(unseen)} of {len(partitions)} partitions unseen: no broker gave their log end",)
    if 2 * len(unseen) > len(partitions) and status < LagStatus.WARN:
        # Most of the group out of sight: never OK (the review's 99 NOTFOUND + 1 OK read OK).
        status = LagStatus.WARN
    if idle and unowned:
        status = LagStatus.ERR
        reasons = (
            *reasons,
            f"{len(idle)} registered members own nothing ({', '.join(idle)}) while {partitions_text(unowned)} "
            "have no owner: a rebalance gave up",
        )
    # A retired topic's messages wait for nobody: counted, they would keep "lag growing" alerts up.
    total = sum(v.lag or 0 for v in partitions.values() if v.ownership is not Ownership.UNSUBSCRIBED)
    return GroupVerdict(status, reasons, dict(partitions), total)
