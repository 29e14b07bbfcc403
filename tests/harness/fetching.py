"""Helpers of the fetcher's cluster tests: a Fetcher factory, partition records, draining an iterator."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

import pytest

from zkconsumer.consumer.chunks import Message, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator
from zkconsumer.consumer.fetcher import Fetcher, FetchSettings
from zkconsumer.errors import ConsumerTimeout


def fetcher_factory(bootstrap_servers: str, group_id: str) -> Iterator[Callable[..., Fetcher]]:
    """make(**settings) -> started Fetcher; `.errors` lists what on_error received. Closes them all
    afterwards and fails if any reported an error nobody popped."""
    made: list[Fetcher] = []

    def _make(*, batch_size: int = 1000, start: bool = True, reader_turns: bool = True, **kwargs: object) -> Fetcher:
        settings = FetchSettings(bootstrap_servers, group_id, "fetcher-test", **kwargs)  # type: ignore[arg-type]
        errors: list[BaseException] = []
        f = Fetcher(
            settings, name=f"f{len(made)}", on_error=errors.append, batch_size=batch_size, reader_turns=reader_turns
        )
        f.errors = errors  # type: ignore[attr-defined]
        made.append(f)
        if start:
            f.start()
        return f

    yield _make
    for f in made:
        f.close()
    for f in made:
        assert not f.errors, f"unexpected on_error calls: {f.errors}"  # type: ignore[attr-defined]


def infos_for(
    topic: str, partitions, queue: StreamQueue, offset: int = 0, epoch: int | None = None
) -> list[PartitionTopicInfo]:  # type: ignore[no-untyped-def]
    return [PartitionTopicInfo(topic, p, queue.name, queue, offset, epoch) for p in partitions]


class Got(NamedTuple):
    """A delivered message's fields (confluent_kafka.Message has accessor methods)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def got(m: Message) -> Got:
    return Got(m.topic(), m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1])


def drain(it: ConsumerIterator, count: int, timeout: float = 30.0) -> list[Got]:
    """Exactly `count` messages from the iterator (built with a short consumer timeout)."""
    out: list[Got] = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        try:
            out.append(got(next(it)))
        except ConsumerTimeout:
            if time.monotonic() > deadline:
                raise AssertionError(f"got {len(out)} of {count} messages within {timeout}s") from None
    return out


def assert_nothing_more(it: ConsumerIterator, wait: float = 0.5) -> None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with pytest.raises(ConsumerTimeout):
            extra = next(it)
            pytest.fail(f"unexpected message {extra}")


def triples(messages) -> list[tuple[int, int, bytes]]:  # type: ignore[no-untyped-def]
    return sorted((m.partition, m.offset, m.value) for m in messages)
