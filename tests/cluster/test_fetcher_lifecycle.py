"""The fetcher's lifecycle against a real broker: close, calls from other threads, on_error, fatal errors."""

from __future__ import annotations

import threading
import time

import confluent_kafka
import pytest
from confluent_kafka import KafkaError

from harness.fetching import infos_for
from zkconsumer.consumer.chunks import StreamQueue
from zkconsumer.consumer.fetcher import kafka_consumer
from zkconsumer.errors import ConsumerError

pytestmark = pytest.mark.cluster


def test_close_is_idempotent_and_stops_the_thread(make_fetcher, topic_factory) -> None:
    topic = topic_factory(partitions=1)
    q = StreamQueue(2, "s")
    f = make_fetcher()
    f.assign(infos_for(topic, [0], q))
    assert "f0-fetcher" in {t.name for t in threading.enumerate()}
    closer = threading.Thread(target=f.close)
    closer.start()
    f.close()
    closer.join(10)
    f.close()
    assert "f0-fetcher" not in {t.name for t in threading.enumerate()}
    with pytest.raises(ConsumerError):
        f.assign(infos_for(topic, [0], q))
    f.stop_fetching()  # nothing fetches anyway: a no-op, not an error
    f.remove([(topic, 0)])
    assert f.assigned() == set()
    with pytest.raises(RuntimeError):
        f.consumer.assignment()


def test_close_from_on_error_on_the_fetcher_thread(make_fetcher, topic_factory, monkeypatch) -> None:
    topic = topic_factory(partitions=1)

    class Exploding(confluent_kafka.Consumer):
        def consume(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            raise RuntimeError("injected")

    monkeypatch.setattr(kafka_consumer, "Consumer", Exploding)
    f = make_fetcher(start=False)
    seen = []

    def on_error(exc: BaseException) -> None:
        seen.append((exc, threading.current_thread().name))
        f.close()  # the connector shuts down from the callback: must not deadlock

    f._on_error = on_error
    f.start()
    with pytest.raises(ConsumerError):  # consume() raises right after applying the assignment
        f.assign(infos_for(topic, [0], StreamQueue(1, "s")))
        f._thread.join(10)
        f.assign(infos_for(topic, [0], StreamQueue(1, "s")))
    f._thread.join(10)
    assert not f._thread.is_alive()
    assert [(str(e), n) for e, n in seen] == [("injected", "f0-fetcher")]
    assert f._kafka.closed


def test_on_error_may_block_on_a_thread_that_waits_for_the_fetcher(make_fetcher, topic_factory, monkeypatch) -> None:
    """The connector's on_error takes a lock that a thread waiting in add() holds: the waiting
    command is released (ConsumerError) before on_error runs, so neither waits for the other."""
    topic = topic_factory(partitions=2)
    go, failing = threading.Event(), threading.Event()

    class FailsWhileACommandWaits(confluent_kafka.Consumer):
        def consume(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if go.is_set():
                failing.set()
                deadline = time.monotonic() + 5
                while not f._commands.pending() and time.monotonic() < deadline:
                    time.sleep(0.01)
                raise RuntimeError("injected")
            return super().consume(*args, **kwargs)

    monkeypatch.setattr(kafka_consumer, "Consumer", FailsWhileACommandWaits)
    f = make_fetcher(start=False)
    lock = threading.Lock()
    reported: list[BaseException] = []

    def on_error(exc: BaseException) -> None:
        with lock:
            reported.append(exc)

    f._on_error = on_error
    f.start()
    q = StreamQueue(1, "s")
    f.assign(infos_for(topic, [0], q))
    with lock:
        go.set()
        assert failing.wait(5)  # the fetcher thread is about to fail, once a command waits
        began = time.monotonic()
        with pytest.raises(ConsumerError):
            f.add(infos_for(topic, [1], q))
        assert time.monotonic() - began < 5
    f._thread.join(10)
    assert [str(e) for e in reported] == ["injected"]
    f.stop_fetching()  # inline now
    assert f.assigned() == set()


@pytest.mark.parametrize("kind", ["exception", "fatal_kafka_error"])
def test_fatal_error_calls_on_error_once_and_stops(make_fetcher, topic_factory, produce, monkeypatch, kind) -> None:
    topic = topic_factory(partitions=1)
    produce(topic, 10, partitions=1)
    calls = {"n": 0}

    class FailingOnce(confluent_kafka.Consumer):
        def consume(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == 3:
                if kind == "exception":
                    raise ValueError("injected")
                err = KafkaError(KafkaError._FATAL, "injected fatal", fatal=True)
                return [confluent_kafka.Message(topic=topic, partition=0, offset=0, error=err)]
            return super().consume(*args, **kwargs)

    monkeypatch.setattr(kafka_consumer, "Consumer", FailingOnce)
    f = make_fetcher()
    q = StreamQueue(2, "s")
    f.assign(infos_for(topic, [0], q))
    f._thread.join(10)
    assert not f._thread.is_alive()
    assert len(f.errors) == 1
    exc = f.errors.pop()
    assert "injected" in str(exc)
    if kind == "fatal_kafka_error":
        assert isinstance(exc, confluent_kafka.KafkaException) and exc.args[0].fatal()
    with pytest.raises(ConsumerError) as info:
        f.add(infos_for(topic, [0], q))
    assert info.value.__cause__ is exc
    f.stop_fetching()  # inline on the open consumer after the thread died
    assert f.assigned() == set()
