"""The facts a chaos run records (deliveries, acks, owner spans, commits, notes) on one machine-wide clock."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.zk_txnlog import NodeEnd
from zkconsumer.zookeeper import znodes

TopicPartition = tuple[str, int]
MessageKey = tuple[str, int, int, int]  # (topic, epoch, partition, offset)


def now() -> float:
    """CLOCK_MONOTONIC: the same clock in every process of this (Linux) machine, and never stepped."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def wall_offset() -> float:
    """wall - monotonic: turns ZooKeeper's ctime/mtime (server wall-clock ms) into `now()` time."""
    return time.time() - now()


def parse_value(value: bytes | str | None) -> tuple[str, int, int] | None:
    """b"<topic>:<epoch>:<seq>" (what chaos producers write) -> (topic, epoch, seq); None if foreign."""
    if value is None:
        return None
    text = value.decode(errors="replace") if isinstance(value, bytes) else value
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


@dataclass(frozen=True)
class Delivery:
    """A message handed to the application by `member` (a consumer id) at time `at`."""

    member: str
    topic: str
    epoch: int  # topic incarnation: bumped when the topic is deleted and created again
    partition: int
    offset: int
    at: float

    @property
    def key(self) -> MessageKey:
        return (self.topic, self.epoch, self.partition, self.offset)


@dataclass
class Span:
    """One owner node's life: /consumers/G/owners/T/p held by `owner` (a thread id) from start to end.

    start is the node's ctime (exact); end is when the observer first missed it (late by at
    least one poll period), or exact once settled from the server's transaction log, which
    also sets ended_by: "delete" (its own session deleted it), "deleted-by-other", "close" (a
    client closed the session holding it) or "expiry" (the server ended that session).
    """

    topic: str
    partition: int
    owner: str
    czxid: int
    start: float
    end: float | None = None
    ended_by: str | None = None

    @property
    def member(self) -> str:
        return self.owner.rsplit("-", 1)[0]

    def contains(self, t: float, *, before: float = 0.0, after: float = 0.0) -> bool:
        return self.start - before <= t and (self.end is None or t <= self.end + after)


@dataclass
class Incarnation:
    """One life of a member's registration node /consumers/G/ids/<member> (one ZooKeeper session)."""

    member: str
    czxid: int
    start: float
    end: float | None = None
    ended_by: str | None = None  # as Span.ended_by


@dataclass
class Presence:
    """A partition that exists in /brokers/topics/T from start until end (None: still there)."""

    topic: str
    partition: int
    start: float
    end: float | None = None


@dataclass(frozen=True)
class Commit:
    """A value written to /consumers/G/offsets/T/p, at its mtime."""

    topic: str
    partition: int
    offset: int
    at: float


@dataclass(frozen=True)
class Note:
    """Something the driver did: leave, kill, expire, stop, cont, zk-restart, broker-kill, epoch, ..."""

    kind: str
    member: str | None
    at: float
    detail: str = ""


@dataclass
class History:
    """Everything the invariants look at; `since`..`until` is the judged window for ownership gaps."""

    deliveries: list[Delivery] = field(default_factory=list)
    acked: set[MessageKey] = field(default_factory=set)
    acked_at: dict[MessageKey, float] = field(default_factory=dict)  # when the producer saw the ack
    spans: list[Span] = field(default_factory=list)
    incarnations: list[Incarnation] = field(default_factory=list)
    presence: list[Presence] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    epoch_starts: dict[tuple[str, int], float] = field(default_factory=dict)  # (topic, epoch) -> start
    since: float = 0.0
    until: float = float("inf")

    # ---- indexes (built lazily; a History is not changed once judged) --------------------------
    def spans_of(self, member: str, topic: str, partition: int) -> list[Span]:
        index = self.__dict__.setdefault("_spans_by_member", {})
        if not index:
            for s in sorted(self.spans, key=lambda s: s.start):
                index.setdefault((s.member, s.topic, s.partition), []).append(s)
        return index.get((member, topic, partition), [])

    def partition_spans(self, topic: str, partition: int) -> list[Span]:
        index = self.__dict__.setdefault("_spans_by_partition", {})
        if not index:
            for s in sorted(self.spans, key=lambda s: s.start):
                index.setdefault((s.topic, s.partition), []).append(s)
        return index.get((topic, partition), [])

    def span_at(
        self, member: str, topic: str, partition: int, t: float, *, before: float = 0.25, after: float = 0.05
    ) -> Span | None:
        """The ownership span of `member` covering time t (allowing for the observer's lag)."""
        for span in self.spans_of(member, topic, partition):
            if span.contains(t, before=before, after=after):
                return span
        return None

    def first_delivered(self, key: MessageKey) -> float:
        index = self.__dict__.setdefault("_first", {})
        if not index:
            for d in self.deliveries:
                if d.at < index.get(d.key, float("inf")):
                    index[d.key] = d.at
        return index.get(key, float("inf"))

    def commit_epoch(self, c: Commit, epoch: int) -> bool:
        """Whether a commit belongs to this incarnation of its topic: the message before the committed
        offset had been delivered (0 is every incarnation's start). A member that missed a re-creation
        may still write its old position into the new incarnation's offset node."""
        if c.offset == 0:
            return True
        return self.first_delivered((c.topic, epoch, c.partition, c.offset - 1)) <= c.at + 0.05

    def committed_high(self, topic: str, epoch: int, partition: int, until: float) -> int:
        """Highest offset of this topic incarnation committed for the partition by `until`; -1 if none."""
        index = self.__dict__.setdefault("_commits", {})
        if not index:
            for c in sorted(self.commits, key=lambda c: c.at):
                times, commits = index.setdefault((c.topic, c.partition), ([], []))
                times.append(c.at)
                commits.append(c)
        times, commits = index.get((topic, partition), ([], []))
        lo, hi = bisect.bisect_left(times, self.epoch_start(topic, epoch)), bisect.bisect_right(times, until)
        return max((c.offset for c in commits[lo:hi] if self.commit_epoch(c, epoch)), default=-1)

    def epoch_start(self, topic: str, epoch: int) -> float:
        return self.epoch_starts.get((topic, epoch), float("-inf"))

    def incarnation_at(self, member: str, t: float) -> Incarnation | None:
        for inc in self.incarnations:
            if inc.member == member and inc.start - 0.25 <= t and (inc.end is None or t <= inc.end + 0.25):
                return inc
        return None

    def left_cleanly(self, member: str, before: float) -> bool:
        return any(n.kind == "leave" and n.member == member and n.at <= before for n in self.notes)

    def settle(
        self, ends: Mapping[tuple[str, int], NodeEnd], group: str, chroot: str, to_now: Callable[[int], float]
    ) -> int:
        """Replace observed ends of owner and member nodes by the server's exact ones (zk_txnlog).

        `to_now` turns server wall-clock ms into `now()` time. Returns how many were settled;
        nodes the log does not show ending (still there, or the log is gone) keep their observed end.
        """
        settled = 0
        lives: list[tuple[Span | Incarnation, str]] = [
            (s, chroot + znodes.owner_path(group, s.topic, s.partition)) for s in self.spans
        ]
        lives += [(i, chroot + znodes.member_path(group, i.member)) for i in self.incarnations]
        for life, path in lives:
            end = ends.get((path, life.czxid))
            if end is None:
                continue
            life.end = to_now(end.time_ms)
            life.ended_by = (
                end.cause if end.cause != "delete" or end.by_session == end.owner_session else "deleted-by-other"
            )
            settled += 1
        for cache in ("_spans_by_member", "_spans_by_partition"):
            self.__dict__.pop(cache, None)
        return settled
