"""Spark's timestamp options: which partitions start or end at a time, and the offsets the brokers name for it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from zkconsumer.spark.broker_trouble import Answers
from zkconsumer.spark.offsets import LATEST, DataLossError, Key

NOT_FOUND = -1  # what ListOffsets answers for a time after the partition's last message
# Looks times up: {key: timestamp ms} -> {key: offset of the first message at or after it, or
# NOT_FOUND} for the partitions the brokers answered, the others in `trouble` (LogOffsets.times)
Lookup = Callable[[Mapping[Key, int]], Answers[int]]


def times_for(keys: Iterable[Key], everywhere: int | None, per_partition: Mapping[Key, int]) -> dict[Key, int]:
    """key -> timestamp to resolve: one time for every partition (startingTimestamp, which Spark
    ranks first) else a partition's own entry; partitions with neither are not in the answer."""
    if everywhere is not None:
        return dict.fromkeys(keys, everywhere)
    return {k: per_partition[k] for k in keys if k in per_partition}


def starts_at(times: Mapping[Key, int], found: Mapping[Key, int], strategy: str) -> dict[Key, int]:
    """Start offsets for the partitions with a time. No message at or after the time: strategy
    "latest" starts at the log end (LATEST), "error" fails naming the partitions, as Spark's
    startingOffsetsByTimestampStrategy."""
    missing = sorted(k for k in times if found[k] == NOT_FOUND)
    if missing and strategy == "error":
        names = ", ".join(f"{t}-{p} (timestamp {times[(t, p)]})" for t, p in missing)
        raise DataLossError(
            f"no message at or after the starting timestamp in {names}; set "
            "startingOffsetsByTimestampStrategy=latest to start those partitions at their log end"
        )
    return {k: (LATEST if found[k] == NOT_FOUND else found[k]) for k in times}


def ends_at(times: Mapping[Key, int], found: Mapping[Key, int]) -> dict[Key, int]:
    """End offsets for the partitions with a time; none found: the log end (LATEST), as Spark."""
    return {k: (LATEST if found[k] == NOT_FOUND else found[k]) for k in times}


def explicit_starts(
    explicit: Mapping[Key, int],
    keys: Iterable[Key],
    everywhere: int | None,
    per_partition: Mapping[Key, int],
    strategy: str,
    lookup: Lookup,
) -> Answers[int]:
    """startingOffsets' explicit entries, overridden where a time applies (the lookup runs only
    then); a partition whose time the brokers did not answer has no start, and is in `trouble`."""
    times = times_for(keys, everywhere, per_partition)
    if not times:
        return Answers(dict(explicit))
    answers = lookup(times)
    answered = {k: t for k, t in times.items() if k in answers.found}
    found = {k: v for k, v in explicit.items() if k not in answers.trouble}
    return Answers({**found, **starts_at(answered, answers.found, strategy)}, dict(answers.trouble))


def explicit_ends(
    explicit: Mapping[Key, int],
    keys: Iterable[Key],
    everywhere: int | None,
    per_partition: Mapping[Key, int],
    lookup: Lookup,
) -> Answers[int]:
    """endingOffsets' explicit entries, overridden where a time applies."""
    times = times_for(keys, everywhere, per_partition)
    if not times:
        return Answers(dict(explicit))
    answers = lookup(times)
    answered = {k: t for k, t in times.items() if k in answers.found}
    found = {k: v for k, v in explicit.items() if k not in answers.trouble}
    return Answers({**found, **ends_at(answered, answers.found)}, dict(answers.trouble))
