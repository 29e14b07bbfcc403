"""The live-switch audit's arithmetic (pure): lost, overlap, duplicates, silences and gaps from a delivery log.

Every figure of issue #54's "Measure" is computed here from plain records, so it is tested on planted
logs (tests/unit/test_switch_audit.py) before it judges a real run (scripts/bench/live_switch.py).

Definitions (one topic; a partition's messages are keyed by offset):
- a *span* is a run of one member's deliveries of one partition with no pause longer than
  `span_gap` seconds: the time that member was delivering that partition;
- *overlap*: a (partition, offset) delivered by two members whose spans of that partition
  intersect in time: both were delivering it at once;
- *duplicates*: deliveries of a (partition, offset) beyond its first that are not overlap, e.g.
  a hand-over after a kill -9 re-delivering the crashed member's uncommitted window;
- *lost*: an acknowledged (partition, offset) never delivered;
- *silence*: the longest time within the judged window in which the whole group delivered nothing;
- *gaps*: per partition, the times between consecutive first deliveries (and from the window's
  start, and to its end), pooled over partitions for the p99 and the max.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Key = tuple[int, int]  # (partition, offset)


@dataclass(frozen=True)
class Delivery:
    """`member` handed (partition, offset) to the application at `at` (CLOCK_MONOTONIC seconds)."""

    member: str
    partition: int
    offset: int
    at: float

    @property
    def key(self) -> Key:
        return (self.partition, self.offset)


@dataclass(frozen=True)
class Span:
    """`member` delivered `count` messages of `partition` between `first` and `last`."""

    member: str
    partition: int
    first: float
    last: float
    count: int

    def meets(self, other: Span) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class Figures:
    """The audit of one run (or one phase of it)."""

    delivered: int
    acked: int
    unacked_delivered: int  # offsets delivered that no ack named (a producer's retry after a lost ack writes twice)
    lost: int
    overlap: int  # offsets delivered by two members at overlapping times
    overlap_spans: tuple[tuple[Span, Span], ...]  # the span pairs the overlap offsets were delivered in
    duplicates: int
    duplicate_examples: tuple[tuple[Delivery, ...], ...]  # the first few duplicated keys, every delivery of each
    silence_s: float
    gap_p99_s: float
    gap_max_s: float
    gap_max_partition: int

    def line(self, prefix: str = "") -> str:
        """key=value figures (prefix e.g. "rolling_")."""
        p = prefix
        return (
            f"{p}lost={self.lost} {p}overlap={self.overlap} {p}duplicates={self.duplicates} "
            f"{p}silence_s={self.silence_s:.3f} {p}gap_p99_s={self.gap_p99_s:.3f} {p}gap_max_s={self.gap_max_s:.3f}"
        )


def lost(acked: Iterable[Key], deliveries: Iterable[Delivery]) -> list[Key]:
    seen = {d.key for d in deliveries}
    return sorted(k for k in set(acked) if k not in seen)


def spans(deliveries: Iterable[Delivery], span_gap: float) -> list[Span]:
    """Each member's delivery runs of each partition, split where it paused longer than span_gap."""
    by_owner: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for d in deliveries:
        by_owner[(d.member, d.partition)].append(d.at)
    out: list[Span] = []
    for (member, partition), times in sorted(by_owner.items()):
        times.sort()
        first = prev = times[0]
        count = 0
        for t in times:
            if t - prev > span_gap:
                out.append(Span(member, partition, first, prev, count))
                first, count = t, 0
            prev = t
            count += 1
        out.append(Span(member, partition, first, prev, count))
    return out


def _span_of(index: Mapping[tuple[str, int], list[Span]], d: Delivery) -> Span:
    for s in index[(d.member, d.partition)]:
        if s.first <= d.at <= s.last:
            return s
    raise AssertionError(f"no span holds {d}")  # spans() covers every delivery


def overlap_and_duplicates(deliveries: list[Delivery], span_gap: float) -> tuple[set[Key], int]:
    """(offsets delivered by two members in intersecting spans, deliveries beyond a key's first that are not those)."""
    overlap, duplicated, _ = _overlap_and_duplicated(deliveries, span_gap)
    return overlap, sum(len(ds) - 1 for ds in duplicated)


def _overlap_and_duplicated(
    deliveries: list[Delivery], span_gap: float
) -> tuple[set[Key], list[list[Delivery]], set[tuple[Span, Span]]]:
    """(overlap keys, the deliveries of each duplicated key, the span pairs the overlap keys were delivered in)."""
    all_spans = spans(deliveries, span_gap)
    index: dict[tuple[str, int], list[Span]] = collections.defaultdict(list)
    for s in all_spans:
        index[(s.member, s.partition)].append(s)
    by_key: dict[Key, list[Delivery]] = collections.defaultdict(list)
    for d in deliveries:
        by_key[d.key].append(d)
    overlap: set[Key] = set()
    pairs: set[tuple[Span, Span]] = set()
    duplicated: list[list[Delivery]] = []
    for key, ds in by_key.items():
        if len(ds) < 2:
            continue
        held = [_span_of(index, d) for d in ds]
        met = [
            (a, b) if a.first <= b.first else (b, a)
            for i, a in enumerate(held)
            for b in held[i + 1 :]
            if a.member != b.member and a.meets(b)
        ]
        if met:
            overlap.add(key)
            pairs.update(met)
            continue
        duplicated.append(sorted(ds, key=lambda d: d.at))
    return overlap, duplicated, pairs


def longest_silence(times: Iterable[float], start: float, end: float) -> float:
    """The longest stretch of [start, end] with no delivery at all."""
    inside = sorted(t for t in times if start <= t <= end)
    points = [start, *inside, end]
    return max((b - a for a, b in zip(points, points[1:])), default=end - start)


def partition_gaps(
    deliveries: Iterable[Delivery], start: float, end: float, born: Mapping[int, float] | None = None
) -> dict[int, list[float]]:
    """Per partition, the gaps between its consecutive first deliveries within [start, end], edges
    included; a partition in `born` (e.g. added during the run) counts from then, not from `start`."""
    first: dict[Key, float] = {}
    for d in deliveries:
        if d.at < first.get(d.key, float("inf")):
            first[d.key] = d.at
    times: dict[int, list[float]] = collections.defaultdict(list)
    for (partition, _), at in first.items():
        if start <= at <= end:
            times[partition].append(at)
    out = {}
    for partition, ts in times.items():
        opened = max(start, (born or {}).get(partition, start))
        points = [opened, *sorted(t for t in ts if t >= opened), end]
        out[partition] = [b - a for a, b in zip(points, points[1:])]
    return out


def percentile(values: list[float], q: float) -> float:
    """The q-quantile by the nearest-rank rule (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n q), at least 1
    return ordered[int(rank) - 1]


def audit(
    deliveries: list[Delivery],
    acked: Iterable[Key],
    *,
    start: float,
    end: float,
    span_gap: float = 1.0,
    born: Mapping[int, float] | None = None,
) -> Figures:
    """Every figure of one run; [start, end] is the judged window for silences and gaps; `born`: when
    each partition's first message was acknowledged (partitions added mid-run count from then)."""
    acked = set(acked)
    overlap, duplicated, pairs = _overlap_and_duplicated(deliveries, span_gap)
    duplicated.sort(key=lambda ds: ds[0].at)
    gaps = partition_gaps(deliveries, start, end, born)
    pooled = [g for gs in gaps.values() for g in gs]
    worst = max(gaps, key=lambda p: max(gaps[p]), default=-1)
    return Figures(
        delivered=len(deliveries),
        acked=len(acked),
        unacked_delivered=len({d.key for d in deliveries} - acked),
        lost=len(lost(acked, deliveries)),
        overlap=len(overlap),
        overlap_spans=tuple(sorted(pairs, key=lambda ab: (ab[0].partition, ab[0].first))),
        duplicates=sum(len(ds) - 1 for ds in duplicated),
        duplicate_examples=tuple(tuple(ds) for ds in duplicated[:5]),
        silence_s=longest_silence((d.at for d in deliveries), start, end),
        gap_p99_s=percentile(pooled, 0.99),
        gap_max_s=max(pooled, default=0.0),
        gap_max_partition=worst,
    )


def parse_log_line(member: str, line: str) -> Delivery | None:
    """A harness.chaos_member line "<clock> <topic> <partition> <offset> <value>" -> Delivery (None if torn)."""
    parts = line.split()
    if len(parts) < 4:
        return None  # the last line of a member killed mid-write
    try:
        return Delivery(member, int(parts[2]), int(parts[3]), float(parts[0]))
    except ValueError:
        return None


RELEASE_CHECK = "live switch release check (ZooKeeper/Kafka): "  # zkconsumer.coordinator.switch_follow's line
_CHECKED = re.compile(r"(\S+)-(\d+) (-?\d+)/(-?\d+)")


@dataclass(frozen=True)
class ReleaseCheck:
    """At one release of a live switch, `member` read `partition`'s offset in ZooKeeper and, after
    committing it to Kafka as a group member, read Kafka's back: the node goes only if they are equal."""

    member: str
    topic: str
    partition: int
    zookeeper: int
    kafka: int

    @property
    def equal(self) -> bool:
        return self.zookeeper == self.kafka


def parse_release_checks(member: str, log_text: str) -> list[ReleaseCheck]:
    """Every partition of every release-check line in a member's log (the line's format: "<topic>-<p>
    <zookeeper>/<kafka>, ...")."""
    out = []
    for line in log_text.splitlines():
        _, found, rest = line.partition(RELEASE_CHECK)
        if not found:
            continue
        for m in _CHECKED.finditer(rest):
            out.append(ReleaseCheck(member, m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))))
    return out


@dataclass(frozen=True)
class RestRound:
    """One round of reads: ZooKeeper, then Kafka, then ZooKeeper again (partition -> offset)."""

    zookeeper_before: Mapping[int, int]
    kafka: Mapping[int, int]
    zookeeper_after: Mapping[int, int]


@dataclass(frozen=True)
class RestVerdict:
    """Per partition: `equal` if in some round both ZooKeeper reads and the Kafka read between them
    agreed (the stores were equal at that instant); `unequal` if in some round ZooKeeper held still
    and Kafka differed, and no round found them equal; `unsettled` if ZooKeeper moved in every round."""

    equal: tuple[int, ...]
    unequal: dict[int, tuple[int | None, int | None]]
    unsettled: tuple[int, ...]


def judge_rest(partitions: Iterable[int], rounds: Iterable[RestRound]) -> RestVerdict:
    rounds = list(rounds)
    equal: list[int] = []
    unequal: dict[int, tuple[int | None, int | None]] = {}
    unsettled: list[int] = []
    for p in sorted(partitions):
        settled = [r for r in rounds if r.zookeeper_before.get(p) == r.zookeeper_after.get(p)]
        if any(r.kafka.get(p) == r.zookeeper_before.get(p) for r in settled):
            equal.append(p)
        elif settled:
            last = settled[-1]
            unequal[p] = (last.zookeeper_before.get(p), last.kafka.get(p))
        else:
            unsettled.append(p)
    return RestVerdict(tuple(equal), unequal, tuple(unsettled))
