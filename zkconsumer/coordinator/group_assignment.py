"""A group's assignment kept per topic and per thread (pure): a member's share, a lookup, or one topic's map without a walk over every partition of the group."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat

from zkconsumer.partitions import TopicPartition


class GroupAssignment(Mapping[TopicPartition, str]):
    """(topic, partition) -> thread id, held as each topic's partitions in ascending order with
    their threads alongside, and each thread's runs of consecutive partitions.

    Every member of a large group computes the whole group's assignment on every rebalance
    attempt; range gives each thread one run per topic, so taking a share costs the share, not the
    group. Example::

        group = GroupAssignment({"t": ((0, 1, 2), ["a-0", "a-0", "b-0"])}, {"a-0": [("t", 0, 2)], "b-0": [("t", 2, 3)]})
        group.share("a-0") == {("t", 0): "a-0", ("t", 1): "a-0"}
        group[("t", 2)] == "b-0"
    """

    __slots__ = ("_topics", "_runs")

    def __init__(
        self,
        topics: Mapping[str, tuple[Sequence[int], Sequence[str]]],
        runs: Mapping[str, list[tuple[str, int, int]]],
    ) -> None:
        self._topics = dict(topics)  # topic -> (partitions ascending, the thread of each)
        self._runs = dict(runs)  # thread -> [(topic, start, stop)]: its partitions as index ranges

    @classmethod
    def from_pairs(cls, pairs: Mapping[TopicPartition, str]) -> GroupAssignment:
        """From any (topic, partition) -> thread mapping (roundrobin's interleaved result)."""
        per_topic: dict[str, list[tuple[int, str]]] = {}
        for (topic, partition), thread in pairs.items():
            per_topic.setdefault(topic, []).append((partition, thread))
        topics: dict[str, tuple[Sequence[int], Sequence[str]]] = {}
        runs: dict[str, list[tuple[str, int, int]]] = {}
        for topic in sorted(per_topic):
            entries = sorted(per_topic[topic])
            owners = [thread for _, thread in entries]
            topics[topic] = (tuple(p for p, _ in entries), owners)
            start = 0
            for i in range(1, len(owners) + 1):
                if i == len(owners) or owners[i] != owners[start]:
                    runs.setdefault(owners[start], []).append((topic, start, i))
                    start = i
        return cls(topics, runs)

    def __getitem__(self, key: TopicPartition) -> str:
        topic, partition = key
        try:
            parts, owners = self._topics[topic]
        except KeyError:
            raise KeyError(key) from None
        i = bisect_left(parts, partition)
        if i == len(parts) or parts[i] != partition:
            raise KeyError(key)
        return owners[i]

    def __iter__(self) -> Iterator[TopicPartition]:
        for topic, (parts, _) in self._topics.items():
            yield from zip(repeat(topic), parts)

    def __len__(self) -> int:
        return sum(len(parts) for parts, _ in self._topics.values())

    def threads(self) -> Iterable[str]:
        """Every thread that was given at least one partition."""
        return self._runs.keys()

    def share(self, thread: str) -> dict[TopicPartition, str]:
        """The thread's partitions, (topic, partition) -> thread."""
        out: dict[TopicPartition, str] = {}
        for topic, start, stop in self._runs.get(thread, ()):
            out.update(zip(zip(repeat(topic), self._topics[topic][0][start:stop]), repeat(thread)))
        return out

    def by_topic(self) -> dict[str, dict[int, str]]:
        """topic -> partition -> thread, topics and partitions ascending."""
        return {topic: dict(zip(parts, owners)) for topic, (parts, owners) in sorted(self._topics.items())}
