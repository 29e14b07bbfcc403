"""What the application sees: Message, KafkaStream and the ConsumerIterator draining its queue."""
from __future__ import annotations

import collections
import math
import threading
import time
from typing import Callable, Iterator, Sequence

from zkconsumer.errors import ConsumerError, ConsumerTimeout


class Message:
    """One consumed record. `offset + 1` is what gets committed once the next one is asked for."""

    __slots__ = ("topic", "partition", "offset", "key", "value", "timestamp", "headers")

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                 timestamp: int | None = None, headers: list[tuple[str, bytes]] | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers

    def __repr__(self) -> str:
        return f"Message({self.topic!r}, {self.partition}, {self.offset}, key={self.key!r}, value={self.value!r})"


class PartitionTopicInfo:
    """Positions of one owned partition (the Scala class of the same name).

    fetched_offset: next offset the fetcher will put into the queue.
    consumed_offset: next offset the application has not yet finished (what a commit writes).
    committed_offset: last value written to offset storage (commits skip unchanged partitions).
    active: False once released by a rebalance; chunks of inactive partitions are dropped unseen.
    epoch: the czxid of /brokers/topics/<topic> when claimed, naming the topic's incarnation:
    positions of a deleted (and maybe re-created) topic must never be committed. None: unknown.
    """

    __slots__ = ("topic", "partition", "thread_id", "queue", "fetched_offset", "consumed_offset",
                 "committed_offset", "active", "epoch")

    def __init__(self, topic: str, partition: int, thread_id: str, queue: "StreamQueue", offset: int,
                 epoch: int | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.thread_id = thread_id
        self.queue = queue
        self.fetched_offset = offset
        self.consumed_offset = offset
        self.committed_offset = offset
        self.active = True
        self.epoch = epoch

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def __repr__(self) -> str:
        return (f"PartitionTopicInfo({self.topic}-{self.partition} thread={self.thread_id} "
                f"fetched={self.fetched_offset} consumed={self.consumed_offset} "
                f"committed={self.committed_offset} active={self.active})")


class Chunk:
    """Consecutive messages of one partition, as fetched together."""

    __slots__ = ("info", "messages")

    def __init__(self, info: PartitionTopicInfo, messages: Sequence[Message]) -> None:
        self.info = info
        self.messages = messages


_END = object()  # shutdown sentinel: ends the iterator for good (compared by identity)


class StreamQueue:
    """A queue of at most `capacity` chunks that never blocks its producer.

    The fetcher calls `offer()`; on False it pauses the partition and keeps the chunk until
    `on_space` fires (called from the consuming thread after it takes a chunk), so one slow
    stream never stalls the others.
    """

    def __init__(self, capacity: int, name: str = "") -> None:
        if capacity < 1:
            raise ValueError("queued.max.message.chunks must be >= 1")
        self.capacity = capacity
        self.name = name
        self._chunks: collections.deque[object] = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._refused = False
        self._error: BaseException | None = None
        self._closed = False
        self.on_space: Callable[[], None] | None = None

    def offer(self, chunk: Chunk) -> bool:
        """Enqueue unless full or closed. False means: hold the chunk and pause its partition."""
        with self._cond:
            if self._closed:
                return True  # swallow: nobody will read it, and the fetcher must not hold it forever
            if len(self._chunks) >= self.capacity:
                self._refused = True
                return False
            self._chunks.append(chunk)
            self._cond.notify()
            return True

    def take(self, timeout: float | None) -> Chunk | object | None:
        """Next chunk, `_END`, or None on timeout. Raises the error set by `fail()`."""
        callback = None
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._chunks and self._error is None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            if self._error is not None and (not self._chunks or self._chunks[0] is not _END):
                raise ConsumerError(f"consumer stream {self.name} failed: {self._error}") from self._error
            item = self._chunks.popleft()
            if item is _END:
                self._chunks.appendleft(item)  # stays ended for every later call
            elif self._refused:
                self._refused = False
                callback = self.on_space
        if callback is not None:
            callback()
        return item

    def clear(self) -> int:
        """Drop queued chunks (rebalance step 2). Returns how many were dropped."""
        with self._cond:
            kept = [c for c in self._chunks if c is _END]
            dropped = len(self._chunks) - len(kept)
            self._chunks = collections.deque(kept)
            refused, self._refused = self._refused, False
        if refused and self.on_space is not None:
            self.on_space()
        return dropped

    def close(self) -> None:
        """Shutdown: drop what is queued and end the iterator after its current message (a queue
        that failed first keeps raising its error instead: the failure is the news)."""
        with self._cond:
            self._chunks = collections.deque([_END] if self._error is None else [])
            self._closed = True
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        """Make the iterator raise ConsumerError(error) once it has drained nothing further."""
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return sum(1 for c in self._chunks if c is not _END)


class DeliveryGate:
    """Shared by a connector's iterators: delivery only while ZooKeeper vouches for our ownership.

    Closed on SUSPENDED/LOST. Also a lease: every confirmed ZooKeeper round trip at time t
    extends `lease_until` to a bit less than t + session timeout (our session, hence our owner
    nodes, cannot expire before that). A process frozen past its session timeout (GC pause,
    SIGSTOP) therefore hands out nothing on waking until the session is confirmed again.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.open = True           # plain attributes: read on every message, without the lock
        self.lease_until = math.inf
        self.ended = False
        self.clock = clock         # the lease's clock (a simulation passes its own)
        self._cond = threading.Condition()

    def usable(self) -> bool:
        return self.open and self.lease_until >= self.clock()

    def close(self) -> None:
        with self._cond:
            if not self.ended:
                self.open = False

    def reopen(self) -> None:
        with self._cond:
            self.open = True
            self._cond.notify_all()

    def renew(self, until: float) -> None:
        with self._cond:
            if not self.ended:
                self.lease_until = until
            self._cond.notify_all()

    def end(self) -> None:
        """Shutdown or failure: let every waiting iterator through to the end of its stream (every
        partition was made inactive first, so nothing more is handed out)."""
        with self._cond:
            self.ended = True
            self.open = True
            self.lease_until = math.inf
            self._cond.notify_all()

    def wait(self, timeout: float | None) -> bool:
        """Block until usable (True) or until timeout (False)."""
        with self._cond:
            return self._cond.wait_for(self.usable, timeout)


_ALWAYS_OPEN = DeliveryGate()


class ConsumerIterator(Iterator[Message]):
    """Blocking iterator over one stream's messages (safe to drain from its own thread).

    A message counts as consumed when the next one is requested (or `commit_offsets()`
    is called), so a crash while handling message n re-delivers n: at-least-once.
    """

    def __init__(self, queue: StreamQueue, consumer_timeout_ms: int = -1,
                 gate: DeliveryGate = _ALWAYS_OPEN) -> None:
        self._queue = queue
        self._gate = gate
        self._timeout = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        self._messages: Sequence[Message] = ()
        self._index = 0
        self._info: PartitionTopicInfo | None = None
        # (partition, offset after it) of the message being processed; one tuple so another
        # thread's commit_offsets() never pairs a partition with the wrong offset.
        self._pending: tuple[PartitionTopicInfo, int] | None = None
        self._ended = False

    def __iter__(self) -> "ConsumerIterator":
        return self

    def __next__(self) -> Message:
        self.mark_consumed()
        gate = self._gate
        while True:
            info = self._info
            if info is None or self._index >= len(self._messages) or not info.active:
                self._next_chunk()
                info = self._info
            # Checked with the message in hand: the chunk may have arrived after a disconnect.
            if gate.open and gate.lease_until >= gate.clock():
                break
            self._wait_for_gate()  # then look again: the partition may have been released
        msg = self._messages[self._index]
        self._index += 1
        self._pending = (info, msg.offset + 1)  # type: ignore[assignment]
        return msg

    def next_batch(self) -> Sequence[Message]:
        """The rest of the current chunk at once (all from one partition): the fast path.

        The whole batch counts as consumed when the next batch or message is requested.
        """
        self.mark_consumed()
        while True:
            if self._info is None or self._index >= len(self._messages) or not self._info.active:
                self._next_chunk()
            if self._gate.usable():
                break
            self._wait_for_gate()
        batch = self._messages[self._index:] if self._index else self._messages
        self._index = len(self._messages)
        self._pending = (self._info, batch[-1].offset + 1)  # type: ignore[assignment]
        return batch

    def mark_consumed(self) -> None:
        """Count the last handed-out message (or batch) as finished."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            info, next_offset = pending
            # Also after release: the rebalance's commit may still be about to read it.
            if next_offset > info.consumed_offset:
                info.consumed_offset = next_offset

    def _wait_for_gate(self) -> None:
        if not self._gate.wait(self._timeout):
            raise ConsumerTimeout("delivery paused: ZooKeeper connection lost, ownership unconfirmed")

    def _next_chunk(self) -> None:
        if self._ended:
            raise StopIteration
        while True:
            item = self._queue.take(self._timeout)
            if item is None:
                raise ConsumerTimeout(f"no message within {self._timeout * 1000:.0f} ms")  # type: ignore[operator]
            if item is _END:
                self._ended = True
                self._info = None
                self._messages = ()
                raise StopIteration
            chunk: Chunk = item  # type: ignore[assignment]
            info = chunk.info
            if not info.active or not chunk.messages:
                continue  # released by a rebalance after it was queued
            messages = chunk.messages
            start = 0
            # Skip what the application already finished (a re-fetch after a reset).
            while start < len(messages) and messages[start].offset < info.consumed_offset:
                start += 1
            if start == len(messages):
                continue
            self._info = info
            self._messages = messages
            self._index = start
            return


class KafkaStream:
    """One stream of a subscription: iterate it (from one thread) to consume its partitions."""

    def __init__(self, name: str, queue: StreamQueue, consumer_timeout_ms: int = -1,
                 gate: DeliveryGate = _ALWAYS_OPEN) -> None:
        self.name = name
        self.queue = queue
        self.iterator = ConsumerIterator(queue, consumer_timeout_ms, gate)

    def __iter__(self) -> ConsumerIterator:
        return self.iterator

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

    def __iter__(self) -> "_Batches":
        return self

    def __next__(self) -> Sequence[Message]:
        return self._iterator.next_batch()


class StreamSet:
    """The streams of one subscription and which queue each (topic, thread id) feeds.

    Static subscriptions get one stream per (topic, thread); wildcard subscriptions get
    `num_streams` streams shared by every matching topic (thread suffix i -> stream i).
    """

    def __init__(self, consumer_id: str, *, static: dict[str, int] | None = None,
                 wildcard_streams: int | None = None, capacity: int = 2, consumer_timeout_ms: int = -1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.consumer_id = consumer_id
        self.by_topic: dict[str, list[KafkaStream]] = {}
        self.wildcard: list[KafkaStream] = []
        self.gate = DeliveryGate(clock)
        make = lambda name: KafkaStream(name, StreamQueue(capacity, name), consumer_timeout_ms,  # noqa: E731
                                        self.gate)
        if static is not None:
            for topic, count in static.items():
                self.by_topic[topic] = [make(f"{topic}/{consumer_id}-{i}") for i in range(count)]
        if wildcard_streams is not None:
            self.wildcard = [make(f"*/{consumer_id}-{i}") for i in range(wildcard_streams)]

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

    def close(self) -> None:
        for stream in self.all():
            stream.queue.close()
        self.gate.end()  # iterators waiting on a paused gate or a lapsed lease must see the end

    def fail(self, error: BaseException) -> None:
        for stream in self.all():
            stream.queue.fail(error)
        self.gate.end()

    def mark_consumed(self) -> None:
        """commit_offsets(): the message each stream handed out last counts as finished."""
        for stream in self.all():
            stream.iterator.mark_consumed()
