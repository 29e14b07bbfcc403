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

from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.consumer.fetcher import Fetcher, FetchSettings
from zkconsumer.consumer.fetcher.turns import Turn
from zkconsumer.errors import ConsumerTimeout
from zkconsumer.zookeeper.deadline import Deadline

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
        out = [
            Message(topic="t", partition=0, offset=o, value=b"v")
            for o in range(start, min(LAST, start + min(self.per, num_messages)))
        ]
        self.position[KEY] = start + len(out)
        return out

    def poll(self, timeout: float) -> Message | None:
        batch = self.consume(1, timeout)
        return batch[0] if batch else None

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
    f._kafka.raw = StandInConsumer()  # type: ignore[assignment]
    q = StreamQueue(1, "s")
    info = PartitionTopicInfo("t", 0, "t-0", q, 0)
    f._kafka.raw.assign([TopicPartition("t", 0, 0)])
    f._router.set_infos({KEY: info})
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
    assert [m.offset() for m in f._router.held[KEY]] == [5, 6, 7, 8, 9]
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
    f._router.hold_messages = 5  # a held run of 5 pauses the partition
    assert f.fetch_for(q, 0.1) == 0.0  # 0..4 queued
    assert f.fetch_for(q, 0.1) == 0.0  # 5..9 held, paused
    assert KEY in f._router.paused
    notify, interrupted = q._cond.notify, []

    def interrupted_notify(n: int = 1) -> None:  # the held chunk is queued: neither dropped nor resumed yet
        notify(n)
        if not interrupted and KEY in f._router.held and KEY in f._router.paused:
            interrupted.append(1)
            raise KeyboardInterrupt

    monkeypatch.setattr(q._cond, "notify", interrupted_notify)
    assert drain(ConsumerIterator(q, 300)) == list(range(LAST))
    assert interrupted and not errors


@pytest.mark.parametrize("step", ["route", "pause"])
def test_an_interrupt_inside_routing_loses_and_repeats_nothing(fetcher, monkeypatch, step) -> None:
    f, q, errors = fetcher
    f._router.hold_messages = 5
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
        pause = f._kafka.raw.pause

        def interrupted_pause(tps):  # type: ignore[no-untyped-def]
            pause(tps)
            if not interrupted:  # librdkafka paused it, _paused does not know yet
                interrupted.append(1)
                raise KeyboardInterrupt

        monkeypatch.setattr(f._kafka.raw, "pause", interrupted_pause)
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

    consume, fired = f._kafka.raw.consume, []

    def alarmed_consume(n: int, timeout: float) -> list[Message]:
        batch = consume(n, timeout)
        if not fired and batch and batch[0].offset() == 20:
            fired.append(1)
            raise ProcessingTimeout("message took too long")
        return batch

    monkeypatch.setattr(f._kafka.raw, "consume", alarmed_consume)
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

    monkeypatch.setattr(f._kafka.raw, "consume", failing)
    assert f.fetch_for(q, 0.1) > 0  # wait: nothing comes from here any more
    assert errors == [fatal] and f._failure is fatal
    assert f.fetch_for(q, 0.1) > 0
    assert errors == [fatal]


class AfterAcquire:
    """Stands in for Turn's lock: once, right after a reader's non-blocking acquire, runs `then`
    (what a signal handler does there: raise, or make a Consumer call and return)."""

    def __init__(self, f: Fetcher, then) -> None:  # type: ignore[no-untyped-def]
        self.real, self.fetcher, self.then, self.done = f._turns.turn.lock, f, then, False

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self.real.acquire(blocking, timeout)
        if got and not blocking and not self.done:
            self.done = True
            self.then()
        return got

    def release(self) -> None:
        self.real.release()

    def locked(self) -> bool:
        return self.real.locked()


def start_thread(f: Fetcher) -> None:
    f._thread = threading.Thread(target=f._run, name="t-fetcher", daemon=True)
    f._thread.start()


def test_a_lock_left_behind_by_an_interrupted_reader_is_taken_over(fetcher) -> None:
    """A signal raised just after a reader acquired the turn, before it named itself: the lock is
    held by nobody. The fetcher thread takes it over after about a second and rebuilds."""
    f, q, errors = fetcher
    assert f.fetch_for(q, 0.1) == 0.0  # 0..4 queued

    def interrupt() -> None:
        raise KeyboardInterrupt

    f._turns.turn.lock = AfterAcquire(f, interrupt)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        f.fetch_for(q, 0.1)
    assert f._turns.turn.lock.locked() and f._turns.turn.holder is None
    began = time.monotonic()
    start_thread(f)
    try:
        assert drain(ConsumerIterator(q, 3000)) == list(range(LAST))
        assert 0.9 < time.monotonic() - began < 10  # ten polls of 0.1 s that found nobody
    finally:
        f.close(5)
    assert f._kafka.raw.closed and not errors


def test_a_signal_handler_that_waits_on_the_fetcher_thread_gets_its_call_run(fetcher) -> None:
    """The signal lands right after the reader's acquire, and its handler makes a Consumer call (a
    commit, shutdown's stop_fetching) and returns: the fetcher thread takes the turn over to run
    it, and the reader, finding it taken over, neither fetches nor releases it."""
    f, q, errors = fetcher
    ran: list[object] = []
    f._turns.turn.lock = AfterAcquire(f, lambda: ran.append(f._call(lambda: "committed")))  # type: ignore[assignment]
    f._turns.reader_asked = float("inf")  # the fetcher thread leaves every fetch to the reader
    start_thread(f)
    try:
        assert drain(ConsumerIterator(q, 3000)) == list(range(LAST))  # the first fetch ran the handler
        assert ran == ["committed"]
    finally:
        f.close(5)
    assert not errors and f._failure is None


def test_a_closer_leaves_the_lock_of_a_reader_that_closes(fetcher) -> None:
    """A reader whose fetch saw close() closes the Consumer itself; close(), short of deadline,
    must not take that reader's lock for one left behind."""
    f, q, errors = fetcher
    close = f._kafka.raw.close

    def slow_close() -> None:
        time.sleep(0.3)
        close()

    f._kafka.raw.close = slow_close  # type: ignore[method-assign]
    f._thread = threading.Thread(target=lambda: None)
    f._thread.start()
    f._thread.join()
    f._stopping = True
    f.deadline = Deadline(0.05)
    raised: list[BaseException] = []

    def reader_closes() -> None:
        try:
            f._kafka.close(f.deadline, 0.0)  # fetch_for's finally, once _stopping is set
        except BaseException as exc:  # noqa: BLE001
            raised.append(exc)

    t = threading.Thread(target=reader_closes, name="reader")
    t.start()
    time.sleep(0.05)
    f._kafka.close(f.deadline)
    t.join(5)
    assert not raised and f._kafka.raw.closed and not f._turns.turn.lock.locked()


def test_a_signal_in_on_space_loses_neither_the_chunk_nor_the_held_ones(fetcher) -> None:
    """on_space is a hint given before the take; one that a signal cut short costs a second: the
    fetcher thread offers held chunks now and then anyway."""
    f, q, errors = fetcher
    assert f.fetch_for(q, 0.1) == 0.0  # 0..4 queued
    assert f.fetch_for(q, 0.1) == 0.0  # 5..9 refused: held, the queue marked refused
    on_space, interrupted = q.on_space, []

    def interrupted_on_space() -> None:
        if not interrupted:
            interrupted.append(1)
            raise KeyboardInterrupt  # before the hint was given
        on_space()

    q.on_space = interrupted_on_space
    start_thread(f)
    try:
        assert drain(ConsumerIterator(q, 3000)) == list(range(LAST))
    finally:
        f.close(5)
    assert interrupted and not errors


def test_a_signal_after_a_run_was_queued_repeats_nothing(fetcher, monkeypatch) -> None:
    """Between a run's offer and the move of fetched_offset: the run is fetched again and queued
    twice, and the iterator skips the copy."""
    f, q, errors = fetcher
    offer, fired = q.offer, []

    def offer_then_signal(chunk):  # type: ignore[no-untyped-def]
        ok = offer(chunk)
        if ok and not fired and chunk.messages[0].offset() == 10:
            fired.append(1)
            raise KeyboardInterrupt
        return ok

    monkeypatch.setattr(q, "offer", offer_then_signal)
    assert drain(ConsumerIterator(q, 300)) == list(range(LAST))
    assert fired and not errors


def test_close_takes_over_a_lock_left_behind(fetcher) -> None:
    f, q, errors = fetcher
    f._thread = threading.Thread(target=lambda: None)  # a fetcher thread that already ended
    f._thread.start()
    f._thread.join()
    f._turns.turn.lock.acquire()  # left behind: held by nobody
    f._stopping = True
    f._kafka.close(f.deadline, 0.2)
    assert f._kafka.raw.closed and not f._turns.turn.lock.locked()


# ---- Turn itself ----------------------------------------------------------------------------------------
def test_a_thread_held_up_after_acquiring_while_its_turn_was_taken_over_does_not_use_it() -> None:
    """The main thread acquires (a command run inline, a close), then a signal handler keeps it
    for more than a second; meanwhile the fetcher thread takes the turn over. The held-up thread
    must not name itself on the replaced lock, nor release anything."""
    turn = Turn()
    main, fetcher_thread = 1, 2
    real = turn.lock

    class HeldUp:
        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            got = real.acquire(blocking, timeout)
            taker = threading.Thread(target=lambda: took.append(turn.take_over(fetcher_thread)))
            taker.start()
            taker.join()
            return got

        def locked(self) -> bool:
            return real.locked()

    took: list[bool] = []
    turn.lock = HeldUp()  # type: ignore[assignment]
    assert not turn.take(main, 0.3)  # its lock was replaced; the new one is the fetcher thread's
    assert took == [True] and turn.holder == fetcher_thread
    assert not turn.try_take(3)  # nobody else gets in while the taker holds it
    turn.give_back(fetcher_thread)
    assert turn.try_take(3) and turn.holder == 3
    assert real.locked()  # the lock left behind is never released


def test_take_over_takes_only_a_lock_held_by_nobody() -> None:
    turn = Turn()
    assert not turn.take_over(1)  # free: nothing to take over
    assert turn.try_take(2)
    assert not turn.take_over(1)  # named: its holder is at work
    turn.give_back(1)  # not the holder: a no-op
    assert turn.holder == 2 and turn.lock.locked()
    turn.give_back(2)
    assert not turn.lock.locked() and turn.holder is None
    turn.lock.acquire()  # left behind
    assert turn.unnamed() and turn.take_over(1) and turn.holder == 1 and not turn.unnamed()
