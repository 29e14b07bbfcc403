"""Compute the group's partition assignment exactly as Scala's kafka.consumer.PartitionAssignor does, and hold it (GroupAssignment, pure)."""

from __future__ import annotations

import logging
import re
import struct
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, groupby, repeat

from zkconsumer.config.compat import DEFAULT, Compat
from zkconsumer.errors import ZkConsumerError
from zkconsumer.partitions import TopicPartition

log = logging.getLogger(__name__)

KEY_FORMATS = ("t-p", "[t,p]")

# A thread id is f"{consumer_id}-{n}" with n >= 0; the greedy prefix makes the split the last "-digits".
_THREAD_ID = re.compile(r"(.*)-[0-9]+", re.DOTALL)


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


@dataclass(frozen=True)
class AssignmentInput:
    """What every member reads from ZooKeeper before assigning (AssignmentContext).

    consumers_for_topic: topic -> thread ids of all members subscribed to it (any order).
    partitions_for_topic: topic -> partition ids (any order); missing or empty means none.
    """

    consumers_for_topic: Mapping[str, Sequence[str]]
    partitions_for_topic: Mapping[str, Sequence[int]]


class AssignmentError(ZkConsumerError, ValueError):
    """The group cannot be assigned: Scala throws IllegalArgumentException and the attempt fails.

    Retriable, as there: the rebalance's attempts retry it, and once they are used up the member
    reports ConsumerRebalanceFailed and keeps retrying with back-off (the group cannot rebalance
    until its members change); it does not leave the group.
    """

    retriable = True


def java_string_hashcode(s: str) -> int:
    """Java String.hashCode: 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    # surrogatepass: a lone surrogate is a legal Java char too
    for (unit,) in struct.iter_unpack(">H", s.encode("utf-16-be", "surrogatepass")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def _java_order(s: str) -> bytes:
    # String.compareTo compares UTF-16 code units; big-endian bytes compare the same way.
    # Plain str order differs only for non-BMP vs U+E000..U+FFFF characters.
    return s.encode("utf-16-be", "surrogatepass")


def _key_string(topic: str, partition: int, key_format: str) -> str:
    """TopicAndPartition.toString: "[t,p]" up to 0.11.x, "t-p" from 1.0.0 (KAFKA-5822)."""
    if key_format == "t-p":
        return f"{topic}-{partition}"
    if key_format == "[t,p]":
        return f"[{topic},{partition}]"
    raise ValueError(f"unknown roundrobin key format {key_format!r} (expected one of {KEY_FORMATS})")


def roundrobin_sort_key(topic: str, partition: int, key_format: str) -> tuple[int, str, int]:
    """Sort key of a pair in roundrobin: the signed hash, then (topic, partition) to break ties.

    Within a topic the tie-break equals Scala's stable sort over ascending partitions; across
    topics Scala keeps HashMap order, which we replace by topic order (see hash_ties).
    """
    return java_string_hashcode(_key_string(topic, partition, key_format)), topic, partition


def _normalise(inp: AssignmentInput) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[int, ...]]]:
    """Sorted, de-duplicated threads and partitions for every topic that has subscribers."""
    consumers: dict[str, tuple[str, ...]] = {}
    partitions: dict[str, tuple[int, ...]] = {}
    for topic in sorted(inp.consumers_for_topic):
        threads = tuple(sorted(set(inp.consumers_for_topic[topic]), key=_java_order))
        if not threads:
            continue  # ZkUtils.getConsumersPerTopic never lists a topic without threads
        consumers[topic] = threads
        partitions[topic] = tuple(sorted(set(inp.partitions_for_topic.get(topic) or ())))
    return consumers, partitions


def range_group(inp: AssignmentInput) -> GroupAssignment:
    """RangeAssignor for every topic: contiguous slices, the first len(P) % len(C) threads get one more.

    Scala only walks its own topics, but each topic is independent, so all topics is a superset.
    Each thread's slice is kept as an index range: a member of a large group takes its share (and
    its watchdog what it checks) without a walk over the whole group's partitions.
    """
    consumers, partitions = _normalise(inp)
    topics: dict[str, tuple[Sequence[int], Sequence[str]]] = {}
    runs: dict[str, list[tuple[str, int, int]]] = {}
    for topic, threads in consumers.items():
        parts = partitions[topic]
        per_thread, extra = divmod(len(parts), len(threads))
        owners: list[str] = []
        for k, thread in enumerate(threads):
            count = per_thread + (1 if k < extra else 0)
            if count == 0:
                # Scala warns here, once per idle thread per attempt; too noisy for a group-wide view.
                log.debug("no partitions of topic %s for consumer thread %s", topic, thread)
                continue
            runs.setdefault(thread, []).append((topic, len(owners), len(owners) + count))
            owners += repeat(thread, count)
        if parts:
            topics[topic] = (parts, owners)
    return GroupAssignment(topics, runs)


def range_assign(inp: AssignmentInput) -> dict[TopicPartition, str]:
    """range_group as a plain dict, topics and partitions ascending."""
    return dict(range_group(inp))


def _ordered_pairs(partitions: Mapping[str, Sequence[int]], key_format: str) -> list[TopicPartition]:
    pairs = [(topic, p) for topic, parts in partitions.items() for p in parts]
    return sorted(pairs, key=lambda tp: roundrobin_sort_key(tp[0], tp[1], key_format))


def _require_identical(consumers: Mapping[str, tuple[str, ...]]) -> None:
    """Up to 0.10.1 roundrobin requires every topic to have the same thread set."""
    head_topic, head_threads = next(iter(consumers.items()))
    head = set(head_threads)
    problems = []
    for topic, threads in consumers.items():
        mine = set(threads)
        if mine == head:
            continue
        missing = sorted(head - mine, key=_java_order)
        extra = sorted(mine - head, key=_java_order)
        problems.append(f"topic {topic!r} lacks {missing} and has extra {extra}")
    if problems:
        raise AssignmentError(
            "roundrobin (Kafka <= 0.10.1) requires all consumers to subscribe to the same topics "
            "with the same stream counts; compared with topic "
            f"{head_topic!r} (threads {list(head_threads)}): " + "; ".join(problems)
        )


def roundrobin_assign(
    inp: AssignmentInput, *, key_format: str = "t-p", require_identical: bool = False
) -> dict[TopicPartition, str]:
    """RoundRobinAssignor: pairs in hash order dealt over a circular cursor on all threads.

    The cursor skips threads not subscribed to the pair's topic (0.10.2+, KAFKA-2434); with
    require_identical (<= 0.10.1) subscriptions are checked first, so the skip never happens.
    """
    if key_format not in KEY_FORMATS:
        raise ValueError(f"unknown roundrobin key format {key_format!r} (expected one of {KEY_FORMATS})")
    consumers, partitions = _normalise(inp)
    if not consumers:
        return {}
    if require_identical:
        _require_identical(consumers)
    all_threads = sorted({t for threads in consumers.values() for t in threads}, key=_java_order)
    subscribed = {topic: frozenset(threads) for topic, threads in consumers.items()}
    decision: dict[TopicPartition, str] = {}
    cursor = 0  # index of the element CoreUtils.circularIterator yields next
    for topic, partition in _ordered_pairs(partitions, key_format):
        members = subscribed[topic]
        # iterator.dropWhile(not subscribed).next: consumes up to and including the match
        while all_threads[cursor] not in members:
            cursor = (cursor + 1) % len(all_threads)
        decision[(topic, partition)] = all_threads[cursor]
        cursor = (cursor + 1) % len(all_threads)
    return decision


def hash_ties(inp: AssignmentInput, key_format: str) -> list[tuple[TopicPartition, TopicPartition]]:
    """Roundrobin pairs of different topics with equal hashes, whose Scala order is HashMap order.

    An empty list means our order is provably Scala's; otherwise the caller should warn.
    """
    _, partitions = _normalise(inp)
    ties: list[tuple[TopicPartition, TopicPartition]] = []
    ordered = _ordered_pairs(partitions, key_format)
    for _, group in groupby(ordered, key=lambda tp: roundrobin_sort_key(tp[0], tp[1], key_format)[0]):
        ties.extend((a, b) for a, b in combinations(list(group), 2) if a[0] != b[0])
    return ties


def assign(strategy: str, inp: AssignmentInput, compat: Compat = DEFAULT) -> dict[TopicPartition, str]:
    """PartitionAssignor.createInstance: exactly "roundrobin" is roundrobin, anything else range."""
    if strategy == "roundrobin":
        return roundrobin_assign(
            inp,
            key_format=compat.roundrobin_key_format,
            require_identical=compat.roundrobin_requires_identical_subscriptions,
        )
    return range_assign(inp)


def assign_group(strategy: str, inp: AssignmentInput, compat: Compat = DEFAULT) -> GroupAssignment:
    """assign, kept per topic and per thread (range directly; roundrobin's interleaving regrouped)."""
    if strategy == "roundrobin":
        return GroupAssignment.from_pairs(assign(strategy, inp, compat))
    return range_group(inp)


def owned_by(decision: Mapping[TopicPartition, str], consumer_id: str) -> dict[TopicPartition, str]:
    """The part of a group decision whose thread belongs to consumer_id (ConsumerThreadId.consumer),
    in (topic, partition) order."""
    if isinstance(decision, GroupAssignment):  # from the threads' shares: no walk over the group
        mine: dict[TopicPartition, str] = {}
        for thread in decision.threads():
            if _consumer_of(thread) == consumer_id:
                mine.update(decision.share(thread))
        return dict(sorted(mine.items()))
    ours = {thread for thread in set(decision.values()) if _consumer_of(thread) == consumer_id}
    if not ours:
        return {}
    return {tp: thread for tp, thread in decision.items() if thread in ours}


def _consumer_of(thread_id: str) -> str | None:
    match = _THREAD_ID.fullmatch(thread_id)
    return match.group(1) if match else None
