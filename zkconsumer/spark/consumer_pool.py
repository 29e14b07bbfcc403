"""The executor's idle Kafka consumers, one per partition read, kept for the next read of the same partition.

With the option reuseConsumers=true: Spark reuses a Python worker process for the tasks of a
query (spark.python.worker.reuse), and a stream reads the same partitions batch after batch, so a
read takes the idle consumer of its partition (same settings, same bootstrap) and gives it back,
paused, when it ends cleanly; one that stopped exactly where the next batch starts is resumed
without a re-assign. A read that fails closes its consumer. At most LIMIT consumers wait per
process; the least recently used one is closed first.

Off by default, because measured it loses (docs/performance.md, Spark): on the standalone
cluster a new consumer reaches its first message in a median 8 ms, while a pooled one either keeps
fetching while idle (librdkafka prefetches up to queued.min.messages; the pool's background
fetching kept the cores busy: p50 latency 4.8 s against 2.0 s) or, paused, waits a median 134 ms for
its first message after the resume. It may pay off where a connection is expensive (TLS and SASL
to distant brokers); that is not measured.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import Any

LIMIT = 64

PoolKey = tuple[tuple[tuple[str, str], ...], str, int, int | None]


def pool_key(conf: Mapping[str, object], topic: str, partition: int, epoch: int | None = None) -> PoolKey:
    """What makes two reads able to share a consumer: every setting (bootstrap included), the
    partition, and the topic's incarnation (a consumer of a deleted topic's log is of no use for a
    re-created one: its leader epochs and positions belong to the old log)."""
    return tuple(sorted((k, str(v)) for k, v in conf.items() if k != "logger")), topic, partition, epoch


class ConsumerPool:
    """Idle consumers by pool_key, each with the offset it would return next (None: not known).

    Example::

        consumer, next_offset = POOL.take(key)        # (None, None): make one
        ...read...
        POOL.give_back(key, consumer, next_offset)   # or close it, after a failure
    """

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._idle: collections.OrderedDict[PoolKey, tuple[Any, int | None]] = collections.OrderedDict()

    def take(self, key: PoolKey) -> tuple[Any, int | None]:
        with self._lock:
            return self._idle.pop(key, (None, None))

    def give_back(self, key: PoolKey, consumer: Any, next_offset: int | None) -> None:
        with self._lock:
            evicted = [self._idle.pop(key)[0]] if key in self._idle else []
            self._idle[key] = (consumer, next_offset)
            while len(self._idle) > self._limit:
                evicted.append(self._idle.popitem(last=False)[1][0])
        for old in evicted:
            old.close()

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = list(self._idle.values()), collections.OrderedDict()
        for consumer, _ in idle:
            consumer.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)


POOL = ConsumerPool()  # this process's: executors run one Python worker per task slot
