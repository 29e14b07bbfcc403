"""HeldChunks: what a full stream queue refused is handed on in order, and a partition pauses only when much waits."""

from __future__ import annotations

from zkconsumer.broker_coordination.held import HOLD_MAX, HeldChunks
from zkconsumer.consumer.chunks import END, Chunk, PartitionTopicInfo, StreamQueue


def chunk(info: PartitionTopicInfo, start: int, count: int) -> Chunk:
    return Chunk(info, list(range(start, start + count)))  # type: ignore[arg-type]  # offsets stand in for messages


def taken(queue: StreamQueue) -> list[int]:
    out: list[int] = []
    while len(queue):
        item = queue.take(0)
        assert item is not None and item is not END
        out += item.messages  # type: ignore[union-attr]
    return out


def test_refused_chunks_follow_in_order_and_pause_only_past_the_bound() -> None:
    queue = StreamQueue(2, "q")
    a = PartitionTopicInfo("t", 0, "c-0", queue, 0)
    held = HeldChunks()
    queue.on_space = lambda: held.offer_to(queue)
    assert not held.add(("t", 0), chunk(a, 0, 10))
    assert not held.add(("t", 0), chunk(a, 10, 10))
    assert not held.add(("t", 0), chunk(a, 20, 10))  # refused: held, not paused (little waits)
    assert held.add(("t", 0), chunk(a, 30, HOLD_MAX))  # now enough waits: pause, once
    assert not held.add(("t", 0), chunk(a, 30 + HOLD_MAX, 5))
    delivered = []
    while True:
        item = queue.take(0)  # each take makes room, and the callback refills it in order
        if item is None:
            resumed = held.offer_all()
            if not len(queue):
                break
            continue
        delivered += item.messages  # type: ignore[union-attr]
    assert delivered == list(range(35 + HOLD_MAX))
    assert resumed == [("t", 0)]
    assert held.offer_all() == []


def test_forgotten_partitions_drop_what_they_held_and_name_the_paused() -> None:
    queue = StreamQueue(1, "q")
    a = PartitionTopicInfo("t", 0, "c-0", queue, 0)
    b = PartitionTopicInfo("t", 1, "c-0", queue, 0)
    held = HeldChunks()
    held.add(("t", 0), chunk(a, 0, 1))
    held.add(("t", 1), chunk(b, 0, HOLD_MAX))
    held.add(("t", 0), chunk(a, 1, HOLD_MAX))
    assert held.forget([("t", 0)]) == [("t", 0)]
    assert taken(queue) == [0]
    held.offer_all()
    assert taken(queue) == list(range(HOLD_MAX))  # only b's held chunk came; a's was dropped
