"""Pure: split a consume() batch into runs of one partition each, with a few C calls per message.

librdkafka appends each fetch response's messages of one partition to the consumer queue in
one piece, so a batch is a handful of long runs. Finding their ends message by message in
Python cost more than everything else the fetcher does; here `map()` reads each message's
error and partition in C, galloping probes find where a partition's run ends, and one
`list.count` per probed segment verifies it, so the cost stays linear however the partitions
interleave. Topics are compared only for partition numbers that more than one topic has (the
fetcher counts every topic it ever assigned: librdkafka returns no other messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from confluent_kafka import Message

_error, _partition, _topic = Message.error, Message.partition, Message.topic

M = TypeVar("M", bound=Message)  # the runs hold the very messages passed in


def split_runs(messages: Sequence[M], shared_partitions: frozenset[int] = frozenset()) -> list[list[M]]:
    """Consecutive messages of one (topic, partition), in order; every error message is a run of its own.

    Concatenated, the runs are `messages`; two neighbouring runs of data messages never share a
    (topic, partition). `shared_partitions` names the partition numbers several topics of this
    consumer have: only there are topics compared.
    """
    n = len(messages)
    if n == 0:
        return []
    if not any(map(_error, messages)):  # (not a count of None: KafkaError's == raises for None)
        return _data_runs(messages if type(messages) is list else list(messages), shared_partitions)
    errors = list(map(_error, messages))
    runs: list[list[M]] = []
    start = 0
    for k, error in enumerate(errors):  # rare: only batches carrying an error take this loop
        if error is not None:
            if start < k:
                runs += _data_runs(list(messages[start:k]), shared_partitions)
            runs.append([messages[k]])
            start = k + 1
    if start < n:
        runs += _data_runs(list(messages[start:]), shared_partitions)
    return runs


def _data_runs(messages: list[M], shared_partitions: frozenset[int]) -> list[list[M]]:
    partitions = list(map(_partition, messages))
    runs: list[list[M]] = []
    for i, j in spans(partitions):
        run = messages[i:j]
        if partitions[i] in shared_partitions:
            topics = list(map(_topic, run))
            runs += [run[a:b] for a, b in spans(topics)]
        else:
            runs.append(run)
    return runs


def spans(keys: list[Any]) -> list[tuple[int, int]]:
    """Maximal [i, j) ranges of equal neighbouring keys, in order."""
    out = []
    i, n = 0, len(keys)
    while i < n:
        j = _span_end(keys, i, n)
        out.append((i, j))
        i = j
    return out


def _span_end(keys: list[Any], i: int, n: int) -> int:
    """End of the span of keys[i]: gallop over segments of doubling length, each verified whole by
    list.count (C); the segment holding the end is bisected the same way. Linear in the span."""
    key, end, step = keys[i], i + 1, 1
    while end < n:
        probe = min(n, end + step)
        segment = keys[end:probe]
        if segment.count(key) != len(segment):
            return _first_other(keys, key, end, probe)
        end, step = probe, step * 2
    return end


def _first_other(keys: list[Any], key: Any, lo: int, hi: int) -> int:
    """The first index in [lo, hi) whose key differs, knowing one does."""
    while hi - lo > 8:
        mid = (lo + hi) // 2
        half = keys[lo:mid]
        if half.count(key) == len(half):
            lo = mid
        else:
            hi = mid
    while keys[lo] == key:
        lo += 1
    return lo
