"""The chaos invariants judged on a recorded History: loss, overlapping delivery, unexplained duplicates, gaps."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from harness.chaos_history import Delivery, History, MessageKey, Span, TopicPartition

# Observer lag: a span's start is exact (ctime) but deliveries are attributed a little before it
# (clock granularity); its end is seen up to one poll late, so deliveries after it are strays.
SPAN_BEFORE = 0.25
SPAN_AFTER = 0.05
STRAY_GAP = 0.5  # strays further apart than this are separate delivery intervals
SESSION_END_MATCH = 0.5  # owner node and member node vanishing this close together: one session's end
# A session the driver closes from a twin client (chaos_scenarios.expire_member) ends while the
# member's link is down (the twin's connect dropped it), so no lease covers it: the member goes on
# delivering until kazoo reconnects and hears "expired", 0.1-0.5 s after the drop
# (zookeeper/client.py's connection_retry), plus a handshake. docs/design.md, "Fencing limits".
FORCED_CLOSE_NOTICE = 1.0


@dataclass(frozen=True)
class Interval:
    """first..last delivery of one partition by one member within one ownership span (or stray run)."""

    member: str
    topic: str
    partition: int
    first: float
    last: float
    count: int
    owned: bool  # False: delivered while the observer saw no owner node of this member

    def describe(self) -> str:
        where = "as owner" if self.owned else "WITHOUT owning it"
        return f"{self.member} delivered {self.count} in [{self.first:.3f}, {self.last:.3f}] {where}"


@dataclass(frozen=True)
class Overlap:
    a: Interval
    b: Interval

    def __str__(self) -> str:
        return f"{self.a.topic}-{self.a.partition}: {self.a.describe()}; {self.b.describe()}"


@dataclass(frozen=True)
class Duplicate:
    """`again` delivered a message `previous` had delivered already; `allowed` says if that was explained."""

    previous: Delivery
    again: Delivery
    allowed: bool
    why: str

    def __str__(self) -> str:
        t, e, p, o = self.previous.key
        return (
            f"{t}-{p}@{o} (epoch {e}) by {self.previous.member} at {self.previous.at:.3f}, again by "
            f"{self.again.member} at {self.again.at:.3f}: {self.why}"
        )


def lost(h: History) -> list[MessageKey]:
    """Invariant 1: acknowledged messages nobody delivered."""
    return sorted(h.acked - {d.key for d in h.deliveries})


def delivery_intervals(h: History) -> list[Interval]:
    by_member: dict[tuple[str, str, int], list[Delivery]] = collections.defaultdict(list)
    for d in h.deliveries:
        by_member[(d.member, d.topic, d.partition)].append(d)
    out: list[Interval] = []
    for (member, topic, partition), ds in by_member.items():
        ds.sort(key=lambda d: d.at)
        run: list[object] = []  # [span or None, first, last, count]
        for d in ds:
            span = h.span_at(member, topic, partition, d.at, before=SPAN_BEFORE, after=SPAN_AFTER)
            same = run and run[0] is span and (span is not None or d.at - run[2] <= STRAY_GAP)  # type: ignore[operator]
            if same:
                run[2], run[3] = d.at, run[3] + 1  # type: ignore[operator]
                continue
            if run:
                out.append(Interval(member, topic, partition, run[1], run[2], run[3], run[0] is not None))  # type: ignore[arg-type]
            run = [span, d.at, d.at, 1]
        if run:
            out.append(Interval(member, topic, partition, run[1], run[2], run[3], run[0] is not None))  # type: ignore[arg-type]
    return out


def forced_close_windows(h: History) -> dict[str, list[tuple[float, float]]]:
    """member -> from the driver's closing its session from outside ("expire") until the member can
    have heard of it (the "session closed" note + FORCED_CLOSE_NOTICE)."""
    out: dict[str, list[tuple[float, float]]] = {}
    began: dict[str, float] = {}
    for n in sorted(h.notes, key=lambda n: n.at):
        if n.member and n.kind == "expire":
            began[n.member] = n.at
        elif n.member and n.kind == "session closed" and n.member in began:
            out.setdefault(n.member, []).append((began.pop(n.member), n.at + FORCED_CLOSE_NOTICE))
    return out


def _in_forced_close(windows: dict[str, list[tuple[float, float]]], member: str, first: float, last: float) -> bool:
    return any(lo <= first and last <= hi for lo, hi in windows.get(member, []))


def _forced_close_stray(iv: Interval, windows: dict[str, list[tuple[float, float]]]) -> bool:
    return not iv.owned and _in_forced_close(windows, iv.member, iv.first, iv.last)


def forced_close_strays(h: History) -> list[Interval]:
    """Stray intervals a member delivered after the driver closed its session from outside and
    before it could hear of it: outside the lease's model, so reported, not judged."""
    windows = forced_close_windows(h)
    return [iv for iv in delivery_intervals(h) if _forced_close_stray(iv, windows)]


def overlaps(h: History, eps: float = 0.02) -> list[Overlap]:
    """Invariant 2: two members delivering one partition during overlapping delivery intervals.

    An interval is first..last delivery inside one ownership span; a single stray delivery
    inside another member's interval counts too. eps absorbs scheduling between a hand-out
    and its timestamp. Strays of a session closed from outside (`forced_close_strays`) are left
    out; any later one counts.
    """
    windows = forced_close_windows(h)
    by_partition: dict[TopicPartition, list[Interval]] = collections.defaultdict(list)
    for iv in delivery_intervals(h):
        if not _forced_close_stray(iv, windows):
            by_partition[(iv.topic, iv.partition)].append(iv)
    found = []
    for ivs in by_partition.values():
        ivs.sort(key=lambda iv: iv.first)
        for i, a in enumerate(ivs):
            for b in ivs[i + 1 :]:
                if b.first >= a.last - eps:
                    break
                if b.member != a.member and a.first < b.last - eps:
                    found.append(Overlap(a, b))
    return found


def stray_deliveries(h: History) -> list[Delivery]:
    """Deliveries the observer cannot place inside an owner node of the deliverer (informational)."""
    return [
        d
        for d in h.deliveries
        if h.span_at(d.member, d.topic, d.partition, d.at, before=SPAN_BEFORE, after=SPAN_AFTER) is None
    ]


def duplicates(h: History) -> list[Duplicate]:
    """Invariant 3: every repeated delivery, judged against the delivery just before it.

    Allowed: the previous deliverer's ownership had ended and the offset lies in its
    uncommitted window: o >= the highest offset committed before that end if it lost its
    session (crash, expiry, stall), or o == that offset (the one message in flight) if it
    handed the partition over cleanly (rebalance or shutdown).
    """
    by_key: dict[MessageKey, list[Delivery]] = collections.defaultdict(list)
    for d in h.deliveries:
        by_key[d.key].append(d)
    windows = forced_close_windows(h)
    out = []
    for ds in by_key.values():
        if len(ds) < 2:
            continue
        ds.sort(key=lambda d: d.at)
        for previous, again in zip(ds, ds[1:]):
            out.append(_judge(h, previous, again, windows))
    return out


def _judge(h: History, previous: Delivery, again: Delivery, windows: dict[str, list[tuple[float, float]]]) -> Duplicate:
    topic, epoch, partition, offset = previous.key
    stray_again = h.span_at(again.member, topic, partition, again.at, before=SPAN_BEFORE, after=SPAN_AFTER) is None
    if stray_again and _in_forced_close(windows, again.member, again.at, again.at):
        return Duplicate(
            previous, again, True, f"{again.member}'s session was closed from outside; it had not heard yet"
        )
    span = h.span_at(previous.member, topic, partition, previous.at, before=SPAN_BEFORE, after=SPAN_AFTER)
    if span is None:
        # A stray: judge it by the ownership it had just lost (whether it may deliver at all is
        # invariant 2's business); a member that never owned the partition has no window.
        ended = [s for s in h.spans_of(previous.member, topic, partition) if s.end is not None and s.end <= previous.at]
        if not ended:
            return Duplicate(previous, again, False, f"{previous.member} delivered it, never having owned it")
        span = ended[-1]
    # One path holds one node at a time: the next owner's exact ctime bounds a late-observed end.
    if span.end is None or _handover_time(h, span) > again.at + SPAN_BEFORE:
        return Duplicate(previous, again, False, f"delivered again while {span.owner} still owned the partition")
    committed = h.committed_high(topic, epoch, partition, _handover_time(h, span))
    start = max(committed, 0)  # nothing committed: the next owner starts at the log start (smallest)
    if _lost_session(h, span):
        ok = offset >= start
        why = (
            f"{previous.member} lost its session; uncommitted window starts at {committed}"
            if ok
            else f"below {committed}, committed by {previous.member} before it lost its session"
        )
    else:
        ok = offset == start
        why = (
            f"in flight when {previous.member} handed over cleanly"
            if ok
            else f"{previous.member} handed over cleanly with {committed} committed"
        )
    return Duplicate(previous, again, ok, why)


def _handover_time(h: History, span: Span) -> float:
    """When ownership passed on: the span's observed end, or the next owner's (exact) claim if earlier."""
    assert span.end is not None
    later = [
        s.start for s in h.partition_spans(span.topic, span.partition) if s.start > span.start and s.czxid != span.czxid
    ]
    return min([span.end, *later[:1]])


def _lost_session(h: History, span: Span) -> bool:
    """True if the span ended because its session did, without the member handing it over.

    Exact when the span was settled from ZooKeeper's transaction log (History.settle). Else
    from observations: either its owner node vanished while the member could not have deleted it (killed,
    frozen, or cut off from ZooKeeper: only the session's end removes it then), or the driver
    expired the session while the node existed, or owner and
    member node vanished together. "Together" is judged from observed times, which a loaded
    observer can stretch past SESSION_END_MATCH; the first rule does not depend on them.
    """
    assert span.end is not None
    driver_expired = any(
        n.kind == "expire" and n.member == span.member and span.start <= n.at <= _handover_time(h, span)
        for n in h.notes
    )
    if span.ended_by is not None:
        # Settled from the server's log: exact. The driver expires a session by closing it from a
        # second client, which the log shows as a client's close.
        return span.ended_by in ("expiry", "deleted-by-other") or (span.ended_by == "close" and driver_expired)
    if any(lo <= span.end <= hi for lo, hi in dead_times(h).get(span.member, [])):
        return True
    if driver_expired:  # the node went with the session the driver ended
        return True
    inc = h.incarnation_at(span.member, span.start)
    if inc is None or inc.end is None or abs(inc.end - span.end) > SESSION_END_MATCH:
        return False
    return not h.left_cleanly(span.member, span.end + SPAN_AFTER)


def dead_times(h: History) -> dict[str, list[tuple[float, float]]]:
    """member -> intervals it could not deliver: killed (for good), stopped until continued, cut off
    from ZooKeeper until healed."""
    out: dict[str, list[tuple[float, float]]] = {}
    began: dict[tuple[str, str], float] = {}
    ends = {"cont": "stop", "heal": "cut"}
    for n in sorted(h.notes, key=lambda n: n.at):
        if not n.member:
            continue
        if n.kind in ("stop", "cut"):
            began[(n.member, n.kind)] = n.at
        elif n.kind in ends and (n.member, ends[n.kind]) in began:
            out.setdefault(n.member, []).append((began.pop((n.member, ends[n.kind])), n.at))
        elif n.kind == "kill":
            out.setdefault(n.member, []).append((n.at, float("inf")))
    for (member, _), t in began.items():
        out.setdefault(member, []).append((t, float("inf")))
    return out


def _working(span: Span, end: float, dead: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of [span.start, end] its member was able to deliver in."""
    pieces = [(span.start, end)]
    for lo, hi in dead:
        pieces = [part for a, b in pieces for part in ((a, min(b, lo)), (max(a, hi), b)) if part[1] > part[0]]
    return pieces


def unowned_windows(h: History) -> dict[TopicPartition, float]:
    """Per partition, the longest time within since..until it existed without a working owner.

    An owner node counts while it exists and its member can deliver: not once killed, nor
    while frozen or cut off from ZooKeeper (its nodes outlive that by a session timeout).
    """
    out: dict[TopicPartition, float] = {}
    dead = dead_times(h)
    for pr in h.presence:
        lo, hi = max(pr.start, h.since), min(pr.end if pr.end is not None else h.until, h.until)
        if hi <= lo:
            continue
        pieces = sorted(
            piece
            for span in h.partition_spans(pr.topic, pr.partition)
            for piece in _working(span, span.end if span.end is not None else hi, dead.get(span.member, []))
        )
        cursor, worst = lo, 0.0
        for start, end in pieces:
            if end <= cursor or start >= hi:
                continue
            worst = max(worst, start - cursor)
            cursor = end
        worst = max(worst, hi - cursor)
        key = (pr.topic, pr.partition)
        out[key] = max(out.get(key, 0.0), worst)
    return out


def commit_regressions(h: History) -> list[str]:
    """Committed offsets that went backwards within one topic incarnation (a fencing failure)."""
    starts = sorted(h.epoch_starts.items(), key=lambda kv: kv[1])
    found = []
    last: dict[tuple[str, int, int], int] = {}
    for c in sorted(h.commits, key=lambda c: c.at):
        epoch = max((e for (t, e), at in starts if t == c.topic and at <= c.at), default=0)
        if not h.commit_epoch(c, epoch):
            continue  # a position left over from the previous incarnation
        key = (c.topic, epoch, c.partition)
        if key in last and c.offset < last[key]:
            found.append(f"{c.topic}-{c.partition}: {last[key]} -> {c.offset} at {c.at:.3f}")
        last[key] = max(last.get(key, -1), c.offset)
    return found


def delivery_latency(h: History) -> dict[TopicPartition, float]:
    """Per partition, the longest wait from a message's ack to its first delivery (liveness)."""
    first: dict[MessageKey, float] = {}
    for d in h.deliveries:
        if d.at < first.get(d.key, float("inf")):
            first[d.key] = d.at
    out: dict[TopicPartition, float] = {}
    for key, acked in h.acked_at.items():
        wait = first.get(key, h.until) - acked
        tp = (key[0], key[2])
        out[tp] = max(out.get(tp, 0.0), wait)
    return out
