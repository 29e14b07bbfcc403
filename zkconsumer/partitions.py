"""Topic partitions as every layer names them: the (topic, partition) key and how logs and errors print sets of them."""

from __future__ import annotations

from collections.abc import Iterable

TopicPartition = tuple[str, int]


def partitions_text(keys: Iterable[TopicPartition]) -> str:
    """ "t-0, t-1, u-3": partitions as the logs and errors name them, sorted."""
    return ", ".join(f"{t}-{p}" for t, p in sorted(keys))


def by_topic(keys: Iterable[TopicPartition]) -> dict[str, set[int]]:
    """topic -> the partition numbers among `keys`."""
    out: dict[str, set[int]] = {}
    for topic, partition in keys:
        out.setdefault(topic, set()).add(partition)
    return out
