"""Unit tests of zkconsumer.consumer.stream (chunks, delivery): the bounded chunk queue, its backpressure signal and the iterator."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.consumer.stream import KafkaStream
from zkconsumer.errors import ConsumerError, ConsumerTimeout


def make_info(queue: StreamQueue, partition: int = 0, offset: int = 0, topic: str = "t") -> PartitionTopicInfo:
    return PartitionTopicInfo(topic, partition, "thread-0", queue, offset)


def chunk(info: PartitionTopicInfo, start: int, count: int) -> Chunk:
    return Chunk(
        info,
        [
            Message(topic=info.topic, partition=info.partition, offset=o, value=b"v%d" % o)
            for o in range(start, start + count)
        ],
    )


class Spy:
    """An on_space callback that counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


# ---- StreamQueue ---------------------------------------------------------------------------------
def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        StreamQueue(0)


def test_offer_refuses_when_full_and_on_space_fires_once_space_exists() -> None:
    q = StreamQueue(2, "s")
    spy = Spy()
    q.on_space = spy
    info = make_info(q)
    assert q.offer(chunk(info, 0, 1)) and q.offer(chunk(info, 1, 1))
    assert not q.offer(chunk(info, 2, 1))
    assert len(q) == 2 and spy.calls == 0
    first = q.take(0)
    assert isinstance(first, Chunk) and first.messages[0].offset() == 0
    assert spy.calls == 1  # a producer was refused: tell it there is room
    q.take(0)
    assert spy.calls == 1  # no refusal since the last signal: stay quiet
    assert q.take(0) is None


def test_on_space_is_called_outside_the_queue_lock() -> None:
    q = StreamQueue(1)
    info = make_info(q)
    reoffered = []
    q.on_space = lambda: reoffered.append(q.offer(chunk(info, 9, 1)))  # would deadlock under the lock
    q.offer(chunk(info, 0, 1))
    assert not q.offer(chunk(info, 1, 1))
    q.take(0)
    assert reoffered == [True] and len(q) == 1


def test_clear_drops_chunks_and_signals_a_refused_producer() -> None:
    q = StreamQueue(1)
    spy = Spy()
    q.on_space = spy
    info = make_info(q)
    q.offer(chunk(info, 0, 3))
    assert q.clear() == 1 and len(q) == 0 and spy.calls == 0
    q.offer(chunk(info, 3, 1))
    assert not q.offer(chunk(info, 4, 1))
    assert q.clear() == 1 and spy.calls == 1


def test_close_drops_queued_chunks_finishes_the_current_one_and_ends_for_good() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    q.offer(chunk(info, 0, 3))
    q.offer(chunk(info, 3, 1))
    it = ConsumerIterator(q)
    assert next(it).offset() == 0
    q.close()
    assert q.offer(chunk(info, 4, 1))  # accepted and dropped: the fetcher must not hold it
    assert len(q) == 0 and q.clear() == 0  # the end marker survives clear()
    assert [m.offset() for m in it] == [1, 2]  # the chunk in hand finishes; queued chunk 3 is gone
    assert info.consumed_offset == 3
    with pytest.raises(StopIteration):
        next(it)
    assert list(ConsumerIterator(q)) == []  # every later reader sees the end too


def test_close_wakes_a_blocked_iterator() -> None:
    q = StreamQueue(1)
    it = ConsumerIterator(q)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(list(it)))
    t.start()
    time.sleep(0.05)
    q.close()
    t.join(5)
    assert result == [[]]


def test_fail_raises_consumer_error_with_the_cause_even_with_queued_chunks() -> None:
    q = StreamQueue(2, "s7")
    info = make_info(q)
    q.offer(chunk(info, 0, 1))
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    cause = RuntimeError("zookeeper gone")
    q.fail(cause)
    q.fail(ValueError("second"))  # the first error wins
    for _ in range(2):
        with pytest.raises(ConsumerError, match="s7.*zookeeper gone") as info_:
            next(it)
        assert info_.value.__cause__ is cause


def test_fail_wakes_a_blocked_iterator() -> None:
    q = StreamQueue(1)
    it = ConsumerIterator(q)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            next(it)
        except ConsumerError as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.05)
    q.fail(OSError("boom"))
    t.join(5)
    assert len(errors) == 1 and isinstance(errors[0].__cause__, OSError)


def test_close_before_fail_ends_instead_of_raising() -> None:
    q = StreamQueue(1)
    q.close()
    q.fail(RuntimeError("late"))
    assert list(ConsumerIterator(q)) == []


# ---- ConsumerIterator ----------------------------------------------------------------------------
def test_consumer_timeout_then_iteration_continues() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    it = ConsumerIterator(q, consumer_timeout_ms=20)
    began = time.monotonic()
    with pytest.raises(ConsumerTimeout):
        next(it)
    assert time.monotonic() - began >= 0.015
    q.offer(chunk(info, 0, 2))
    assert [next(it).offset(), next(it).offset()] == [0, 1]
    with pytest.raises(ConsumerTimeout):
        next(it)
    q.offer(chunk(info, 2, 1))
    assert next(it).offset() == 2


def test_a_message_counts_as_consumed_when_the_next_one_is_requested() -> None:
    q = StreamQueue(3)
    info = make_info(q, offset=10)
    q.offer(chunk(info, 10, 2))
    q.offer(chunk(info, 12, 1))
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    assert next(it).offset() == 10
    assert info.consumed_offset == 10  # still being processed: a crash now re-delivers 10
    assert next(it).offset() == 11
    assert info.consumed_offset == 11
    assert next(it).offset() == 12  # crossing a chunk boundary marks the previous chunk's last
    assert info.consumed_offset == 12
    it.mark_consumed()
    assert info.consumed_offset == 13
    it.mark_consumed()  # idempotent
    assert info.consumed_offset == 13
    with pytest.raises(ConsumerTimeout):
        next(it)
    assert info.consumed_offset == 13


def test_consumed_offset_never_moves_backwards() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    q.offer(chunk(info, 0, 1))
    it = ConsumerIterator(q)
    next(it)
    info.consumed_offset = 50  # e.g. an out-of-range reset moved it forward meanwhile
    it.mark_consumed()
    assert info.consumed_offset == 50


def test_consumed_offsets_are_tracked_per_partition() -> None:
    q = StreamQueue(2)
    a, b = make_info(q, 0), make_info(q, 1, offset=100)
    q.offer(chunk(a, 0, 1))
    q.offer(chunk(b, 100, 1))
    it = ConsumerIterator(q)
    assert (next(it).partition(), next(it).partition()) == (0, 1)
    assert (a.consumed_offset, b.consumed_offset) == (1, 100)
    it.mark_consumed()
    assert (a.consumed_offset, b.consumed_offset) == (1, 101)


def test_next_batch_hands_out_the_rest_of_the_chunk() -> None:
    q = StreamQueue(3)
    a, b = make_info(q, 0), make_info(q, 1)
    q.offer(chunk(a, 0, 4))
    q.offer(chunk(b, 0, 2))
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    assert next(it).offset() == 0
    batch = it.next_batch()
    assert [m.offset() for m in batch] == [1, 2, 3] and a.consumed_offset == 1
    batch = it.next_batch()
    assert [(m.partition(), m.offset()) for m in batch] == [(1, 0), (1, 1)]
    assert a.consumed_offset == 4 and b.consumed_offset == 0
    with pytest.raises(ConsumerTimeout):
        it.next_batch()
    assert b.consumed_offset == 2
    q.close()
    with pytest.raises(StopIteration):
        it.next_batch()


def test_stream_batches_yield_until_shutdown() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    stream = KafkaStream("s", q)
    q.offer(chunk(info, 0, 3))
    q.offer(chunk(info, 3, 2))
    assert "queued_chunks=2" in repr(stream)
    batches = stream.batches()
    assert [[m.offset() for m in next(batches)] for _ in range(2)] == [[0, 1, 2], [3, 4]]
    q.close()
    assert list(batches) == [] and info.consumed_offset == 5


def test_stream_batches_continue_after_a_consumer_timeout() -> None:
    q = StreamQueue(2)
    info = make_info(q)
    batches = KafkaStream("s", q, consumer_timeout_ms=10).batches()
    with pytest.raises(ConsumerTimeout):
        next(batches)
    q.offer(chunk(info, 0, 1))
    assert [m.offset() for m in next(batches)] == [0]


def test_inactive_chunks_are_skipped_unseen() -> None:
    q = StreamQueue(3)
    released, kept = make_info(q, 0), make_info(q, 1)
    q.offer(chunk(released, 0, 2))
    q.offer(chunk(kept, 0, 1))
    released.active = False  # a rebalance released it after its chunk was queued
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    assert [(m.partition(), m.offset()) for m in [next(it)]] == [(1, 0)]
    assert released.consumed_offset == 0


def test_a_partition_released_mid_chunk_stops_at_once() -> None:
    q = StreamQueue(3)
    a, b = make_info(q, 0), make_info(q, 1)
    q.offer(chunk(a, 0, 3))
    q.offer(chunk(b, 0, 1))
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    assert next(it).offset() == 0
    a.active = False
    assert next(it).partition() == 1  # 1 and 2 of partition 0 never show up
    assert a.consumed_offset == 1  # the message handed out before the release still counts


def test_empty_chunks_are_skipped() -> None:
    q = StreamQueue(3)
    info = make_info(q)
    q.offer(Chunk(info, []))
    q.offer(chunk(info, 0, 1))
    assert next(ConsumerIterator(q, consumer_timeout_ms=10)).offset() == 0


def test_messages_below_the_consumed_offset_are_skipped() -> None:
    q = StreamQueue(3)
    info = make_info(q, offset=0)
    q.offer(chunk(info, 0, 3))  # entirely below: skipped
    q.offer(chunk(info, 3, 5))  # 3..7: starts at 5
    info.consumed_offset = 5  # e.g. a re-fetch after the app already finished 0..4
    it = ConsumerIterator(q, consumer_timeout_ms=10)
    assert [next(it).offset() for _ in range(3)] == [5, 6, 7]
    with pytest.raises(ConsumerTimeout):
        next(it)


def _body_lines(code) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted({line for _, _, line in code.co_lines() if line is not None and line > code.co_firstlineno})


def _interleave(code, line: int, paused, meanwhile) -> bool:  # type: ignore[no-untyped-def]
    """Run `paused` on another thread, stop it before `line` of `code`, run `meanwhile`, resume.

    Returns whether the line was reached."""
    reached, proceed = threading.Event(), threading.Event()

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        if frame.f_code is not code:
            return None

        def local(frame, event, arg):  # type: ignore[no-untyped-def]
            if event == "line" and frame.f_lineno == line and not reached.is_set():
                reached.set()
                proceed.wait(5)
            return local

        return local

    def run() -> None:
        sys.settrace(tracer)
        try:
            paused()
        finally:
            sys.settrace(None)

    t = threading.Thread(target=run)
    t.start()
    hit = reached.wait(0.5)
    if hit:
        meanwhile()
    proceed.set()
    t.join(5)
    if not hit:
        meanwhile()
    return hit


@pytest.mark.parametrize("paused", ["_chunks", "_finish_live", "mark_consumed"])
def test_mark_consumed_from_another_thread_never_mixes_partitions(paused: str) -> None:
    """commit_offsets() marks every stream's iterator from the caller's thread: at whatever line
    the two threads interleave, partition 1 never gets partition 0's offset (that skips messages)."""
    who_pauses = "committer" if paused == "mark_consumed" else "iterator"
    code = getattr(ConsumerIterator, paused).__code__
    hits = 0
    for line in _body_lines(code):
        q = StreamQueue(2)
        a, b = make_info(q, 0, offset=500), make_info(q, 1, offset=7)
        q.offer(chunk(a, 500, 1))
        q.offer(chunk(b, 7, 1))
        it = ConsumerIterator(q)
        next(it)  # partition 0, offset 500 is being processed
        iterate = lambda: next(it)  # noqa: E731 - moves on to partition 1, offset 7
        commit = it.mark_consumed
        hits += _interleave(code, line, *((iterate, commit) if who_pauses == "iterator" else (commit, iterate)))
        assert a.consumed_offset == 501, f"line {line}"
        assert b.consumed_offset in (7, 8), f"line {line}"
    assert hits >= 2


# ---- concurrency -----------------------------------------------------------------------------------
def _produce_with_backpressure(
    q: StreamQueue, infos: list[PartitionTopicInfo], sizes: list[int], done: threading.Event
) -> None:
    """A fetcher in miniature: offer; when refused, wait for on_space and offer the same chunk again."""
    space = threading.Event()
    q.on_space = space.set
    next_offset = {i.partition: i.fetched_offset for i in infos}
    for n, size in enumerate(sizes):
        info = infos[n % len(infos)]
        c = chunk(info, next_offset[info.partition], size)
        next_offset[info.partition] += size
        while True:
            space.clear()
            if q.offer(c):
                break
            assert space.wait(10), "on_space never fired"
    done.set()


@settings(max_examples=25, deadline=None)
@given(
    capacity=st.integers(1, 3),
    partitions=st.integers(1, 4),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=60),
    use_batches=st.booleans(),
)
def test_threaded_drain_gets_everything_in_order(
    capacity: int, partitions: int, sizes: list[int], use_batches: bool
) -> None:
    q = StreamQueue(capacity)
    infos = [make_info(q, p, offset=p * 1000) for p in range(partitions)]
    done = threading.Event()
    producer = threading.Thread(target=_produce_with_backpressure, args=(q, infos, sizes, done))
    producer.start()
    stream = KafkaStream("s", q, consumer_timeout_ms=10000)
    got: list[tuple[int, int]] = []
    source = stream.batches() if use_batches else ([m] for m in stream)
    while len(got) < sum(sizes):  # close() would drop queued chunks: stop by count instead
        got += [(m.partition(), m.offset()) for m in next(source)]
    stream.iterator.mark_consumed()
    producer.join(10)
    assert done.is_set() and len(got) == sum(sizes)
    for info in infos:
        offsets = [o for p, o in got if p == info.partition]
        assert offsets == list(range(info.partition * 1000, info.partition * 1000 + len(offsets)))
        assert info.consumed_offset == info.partition * 1000 + len(offsets)


def test_stress_several_streams_with_one_slow_consumer() -> None:
    """One producer feeds three queues; a slow queue never blocks the fast ones (held chunks retry)."""
    queues = [StreamQueue(1, f"s{i}") for i in range(3)]
    infos = [make_info(q, i) for i, q in enumerate(queues)]
    per_queue = 300
    held: dict[int, list[Chunk]] = {i: [] for i in range(3)}
    wake = threading.Event()
    for q in queues:
        q.on_space = wake.set

    def fetcher() -> None:
        produced = [0, 0, 0]
        while any(n < per_queue for n in produced) or any(held.values()):
            wake.clear()
            for i, q in enumerate(queues):  # retry held chunks first, in order
                while held[i] and q.offer(held[i][0]):
                    held[i].pop(0)
                if not held[i] and produced[i] < per_queue:
                    c = chunk(infos[i], produced[i], 10)
                    produced[i] += 10
                    if not q.offer(c):
                        held[i].append(c)
            if all(held.values()) or all(n >= per_queue for n in produced):
                wake.wait(0.05)
        for q in queues:
            q.close()

    results: dict[int, list[int]] = {}

    def drain(i: int, delay: float) -> None:
        out = []
        for m in ConsumerIterator(queues[i]):
            out.append(m.offset())
            if delay and m.offset() % 10 == 0:
                time.sleep(delay)
        results[i] = out

    threads = [threading.Thread(target=fetcher)] + [
        threading.Thread(target=drain, args=(i, 0.002 if i == 0 else 0.0)) for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {i: list(range(per_queue)) for i in range(3)}
