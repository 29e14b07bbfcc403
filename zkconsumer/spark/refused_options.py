"""Spark Kafka source options this source cannot honour (names, each with what to use instead; entries outside the subscription) (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

# Lower-cased (Spark hands options over lower-cased): Spark's option -> what to write instead.
# Left out on purpose: the names this source honours with Spark's meaning (startingOffsets,
# endingOffsets, maxOffsetsPerTrigger, failOnDataLoss, minPartitions, includeHeaders,
# maxRecordsPerPartition, the timestamp options, minOffsetsPerTrigger, maxTriggerDelay,
# fetchOffset.numRetries, fetchOffset.retryIntervalMs).
INSTEAD: dict[str, str] = {
    "subscribe": "'topics' (comma-separated topic names)",
    "subscribepattern": "'whitelist' (a Java regex; 'blacklist' subscribes to all topics but those)",
    "assign": (
        "'topics' for a stream (the group assigns partitions to the query's member); for a batch read, "
        "'topics' with 'partitions' (e.g. orders/0,orders/3)"
    ),
    "groupidprefix": "'group.id': the query is a member of that ZooKeeper group, its offsets are the group's",
    "kafkaconsumer.polltimeoutms": "'pollTimeoutMs'",
    "topic": "nothing: 'topic' is an option of Spark's Kafka sink, and this source has no sink",
}
_KAFKA_PREFIX = "kafka."
# Legacy consumer properties that happen to start with "kafka." (accepted, as the Scala consumer does).
_LEGACY = frozenset({"kafka.metrics.reporters", "kafka.metrics.polling.interval.secs"})
# Spark's kafka.<name> properties whose counterpart here has another name.
_KAFKA_RENAMED: dict[str, str] = {
    "kafka.bootstrap.servers": (
        "nothing (brokers are read from ZooKeeper's /brokers/ids), or 'bootstrap.servers' to override them"
    ),
    "kafka.group.id": "'group.id' (the ZooKeeper group)",
}


def refusals(names: Iterable[str]) -> list[str]:
    """One sentence per Spark option name among `names` (lower-cased) that this source cannot honour,
    in name order; empty when there is none."""
    out = []
    for name in sorted(set(names)):
        instead = _KAFKA_RENAMED.get(name) or INSTEAD.get(name)
        if instead is None and name.startswith(_KAFKA_PREFIX) and name not in _LEGACY:
            bare = name[len(_KAFKA_PREFIX) :]
            instead = (
                f"'librdkafka.{bare}' for a confluent-kafka (librdkafka) setting, or the legacy consumer "
                f"property '{bare}' without the 'kafka.' prefix"
            )
        if instead is not None:
            out.append(f"option {name!r} is a Spark Kafka source option this source cannot honour; use {instead}")
    return out


class PositionOptions(Protocol):
    """What outside_subscription reads of the parsed options (options.SourceOptions)."""

    @property
    def starting_explicit(self) -> Mapping[tuple[str, int], int]: ...
    @property
    def starting_by_time(self) -> Mapping[tuple[str, int], int]: ...
    @property
    def ending_explicit(self) -> Mapping[tuple[str, int], int]: ...
    @property
    def ending_by_time(self) -> Mapping[tuple[str, int], int]: ...

    def wants(self, topic: str) -> bool: ...


def outside_subscription(opts: PositionOptions) -> str | None:
    """What the position options name outside the subscription, as Spark refuses an offsets entry
    for a partition it is not assigned; None: nothing."""
    positions = {
        "startingOffsets": opts.starting_explicit,
        "startingOffsetsByTimestamp": opts.starting_by_time,
        "endingOffsets": opts.ending_explicit,
        "endingOffsetsByTimestamp": opts.ending_by_time,
    }
    bad = {name: sorted({t for t, _ in keys if not opts.wants(t)}) for name, keys in positions.items()}
    named = [f"option {name!r} names topic(s) {', '.join(ts)}" for name, ts in bad.items() if ts]
    if not named:
        return None
    return "; ".join(named) + ", not subscribed by 'topics'/'whitelist'/'blacklist' (Spark refuses such entries too)"
