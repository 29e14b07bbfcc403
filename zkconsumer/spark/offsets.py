"""Offsets as Spark sees them: JSON codec ("topic/partition" keys), start resolution, per-batch ranges."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pyspark.sql.datasource import InputPartition

from zkconsumer.errors import ZkConsumerError

log = logging.getLogger(__name__)

Key = tuple[str, int]
EARLIEST, LATEST = -2, -1  # sentinels in startingOffsets JSON (as in Spark's Kafka source)
FROM = "@from"  # end-offset sub-object: partitions whose batch does not start at the previous end
EPOCHS = "@epochs"  # sub-object topic -> incarnation (czxid of its ZooKeeper node) the positions count in
INITIAL = "@initial"  # marks initialOffset()'s answer: the batch planned from it records every start


class DataLossError(ZkConsumerError, RuntimeError):
    """Offsets to read are gone (retention, topic re-created) and failOnDataLoss is true."""


def key_text(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def parse_key(text: str) -> Key:
    topic, sep, partition = text.rpartition("/")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f'bad offset key {text!r}: expected "topic/partition"')
    return topic, int(partition)


def encode_offsets(
    positions: Mapping[Key, int],
    froms: Mapping[Key, int] | None = None,
    epochs: Mapping[str, int] | None = None,
    *,
    initial: bool = False,
) -> dict[str, Any]:
    """Spark offset dict: keys sorted so equal positions always give the same JSON string."""
    doc: dict[str, Any] = {}
    if initial:
        doc[INITIAL] = True
    if epochs:
        doc[EPOCHS] = {t: int(epochs[t]) for t in sorted(epochs)}
    if froms:
        doc[FROM] = {key_text(k): int(froms[k]) for k in sorted(froms)}
    doc.update((key_text(k), int(positions[k])) for k in sorted(positions))
    return doc


def decode_offsets(doc: Mapping[str, Any]) -> dict[Key, int]:
    """ "topic/partition" -> offset ("@" entries are not positions: topic names never start with "@")."""
    out: dict[Key, int] = {}
    for text, value in doc.items():
        if text.startswith("@"):
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"offset of {text!r} must be an integer, not {value!r}")
        out[parse_key(text)] = value
    return out


def decode_froms(doc: Mapping[str, Any]) -> dict[Key, int]:
    sub = doc.get(FROM) or {}
    return {parse_key(k): int(v) for k, v in sub.items()}


def decode_epochs(doc: Mapping[str, Any]) -> dict[str, int]:
    """topic -> incarnation the positions were counted in; empty for offsets written before epochs
    were recorded (their positions are trusted as before)."""
    return {str(t): int(v) for t, v in (doc.get(EPOCHS) or {}).items()}


def is_initial(doc: Mapping[str, Any]) -> bool:
    return bool(doc.get(INITIAL))


@dataclass(frozen=True)
class OffsetRange:
    """Messages [start, end) of one partition, read through `bootstrap`; `epoch` is the topic's
    incarnation the offsets count in (None: not known)."""

    topic: str
    partition: int
    start: int
    end: int
    bootstrap: str
    epoch: int | None = None

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)

    @property
    def size(self) -> int:
        return self.end - self.start


def initial_position(
    key: Key, committed: int, *, explicit: Mapping[Key, int], fallback: str, ignore_committed: bool
) -> int:
    """Where a partition starts when no checkpoint covers it: an explicit startingOffsets entry,
    else the group's committed offset (-1: none), else the fallback (EARLIEST/LATEST sentinel)."""
    if key in explicit:
        return explicit[key]
    if committed >= 0 and not ignore_committed:
        return committed
    return EARLIEST if fallback == "earliest" else LATEST


def settle(
    key: Key, position: int, low: int, high: int, *, fail_on_data_loss: bool, past_end_to_end: bool = False
) -> int:
    """Resolve sentinels against the log [low, high); handle positions outside it.

    With `past_end_to_end` (the stream, which tells a re-created topic apart by its incarnation),
    a position past the log end means a truncated log: what lies below the new end was read
    before, so failOnDataLoss=false continues at the end instead of re-reading from the start.
    """
    if position == EARLIEST:
        return low
    if position == LATEST:
        return high
    if low <= position <= high:
        return position
    what = (
        "before the log start (deleted by retention?)"
        if position < low
        else "after the log end (topic re-created or truncated?)"
    )
    message = f"{key[0]}-{key[1]}: offset {position} is {what}; the log holds [{low}, {high})"
    resume = high if position > high and past_end_to_end else low
    if fail_on_data_loss:
        raise DataLossError(f"{message}. Set failOnDataLoss=false to continue from offset {resume}.")
    log.warning("%s; continuing from %d (failOnDataLoss=false)", message, resume)
    return resume


def rate_limit(spans: Mapping[Key, tuple[int, int]], limit: int | None) -> dict[Key, int]:
    """End offset per partition so that about `limit` messages are read over all of them.

    Every partition with a backlog reads at least one message, so none starves behind busy ones
    (Spark's Kafka source rounds shares below one up to one as well); with more such partitions
    than `limit` the batch therefore holds one message each. The rest of the limit is shared in
    proportion to what remains of each backlog, leftovers to the largest remainders (ties by key):
    the sum is max(limit, partitions with a backlog) capped by the backlog, the same on every run.
    """
    ends = {k: hi for k, (_, hi) in spans.items()}
    backlog = {k: max(0, hi - lo) for k, (lo, hi) in spans.items()}
    total = sum(backlog.values())
    if limit is None or total <= limit:
        return ends
    shares = {k: min(1, n) for k, n in backlog.items()}
    rest = {k: backlog[k] - shares[k] for k in backlog}
    budget = limit - sum(shares.values())
    rest_total = sum(rest.values())
    if budget > 0 and rest_total > 0:  # total > limit, so rest_total > budget: every share fits
        for k, n in rest.items():
            shares[k] += budget * n // rest_total
        leftover = limit - sum(shares.values())
        for k in sorted(rest, key=lambda k: (-(budget * rest[k] % rest_total), k)):
            if leftover <= 0:
                break
            if shares[k] < backlog[k]:
                shares[k] += 1
                leftover -= 1
    return {k: spans[k][0] + shares[k] for k in spans}


def batch_ranges(start: Mapping[str, Any], end: Mapping[str, Any]) -> list[tuple[Key, int, int]]:
    """(key, from, to) with from < to for one micro-batch; a FROM entry in `end` overrides start."""
    before = decode_offsets(start)
    froms = decode_froms(end)
    out = []
    for key, to in sorted(decode_offsets(end).items()):
        begin = froms.get(key, before.get(key))
        if begin is not None and begin < to:
            out.append((key, begin, to))
    return out


def split(
    ranges: Iterable[tuple[Key, int, int]],
    bootstrap: str,
    min_partitions: int | None,
    epochs: Mapping[str, int | None] | None = None,
    max_records: int | None = None,
) -> list[OffsetRange]:
    """One task per range; with max_records (Spark's maxRecordsPerPartition), each range cut into
    ceil(size / max_records) near-equal pieces first; with min_partitions, then halve the largest
    ranges until there are enough. `epochs`: topic -> the incarnation the offsets count in."""
    epochs = epochs or {}
    parts = [
        OffsetRange(k[0], k[1], a, b, bootstrap, epochs.get(k[0]))
        for k, lo, hi in ranges
        for a, b in _pieces(lo, hi, max_records)
    ]
    while min_partitions and len(parts) < min_partitions:
        biggest = max(parts, key=lambda r: (r.size, r.topic, -r.partition), default=None)
        if biggest is None or biggest.size < 2:
            break
        mid = biggest.start + biggest.size // 2
        parts.remove(biggest)
        parts += [
            OffsetRange(biggest.topic, biggest.partition, biggest.start, mid, bootstrap, biggest.epoch),
            OffsetRange(biggest.topic, biggest.partition, mid, biggest.end, bootstrap, biggest.epoch),
        ]
    return sorted(parts, key=lambda r: (r.topic, r.partition, r.start))


def _pieces(lo: int, hi: int, max_records: int | None) -> list[tuple[int, int]]:
    """[lo, hi) as ceil(size / max_records) contiguous pieces whose sizes differ by at most one."""
    if not max_records or hi - lo <= max_records:
        return [(lo, hi)]
    count = -(-(hi - lo) // max_records)
    bounds = [lo + (hi - lo) * i // count for i in range(count + 1)]
    return list(pairwise(bounds))


@dataclass(frozen=True)
class ReadTask(InputPartition):
    """One Spark task: ranges of distinct partitions that one consumer reads together."""

    ranges: tuple[OffsetRange, ...]

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)


def pack(parts: Sequence[OffsetRange], rows_per_task: int, min_tasks: int | None = None) -> list[ReadTask]:
    """Ranges into tasks of about `rows_per_task` rows each (0: one task per range).

    Every Python task costs Spark a fixed hand-over to a Python worker, more than reading a few
    thousand messages. A range of `rows_per_task` rows or more is a task of its own; the smaller
    ones share ceil(their rows / rows_per_task) tasks; in all at least `min_tasks` and at most one
    per range, the ranges going largest first to the lightest task. With `min_tasks`, split() made
    at most that many ranges, so a task never holds two ranges of one partition.
    """
    if not parts:
        return []
    if rows_per_task <= 0:
        wanted = len(parts)
    else:
        large = sum(1 for r in parts if r.size >= rows_per_task)
        wanted = large + -(-sum(r.size for r in parts if r.size < rows_per_task) // rows_per_task)
    count = min(len(parts), max(wanted, min_tasks or 1, 1))
    loads = [0] * count
    bins: list[list[OffsetRange]] = [[] for _ in range(count)]
    for part in sorted(parts, key=lambda r: (-r.size, r.topic, r.partition, r.start)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        bins[lightest].append(part)
        loads[lightest] += part.size
    tasks = [ReadTask(tuple(sorted(b, key=lambda r: (r.topic, r.partition, r.start)))) for b in bins]
    return sorted(tasks, key=lambda t: (t.ranges[0].topic, t.ranges[0].partition, t.ranges[0].start))
