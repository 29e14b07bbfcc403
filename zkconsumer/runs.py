"""Pure: split a consume() batch into runs of one partition each, with a few C calls per message.

librdkafka appends each fetch response's messages of one partition to the consumer queue in
one piece, so a batch is a handful of long runs. Finding their ends message by message in
Python cost more than everything else the fetcher does; here `map()` reads each message's
error and partition in C, galloping probes find where a partition's run ends, and one
`list.count` over the run verifies it (a partition that shows up again after another one,
say, falls back to a linear scan). Topics are compared only for partition numbers that more
than one assigned topic has.
"""
from __future__ import annotations

from typing import Any, Sequence

from confluent_kafka import Message

_error, _partition, _topic = Message.error, Message.partition, Message.topic


def split_runs(messages: Sequence[Message], shared_partitions: frozenset[int] = frozenset()) -> list[list[Message]]:
    """Consecutive messages of one (topic, partition), in order; every error message is a run of its own.

    Concatenated, the runs are `messages`; two neighbouring runs of data messages never share a
    (topic, partition). `shared_partitions` names the partition numbers assigned in several
    topics: only there are topics compared.
    """
    n = len(messages)
    if n == 0:
        return []
    errors = list(map(_error, messages))
    if not any(errors):  # (not errors.count(None): KafkaError's == raises for None)
        return _data_runs(list(messages), shared_partitions)
    runs: list[list[Message]] = []
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


def _data_runs(messages: list[Message], shared_partitions: frozenset[int]) -> list[list[Message]]:
    partitions = list(map(_partition, messages))
    runs: list[list[Message]] = []
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
    key = keys[i]
    same, step, probe = i, 1, i + 1
    while probe < n and keys[probe] == key:  # gallop: i+1, i+2, i+4, ...
        same, step = probe, step * 2
        probe = same + step
    lo, hi = same + 1, min(probe, n)  # keys[same] == key; keys[hi] != key unless hi == n
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] == key:
            lo = mid + 1
        else:
            hi = mid
    if keys[i:lo].count(key) == lo - i:
        return lo
    j = i + 1  # the probes skipped over another key's messages: walk
    while j < n and keys[j] == key:
        j += 1
    return j
