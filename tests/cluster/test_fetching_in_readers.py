"""Fetching in the reader's thread against a real broker: who routes, commands meanwhile, interrupts, failures, close."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, TopicPartition

from harness.fetching import Got, assert_nothing_more, drain, got, infos_for, triples
from zkconsumer.consumer.chunks import StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.consumer.fetcher import Fetcher, kafka_consumer
from zkconsumer.errors import ConsumerError, ConsumerTimeout

pytestmark = pytest.mark.cluster


def routing_threads(f: Fetcher, monkeypatch, before: Callable[[list], None] | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """Record the thread of every routed batch; `before(batch)`, if given, runs first on the main thread."""
    names: list[str] = []
    route = f._route

    def recording(messages):  # type: ignore[no-untyped-def]
        names.append(threading.current_thread().name)
        if before is not None and threading.current_thread() is threading.main_thread():
            before(messages)
        route(messages)

    monkeypatch.setattr(f, "_route", recording)
    return names


@pytest.mark.parametrize("reader_turns", [True, False])
def test_a_reader_that_keeps_up_fetches_in_its_own_thread(
    make_fetcher, topic_factory, produce, monkeypatch, reader_turns
) -> None:
    topic = topic_factory(partitions=4)
    sent = produce(topic, 20_000, partitions=4)
    q = StreamQueue(2, "s")
    f = make_fetcher(batch_size=500, reader_turns=reader_turns)
    names = routing_threads(f, monkeypatch)
    f.assign(infos_for(topic, range(4), q))
    assert triples(drain(ConsumerIterator(q, 200), 20_000)) == triples(sent)
    on_reader = names.count(threading.current_thread().name)
    if reader_turns:  # the fetcher thread may route the first batches, before the reader asks
        assert on_reader >= len(names) // 2, f"{on_reader} of {len(names)} batches routed on the reader's thread"
    else:
        assert on_reader == 0 and set(names) == {"f0-fetcher"}


def test_commands_and_consumer_calls_wait_at_most_one_reader_fetch(make_fetcher, topic_factory, produce) -> None:
    """A reader blocked on idle partitions fetches in turns of at most 0.1 s: commands posted by
    other threads (a rebalance's add/remove, a commit's Consumer calls) get the Consumer between them."""
    topic = topic_factory(partitions=3)
    produce(topic, 30, partitions=3)
    q = StreamQueue(2, "s")
    f = make_fetcher()
    f.assign(infos_for(topic, [0, 1], q))
    received: list[Got] = []
    stop = threading.Event()

    def reader() -> None:
        it = ConsumerIterator(q, 100)
        while not stop.is_set():
            try:
                received.append(got(next(it)))
            except ConsumerTimeout:
                pass

    t = threading.Thread(target=reader, name="reader")
    t.start()
    try:
        deadline = time.monotonic() + 20
        while len(received) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(received) == 20  # now the reader fetches in turns on idle partitions
        for call in (
            lambda: f.add(infos_for(topic, [2], q)),
            lambda: f.consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False),
            lambda: f.consumer.committed([TopicPartition(topic, 0)], timeout=10),
            lambda: f.assigned(),
            lambda: f.remove([(topic, 1)]),
        ):
            began = time.monotonic()
            call()
            assert time.monotonic() - began < 2.0
        assert f.assigned() == {(topic, 0), (topic, 2)}
        while len(received) < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted((m.partition, m.offset) for m in received) == [(p, o) for p in range(3) for o in range(10)]
    finally:
        stop.set()
        t.join(10)


@pytest.mark.parametrize("routed_first", [False, True])
def test_a_reader_fetch_cut_short_by_an_interrupt_loses_and_repeats_nothing(
    make_fetcher, topic_factory, produce, monkeypatch, routed_first
) -> None:
    """A KeyboardInterrupt reaches a reader in the middle of its fetch: librdkafka's position is past
    messages never queued. The next fetch starts again from what was routed, and a run queued
    before the interrupt is not handed out twice."""
    topic = topic_factory(partitions=2)
    sent = produce(topic, 4000, partitions=2)
    q = StreamQueue(4, "s")
    f = make_fetcher(batch_size=500)
    interrupts = []

    def interrupt_once(messages: list) -> None:
        if not interrupts:
            interrupts.append(len(messages))
            if routed_first:  # queue part of the first run, then stop: it is fetched again afterwards
                Fetcher._route(f, messages[:10])
            raise KeyboardInterrupt

    routing_threads(f, monkeypatch, before=interrupt_once)
    it = ConsumerIterator(q, 200)
    f.assign(infos_for(topic, [0, 1], q))
    out: list[Got] = []
    deadline = time.monotonic() + 30
    while len(out) < 4000 and time.monotonic() < deadline:
        try:
            out.extend(got(m) for m in it)
        except KeyboardInterrupt:
            continue
        except ConsumerTimeout:
            continue
    assert interrupts, "no fetch on the reader's thread was interrupted"
    assert triples(out) == triples(sent)
    for p in (0, 1):
        assert [m.offset for m in out if m.partition == p] == list(range(2000))
    assert_nothing_more(it)


def test_a_fatal_error_in_a_reader_fetch_ends_fetching_once(make_fetcher, topic_factory, produce, monkeypatch) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 2000, partitions=1)
    fatal = confluent_kafka.KafkaException(KafkaError(KafkaError._FATAL, "injected fatal", fatal=True))

    class FatalInTheReader(confluent_kafka.Consumer):
        def consume(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if threading.current_thread() is threading.main_thread():
                raise fatal
            return super().consume(*args, **kwargs)

    monkeypatch.setattr(kafka_consumer, "Consumer", FatalInTheReader)
    q = StreamQueue(2, "s")
    f = make_fetcher(batch_size=100)
    f.assign(infos_for(topic, [0], q))
    it = ConsumerIterator(q, 200)
    deadline = time.monotonic() + 20
    while not f.errors and time.monotonic() < deadline:
        try:
            next(it)
        except ConsumerTimeout:
            pass
    assert f.errors == [fatal]
    f._thread.join(10)
    assert not f._thread.is_alive()  # the fetcher thread ends with it
    f.errors.pop()
    with pytest.raises(ConsumerError) as info:
        f.add(infos_for(topic, [0], q))
    assert info.value.__cause__ is fatal


def test_close_while_a_reader_fetches(make_fetcher, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    q = StreamQueue(2, "s")
    f = make_fetcher()
    f.assign(infos_for(topic, [0], q))
    stop, timeouts = threading.Event(), []

    def reader() -> None:
        it = ConsumerIterator(q, 100)
        while not stop.is_set():
            try:
                next(it)
            except ConsumerTimeout:
                timeouts.append(1)

    t = threading.Thread(target=reader, name="reader")
    t.start()
    try:
        time.sleep(0.5)  # the reader fetches in turns on an empty partition
        began = time.monotonic()
        f.close()
        assert time.monotonic() - began < 3.0
        assert f._kafka.closed and not f._thread.is_alive()
        seen = len(timeouts)
        time.sleep(0.5)
        assert len(timeouts) > seen  # the reader goes on timing out: it no longer fetches
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive()
