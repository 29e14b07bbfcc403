"""Figures of one fault window, read from a chaos History: delivery gaps, overlap time, delivery after a cut, moves."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from harness.chaos_history import Delivery, History, Incarnation, Span, TopicPartition


def _by_partition(h: History) -> dict[TopicPartition, list[Delivery]]:
    out: dict[TopicPartition, list[Delivery]] = collections.defaultdict(list)
    for d in h.deliveries:
        out[(d.topic, d.partition)].append(d)
    for ds in out.values():
        ds.sort(key=lambda d: d.at)
    return out


def delivery_gap(h: History, since: float, until: float) -> tuple[TopicPartition | None, float]:
    """The longest time a partition went without any delivery (by anyone) that ended in since..until."""
    worst: tuple[TopicPartition | None, float] = (None, 0.0)
    for tp, ds in _by_partition(h).items():
        for a, b in zip(ds, ds[1:]):
            if since <= b.at <= until and b.at - a.at > worst[1]:
                worst = (tp, b.at - a.at)
    return worst


def ack_latency(h: History, since: float, until: float) -> float:
    """The longest wait from an ack within since..until to the message's first delivery."""
    worst = 0.0
    for key, acked in h.acked_at.items():
        if since <= acked <= until:
            worst = max(worst, h.first_delivered(key) - acked)
    return worst


def moved_spans(h: History, since: float, until: float) -> list[Span]:
    """Owner nodes created or ended within since..until: each is a partition moving (a rebalance's work)."""
    return [s for s in h.spans if since <= s.start <= until or (s.end is not None and since <= s.end <= until)]


def new_registrations(h: History, since: float, until: float) -> list[Incarnation]:
    """Member nodes created or ended within since..until (a session lost, or a member that came or went)."""
    return [i for i in h.incarnations if since <= i.start <= until or (i.end is not None and since <= i.end <= until)]


@dataclass(frozen=True)
class OverlapTime:
    """How long two members delivered one partition at once (from their delivery times), and who."""

    topic: str
    partition: int
    seconds: float
    members: tuple[str, str]


def _runs(ds: list[Delivery], gap: float) -> list[tuple[str, float, float]]:
    """A member's deliveries of one partition as runs (member, first, last): a pause over `gap` ends a run."""
    out: list[tuple[str, float, float]] = []
    for d in ds:
        if out and out[-1][0] == d.member and d.at - out[-1][2] <= gap:
            out[-1] = (d.member, out[-1][1], d.at)
        else:
            out.append((d.member, d.at, d.at))
    return out


def overlap_times(h: History, since: float, until: float, *, gap: float = 1.0) -> list[OverlapTime]:
    """Every pair of members whose delivery runs of one partition intersect within since..until.

    A run is a member's consecutive deliveries of the partition with no pause over `gap`, taken
    per member; two runs of different members that intersect are an overlap, of the length of
    their intersection (0 when one run is a single delivery inside the other: still reported).
    """
    found: list[OverlapTime] = []
    for (topic, partition), ds in _by_partition(h).items():
        per_member: dict[str, list[Delivery]] = collections.defaultdict(list)
        for d in ds:
            if since <= d.at <= until:
                per_member[d.member].append(d)
        runs = [r for member_ds in per_member.values() for r in _runs(member_ds, gap)]
        runs.sort(key=lambda r: r[1])
        for i, (ma, _, la) in enumerate(runs):
            for mb, fb, lb in runs[i + 1 :]:
                if fb > la:
                    break
                if mb != ma:
                    found.append(OverlapTime(topic, partition, max(0.0, min(la, lb) - fb), (ma, mb)))
    return found


def delivered_after(h: History, member: str, t: float, until: float = float("inf")) -> float:
    """How long after `t` (and before `until`) `member` last delivered anything; 0 if it delivered nothing then."""
    last = max((d.at for d in h.deliveries if d.member == member and t <= d.at <= until), default=t)
    return last - t


def delivered_by_others(
    h: History, member: str, partitions: set[TopicPartition], since: float, until: float
) -> list[Delivery]:
    """Deliveries of `partitions` by members other than `member` within since..until."""
    return [
        d
        for d in h.deliveries
        if d.member != member and (d.topic, d.partition) in partitions and since <= d.at <= until
    ]


def partitions_delivered(h: History, member: str, since: float, until: float) -> set[TopicPartition]:
    return {(d.topic, d.partition) for d in h.deliveries if d.member == member and since <= d.at <= until}


def partitions_owned(h: History, member: str, t: float) -> set[TopicPartition]:
    """The partitions whose owner node was `member`'s at time t."""
    return {
        (s.topic, s.partition) for s in h.spans if s.member == member and s.start <= t and (s.end is None or t <= s.end)
    }
