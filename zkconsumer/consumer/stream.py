"""What the application holds: KafkaStream and the StreamSet of one subscription."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from zkconsumer.clock import lease_clock
from zkconsumer.consumer.chunks import Message, StreamQueue
from zkconsumer.consumer.delivery import _ALWAYS_OPEN, ConsumerIterator, DeliveryGate, LeaseGuard


class KafkaStream:
    """One stream of a subscription: iterate it (from one thread) to consume its partitions."""

    def __init__(
        self, name: str, queue: StreamQueue, consumer_timeout_ms: int = -1, gate: DeliveryGate = _ALWAYS_OPEN
    ) -> None:
        self.name = name
        self.queue = queue
        self.iterator = ConsumerIterator(queue, consumer_timeout_ms, gate)

    def __iter__(self) -> Iterator[Message]:
        """confluent_kafka.Message objects, at C speed (see zkconsumer.consumer.delivery)."""
        return iter(self.iterator)

    def batches(self) -> Iterator[Sequence[Message]]:
        """Iterate lists of messages (each from one partition) until the connector shuts down.

        Like the message iterator it may raise ConsumerTimeout and then be iterated again
        (a generator could not: raising finalises it).
        """
        return _Batches(self.iterator)

    def __repr__(self) -> str:
        return f"KafkaStream({self.name!r}, queued_chunks={len(self.queue)})"


class _Batches(Iterator[Sequence[Message]]):
    def __init__(self, iterator: ConsumerIterator) -> None:
        self._iterator = iterator

    def __iter__(self) -> _Batches:
        return self

    def __next__(self) -> Sequence[Message]:
        return self._iterator.next_batch()


class StreamSet:
    """The streams of one subscription and which queue each (topic, thread id) feeds.

    Static subscriptions get one stream per (topic, thread); wildcard subscriptions get
    `num_streams` streams shared by every matching topic (thread suffix i -> stream i).
    """

    def __init__(
        self,
        consumer_id: str,
        *,
        static: dict[str, int] | None = None,
        wildcard_streams: int | None = None,
        capacity: int = 2,
        consumer_timeout_ms: int = -1,
        clock: Callable[[], float] = lease_clock,
    ) -> None:
        self.consumer_id = consumer_id
        self.by_topic: dict[str, list[KafkaStream]] = {}
        self.wildcard: list[KafkaStream] = []
        self.gate = DeliveryGate(clock)

        def make(name: str) -> KafkaStream:
            return KafkaStream(name, StreamQueue(capacity, name), consumer_timeout_ms, self.gate)

        if static is not None:
            for topic, count in static.items():
                self.by_topic[topic] = [make(f"{topic}/{consumer_id}-{i}") for i in range(count)]
        if wildcard_streams is not None:
            self.wildcard = [make(f"*/{consumer_id}-{i}") for i in range(wildcard_streams)]
        # A simulation's clock is not the time threads wait by: it checks the lease per chunk only.
        self._guard = LeaseGuard(self.gate, consumer_id) if clock is lease_clock else None

    def all(self) -> list[KafkaStream]:
        return [s for streams in self.by_topic.values() for s in streams] + self.wildcard

    def queue_for(self, topic: str, thread_id: str) -> StreamQueue:
        index = int(thread_id.rsplit("-", 1)[1])
        if self.wildcard:
            return self.wildcard[index].queue
        return self.by_topic[topic][index].queue

    def clear(self) -> None:
        for stream in self.all():
            stream.queue.clear()

    def close(self, timeout: float = 5.0) -> None:
        """End every stream; waits at most `timeout` for the lease guard's thread (a shutdown passes
        what is left of its time)."""
        for stream in self.all():
            stream.queue.close()
        self.gate.end()  # iterators waiting on a paused gate or a lapsed lease must see the end
        if self._guard is not None:
            self._guard.stop(timeout)

    def fail(self, error: BaseException, timeout: float = 5.0) -> None:
        for stream in self.all():
            stream.queue.fail(error)
        self.gate.end()
        if self._guard is not None:
            self._guard.stop(timeout)

    def mark_consumed(self) -> None:
        """commit_offsets(): the message each stream handed out last counts as finished."""
        for stream in self.all():
            stream.iterator.mark_consumed()
