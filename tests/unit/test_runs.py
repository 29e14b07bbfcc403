"""runs.split_runs: per-partition runs of a consume() batch, against a message-by-message reference."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.consumer.fetcher.runs import spans, split_runs


def _key(m: Message) -> tuple[str, int] | None:
    return None if m.error() is not None else (m.topic(), m.partition())


def reference(messages: list[Message]) -> list[list[Message]]:
    """The obvious loop the fetcher used to run."""
    runs: list[list[Message]] = []
    for m in messages:
        key = _key(m)
        if runs and key is not None and _key(runs[-1][0]) == key:
            runs[-1].append(m)
        else:
            runs.append([m])
    return runs


batch_items = st.lists(
    st.one_of(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(1, 40)), st.just(("error", 0, 1))),
    max_size=30,
)


def build(items: list[tuple[str, int, int]]) -> list[Message]:
    out, offsets = [], {}
    for topic, partition, count in items:
        for _ in range(count):
            if topic == "error":
                out.append(Message(topic="a", partition=0, offset=7, error=KafkaError(KafkaError._AUTO_OFFSET_RESET)))
                continue
            o = offsets.get((topic, partition), 0)
            offsets[(topic, partition)] = o + 1
            out.append(Message(topic=topic, partition=partition, offset=o, value=b"x"))
    return out


@settings(max_examples=400, deadline=None)
@given(items=batch_items)
def test_same_runs_as_the_message_by_message_loop(items: list[tuple[str, int, int]]) -> None:
    messages = build(items)
    topics = {m.topic() for m in messages if m.error() is None}
    partitions = [m.partition() for m in messages if m.error() is None]
    shared = frozenset(
        p for p in set(partitions) if len({m.topic() for m in messages if m.error() is None and m.partition() == p}) > 1
    )
    got = split_runs(messages, shared)
    assert [[id(m) for m in r] for r in got] == [[id(m) for m in r] for r in reference(messages)], (topics, shared)


def test_topics_are_compared_only_for_shared_partition_numbers() -> None:
    a = [Message(topic="a", partition=0, offset=o) for o in range(3)]
    b = [Message(topic="b", partition=0, offset=o) for o in range(2)]
    assert [len(r) for r in split_runs(a + b, frozenset({0}))] == [3, 2]
    # Partition numbers unique across the assignment: the partition alone tells runs apart.
    c = [Message(topic="c", partition=1, offset=o) for o in range(2)]
    assert [len(r) for r in split_runs(a + c + a)] == [3, 2, 3]


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.integers(0, 2), max_size=300))
def test_spans_are_maximal_runs_of_equal_keys(keys: list[int]) -> None:
    found = spans(keys)
    assert [keys[i:j] for i, j in found] and sum(j - i for i, j in found) == len(keys) or not keys
    for i, j in found:
        assert len(set(keys[i:j])) == 1
    for (_, j), (i2, _) in zip(found, found[1:]):
        assert j == i2 and keys[j - 1] != keys[i2]


def test_islands_between_probes_fall_back_to_a_walk() -> None:
    keys = [0] * 5 + [1] + [0] * 200  # probes at 1, 2, 4, 8, ... all see 0
    assert spans(keys) == [(0, 5), (5, 6), (6, 206)]


def test_interleaved_partitions_cost_linear_time() -> None:
    # A A B A A B ...: galloping from each A lands on A's to the end of the batch; each probed
    # segment is verified on its own, so the total stays linear (it was quadratic).
    keys = [0, 0, 1] * 4000
    found = spans(keys)
    assert len(found) == 8000 and found[:3] == [(0, 2), (2, 3), (3, 5)]


def test_the_fetcher_compares_topics_for_numbers_any_topic_it_ever_had() -> None:
    from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
    from zkconsumer.consumer.fetcher import Fetcher, FetchSettings

    f = Fetcher(FetchSettings("127.0.0.1:9", "g", "c"), name="t", on_error=lambda exc: None)
    q = StreamQueue(1)
    f._router.set_infos({("a", 0): PartitionTopicInfo("a", 0, "t-0", q, 0)})
    assert f._router.shared_partitions == frozenset()
    # "a" is gone, "b" has partition 0 too: a late message of a-0 must not join b-0's run.
    f._router.set_infos({("b", 0): PartitionTopicInfo("b", 0, "t-0", q, 0)})
    assert f._router.shared_partitions == frozenset({0})
    late_a = Message(topic="a", partition=0, offset=100)
    b = [Message(topic="b", partition=0, offset=o) for o in (5, 6)]
    assert [len(r) for r in split_runs([late_a, *b], f._router.shared_partitions)] == [1, 2]
