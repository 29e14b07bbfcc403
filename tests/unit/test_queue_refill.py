"""StreamQueue.refill: a reader that finds its queue empty fetches on its own thread, or waits for another's fetch."""

from __future__ import annotations

import threading
import time

import pytest

from zkconsumer.consumer.chunks import END, Chunk, Message, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.errors import ConsumerTimeout


def make_chunk(queue: StreamQueue, start: int, count: int) -> Chunk:
    info = PartitionTopicInfo("t", 0, "thread-0", queue, start)
    return Chunk(info, [Message(topic="t", partition=0, offset=o, value=b"v") for o in range(start, start + count)])


class Refill:
    """A refill that plays back `answers`: a Chunk is offered and 0 returned, a float is returned as is."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, float]] = []

    def __call__(self, queue: StreamQueue, timeout: float) -> float:
        self.calls.append((threading.current_thread().name, timeout))
        answer = self.answers.pop(0) if self.answers else 0.05
        if isinstance(answer, Chunk):
            assert queue.offer(answer)
            return 0.0
        if isinstance(answer, BaseException):
            raise answer
        assert isinstance(answer, float)
        return answer


def test_an_empty_queue_is_refilled_on_the_taking_thread() -> None:
    q = StreamQueue(2, "s")
    c = make_chunk(q, 0, 3)
    refill = Refill(0.0, c)  # the first fetch brought nothing for this queue, the second did
    q.set_refill(refill)
    assert q.take(5.0) is c
    assert [name for name, _ in refill.calls] == [threading.current_thread().name] * 2
    assert all(0 < t <= 0.1 for _, t in refill.calls)  # a fetch never holds the Consumer longer


def test_a_queued_chunk_is_taken_without_a_fetch() -> None:
    q = StreamQueue(2, "s")
    refill = Refill()
    q.set_refill(refill)
    c = make_chunk(q, 0, 1)
    assert q.offer(c)
    assert q.take(1.0) is c
    assert refill.calls == []


def test_the_fetch_timeout_never_exceeds_what_is_left_of_the_take_timeout() -> None:
    q = StreamQueue(2, "s")
    refill = Refill(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    q.set_refill(refill)
    began = time.monotonic()
    assert q.take(0.03) is None  # refill keeps finding nothing: the take still times out
    assert time.monotonic() - began < 1.0
    assert refill.calls and all(t <= 0.03 for _, t in refill.calls)


def test_a_busy_consumer_makes_the_reader_wait_and_another_threads_offer_wakes_it() -> None:
    q = StreamQueue(2, "s")
    refill = Refill(30.0)  # "another thread is fetching": wait up to 30 s for its chunks
    q.set_refill(refill)
    c = make_chunk(q, 0, 1)
    threading.Timer(0.1, q.offer, args=(c,)).start()
    began = time.monotonic()
    assert q.take(10.0) is c
    assert time.monotonic() - began < 5.0
    assert len(refill.calls) == 1


def test_set_refill_wakes_a_reader_that_waits_without_one() -> None:
    q = StreamQueue(2, "s")
    c = make_chunk(q, 0, 1)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(q.take(10.0)), name="reader")
    t.start()
    time.sleep(0.1)
    refill = Refill(c)
    q.set_refill(refill)
    t.join(5)
    assert got == [c]
    assert [name for name, _ in refill.calls] == ["reader"]


def test_an_exception_in_a_fetch_reaches_the_reader_and_leaves_the_queue_usable() -> None:
    q = StreamQueue(2, "s")
    c = make_chunk(q, 0, 1)
    q.set_refill(Refill(KeyboardInterrupt(), c))
    with pytest.raises(KeyboardInterrupt):
        q.take(1.0)
    assert q.take(1.0) is c  # the queue's lock was given back
    assert q.offer(make_chunk(q, 1, 1))


def test_a_closed_queue_ends_without_fetching() -> None:
    q = StreamQueue(2, "s")
    refill = Refill()
    q.set_refill(refill)
    q.close()
    assert q.take(1.0) is END
    assert refill.calls == []


def test_close_during_a_wait_for_another_fetch_ends_the_iterator() -> None:
    q = StreamQueue(2, "s")
    q.set_refill(Refill(30.0, 30.0))
    it = ConsumerIterator(q, consumer_timeout_ms=5000)
    threading.Timer(0.1, q.close).start()
    began = time.monotonic()
    assert list(it) == []
    assert time.monotonic() - began < 5.0


def test_an_iterator_refills_its_queue_and_times_out_when_nothing_comes() -> None:
    q = StreamQueue(2, "s")
    q.set_refill(Refill(make_chunk(q, 0, 3), make_chunk(q, 3, 2)))
    it = ConsumerIterator(q, consumer_timeout_ms=200)
    assert [m.offset() for m in (next(it) for _ in range(5))] == [0, 1, 2, 3, 4]
    with pytest.raises(ConsumerTimeout):
        next(it)


def test_an_exception_in_on_space_puts_the_taken_chunk_back() -> None:
    """A signal handler raising inside on_space (called after the take, outside the lock) must not
    lose the chunk taken: the next take hands it out."""
    q = StreamQueue(1, "s")
    first, refused = make_chunk(q, 0, 2), make_chunk(q, 2, 2)
    assert q.offer(first) and not q.offer(refused)
    calls: list[int] = []

    def on_space() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt

    q.on_space = on_space
    with pytest.raises(KeyboardInterrupt):
        q.take(1.0)
    assert q.take(1.0) is first
    assert calls == [1]  # the hint was lost with the signal; the fetcher offers held chunks anyway
