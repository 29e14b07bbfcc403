"""A reader's fetch (Fetcher.fetch_for) cut short anywhere loses nothing, repeats nothing and leaves no lock behind.

The reader is usually the main thread, where signal handlers run: a KeyboardInterrupt, or any
exception a handler raises, can land between any two steps of a fetch. These tests put the
Fetcher's routing on a stand-in Consumer (one partition, offsets 0..99) and interrupt it there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from zkconsumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.delivery import ConsumerIterator
from zkconsumer.errors import ConsumerTimeout
from zkconsumer.fetcher import Fetcher, FetchSettings

KEY = ("t", 0)
LAST = 100


class StandInConsumer:
    """One partition with offsets 0..LAST-1; consume() serves `per` messages from the position unless paused."""

    def __init__(self, per: int = 5) -> None:
        self.per = per
        self.position: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()
        self.closed = False

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        if KEY not in self.position or KEY in self.paused:
            return []
        start = self.position[KEY]
        out = [Message(topic="t", partition=0, offset=o, value=b"v") for o in range(start, min(LAST, start + self.per))]
        self.position[KEY] = start + len(out)
        return out

    def pause(self, tps: list[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in tps)

    def resume(self, tps: list[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in tps)

    def assign(self, tps: list[TopicPartition]) -> None:  # a pause outlives it, as in librdkafka
        self.position = {(tp.topic, tp.partition): tp.offset for tp in tps}

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        self.position.update({(tp.topic, tp.partition): tp.offset for tp in tps})

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.position.pop((tp.topic, tp.partition), None)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fetcher() -> Iterator[tuple[Fetcher, StreamQueue, list[BaseException]]]:
    """A Fetcher on the stand-in, one partition assigned, queue of one chunk; no fetcher thread."""
    errors: list[BaseException] = []
    f = Fetcher(FetchSettings("127.0.0.1:9", "g", "c"), name="t", on_error=errors.append, batch_size=10_000)
    f._raw = StandInConsumer()  # type: ignore[assignment]
    q = StreamQueue(1, "s")
    info = PartitionTopicInfo("t", 0, "t-0", q, 0)
    f._raw.assign([TopicPartition("t", 0, 0)])
    f._set_infos({KEY: info})
    f._attach_queues([info])
    yield f, q, errors


def drain(it: ConsumerIterator, want: int = LAST) -> list[int]:
    """Offsets handed out, going on after a KeyboardInterrupt as an application that catches it does."""
    got: list[int] = []
    for _ in range(1000):
        try:
            got.append(next(it).offset())
        except KeyboardInterrupt:
            continue
        except ConsumerTimeout:
            break
        if len(got) == want:
            break
    return got


def test_an_interrupt_while_a_held_chunk_is_offered_again_loses_nothing(fetcher, monkeypatch) -> None:
    f, q, errors = fetcher
    assert f.fetch_for(q, 0.1) == 0.0  # 0..4 queued
    assert f.fetch_for(q, 0.1) == 0.0  # 5..9 refused: held
    assert [m.offset() for m in f._held[KEY]] == [5, 6, 7, 8, 9]
    offer, interrupted = q.offer, []

    def interrupted_offer(chunk):  # type: ignore[no-untyped-def]
        if not interrupted and chunk.messages[0].offset() == 5:
            interrupted.append(1)
            raise KeyboardInterrupt
        return offer(chunk)

    monkeypatch.setattr(q, "offer", interrupted_offer)
    assert drain(ConsumerIterator(q, 300)) == list(range(LAST))
    assert interrupted and not errors


def test_an_interrupt_after_a_held_chunk_was_queued_leaves_nothing_paused(fetcher, monkeypatch) -> None:
    f, q, errors = fetcher
    f._batch_size = 5  # a held run of 5 pauses the partition
    assert f.fetch_for(q, 0.1) == 0.0  # 0..4 queued
    assert f.fetch_for(q, 0.1) == 0.0  # 5..9 held, paused
    assert KEY in f._paused
    notify, interrupted = q._cond.notify, []

    def interrupted_notify(n: int = 1) -> None:  # the held chunk is queued: neither dropped nor resumed yet
        notify(n)
        if not interrupted and KEY in f._held and KEY in f._paused:
            interrupted.append(1)
            raise KeyboardInterrupt

    monkeypatch.setattr(q._cond, "notify", interrupted_notify)
    assert drain(ConsumerIterator(q, 300)) == list(range(LAST))
    assert interrupted and not errors


@pytest.mark.parametrize("step", ["route", "pause"])
def test_an_interrupt_inside_routing_loses_and_repeats_nothing(fetcher, monkeypatch, step) -> None:
    f, q, errors = fetcher
    f._batch_size = 5
    interrupted: list[int] = []
    if step == "route":
        route = f._route

        def interrupted_route(messages):  # type: ignore[no-untyped-def]
            if not interrupted and messages[0].offset() == 10:
                interrupted.append(1)
                route(messages[:2])  # part of the batch queued or held, then Ctrl-C
                raise KeyboardInterrupt
            route(messages)

        monkeypatch.setattr(f, "_route", interrupted_route)
    else:
        pause = f._raw.pause

        def interrupted_pause(tps):  # type: ignore[no-untyped-def]
            pause(tps)
            if not interrupted:  # librdkafka paused it, _paused does not know yet
                interrupted.append(1)
                raise KeyboardInterrupt

        monkeypatch.setattr(f._raw, "pause", interrupted_pause)
    if step == "pause":  # only a full queue pauses: fill it, then refuse a run
        assert f.fetch_for(q, 0.1) == 0.0
        with pytest.raises(KeyboardInterrupt):
            f.fetch_for(q, 0.1)
    assert drain(ConsumerIterator(q, 300)) == list(range(LAST))
    assert interrupted and not errors


def test_an_exception_from_a_signal_handler_reaches_the_reader_and_fetching_goes_on(fetcher, monkeypatch) -> None:
    """A per-message timeout idiom (an alarm handler raising) firing while the reader fetches is
    the application's exception, not the fetcher's failure: the member stays in the group."""
    f, q, errors = fetcher

    class ProcessingTimeout(Exception):
        pass

    consume, fired = f._raw.consume, []

    def alarmed_consume(n: int, timeout: float) -> list[Message]:
        batch = consume(n, timeout)
        if not fired and batch and batch[0].offset() == 20:
            fired.append(1)
            raise ProcessingTimeout("message took too long")
        return batch

    monkeypatch.setattr(f._raw, "consume", alarmed_consume)
    it = ConsumerIterator(q, 300)
    got = []
    with pytest.raises(ProcessingTimeout):
        got.extend(m.offset() for m in it)
    got.extend(drain(it, LAST - len(got)))
    assert got == list(range(LAST))
    assert errors == [] and f._failure is None


def test_a_fatal_kafka_error_in_a_reader_fetch_ends_fetching_once(fetcher, monkeypatch) -> None:
    f, q, errors = fetcher
    fatal = KafkaException(KafkaError(KafkaError._FATAL, "injected fatal", fatal=True))

    def failing(n: int, timeout: float) -> list[Message]:
        raise fatal

    monkeypatch.setattr(f._raw, "consume", failing)
    assert f.fetch_for(q, 0.1) > 0  # wait: nothing comes from here any more
    assert errors == [fatal] and f._failure is fatal
    assert f.fetch_for(q, 0.1) > 0
    assert errors == [fatal]


def test_a_lock_left_behind_by_an_interrupted_reader_is_taken_over(fetcher, monkeypatch) -> None:
    """A signal raised just after a reader acquired the turn lock, before its try: the lock stays
    held by nobody. The fetcher thread takes it over after about a second and rebuilds."""
    f, q, errors = fetcher
    assert f.fetch_for(q, 0.1) == 0.0  # 0..4 queued
    real = f._turn

    class InterruptedAfterAcquire:
        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            got = real.acquire(blocking, timeout)
            if not blocking:
                monkeypatch.setattr(f, "_turn", real)  # once
                raise KeyboardInterrupt
            return got

    monkeypatch.setattr(f, "_turn", InterruptedAfterAcquire())
    with pytest.raises(KeyboardInterrupt):
        f.fetch_for(q, 0.1)
    assert real.locked() and f._turn_owner is None
    f._thread = threading.Thread(target=f._run, name="t-fetcher", daemon=True)
    began = time.monotonic()
    f._thread.start()
    try:
        assert drain(ConsumerIterator(q, 3000)) == list(range(LAST))
        assert time.monotonic() - began < 10
    finally:
        f.close(5)
    assert f._raw.closed and not errors


def test_close_takes_over_a_lock_left_behind(fetcher) -> None:
    f, q, errors = fetcher
    f._thread = threading.Thread(target=lambda: None)  # a fetcher thread that already ended
    f._thread.start()
    f._thread.join()
    f._turn.acquire()  # left behind: held by nobody
    f._stopping = True
    f._close_consumer(0.2)
    assert f._raw.closed and not f._turn.locked()
