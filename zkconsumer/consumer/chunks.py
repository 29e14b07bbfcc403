"""What flows from the fetcher to the iterators: partition records, chunks of messages, bounded queues."""

from __future__ import annotations

import collections
import itertools
import operator
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from zkconsumer.errors import ConsumerError

if TYPE_CHECKING:
    import confluent_kafka

    class Message(confluent_kafka.Message):
        """confluent_kafka.Message as consumed: one that consume() returned without error().

        Its stubs type topic(), partition() and offset() Optional, as a produced message or an
        error may lack them; every message a consumer delivers has all three. A name for type
        checkers only: at run time this is confluent_kafka.Message itself, at no cost.
        """

        def topic(self) -> str: ...
        def partition(self) -> int: ...
        def offset(self) -> int: ...

else:
    from confluent_kafka import Message


_remaining = operator.length_hint


class PartitionTopicInfo:
    """Positions of one owned partition (the Scala class of the same name).

    fetched_offset: next offset the fetcher will put into the queue.
    consumed_offset: next offset the application has not yet finished (what a commit writes).
        The iterator delivering a chunk of this partition publishes that chunk (`live`), and the
        position is read from it on demand: nothing is written per message.
    committed_offset: last value written to offset storage (commits skip unchanged partitions).
    kafka_offset: dual commit: last value this ownership wrote to Kafka (-1: none yet); the Kafka
        side sends only partitions whose position moved past it.
    active: False once released by a rebalance. Setting it stops a chunk being delivered at
        once, and queued chunks of inactive partitions are dropped unseen.
    epoch: the czxid of /brokers/topics/<topic> when claimed, naming the topic's incarnation:
        positions of a deleted (and maybe re-created) topic must never be committed. None: unknown.
    """

    __slots__ = (
        "topic",
        "partition",
        "thread_id",
        "queue",
        "fetched_offset",
        "_consumed",
        "committed_offset",
        "kafka_offset",
        "_active",
        "epoch",
        "live",
    )

    def __init__(
        self, topic: str, partition: int, thread_id: str, queue: StreamQueue, offset: int, epoch: int | None = None
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.thread_id = thread_id
        self.queue = queue
        self.fetched_offset = offset
        self._consumed = offset
        self.committed_offset = offset
        self.kafka_offset = -1
        self._active = True
        self.epoch = epoch
        # The chunk of it being delivered (see delivery.ConsumerIterator); None while none is.
        self.live: LiveChunk | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def active(self) -> bool:
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = value
        live = self.live
        if not value and live is not None:
            live.halt()  # the iterator hands out nothing more of this chunk

    @property
    def consumed_offset(self) -> int:
        live = self.live
        if live is not None:
            position = live_position(live.data, live.cursor)
            if position > self._consumed:
                return position
        return self._consumed

    @consumed_offset.setter
    def consumed_offset(self, value: int) -> None:
        self._consumed = value

    def advance(self, offset: int) -> None:
        """Move consumed_offset forward to `offset` (never backwards)."""
        if offset > self._consumed:
            self._consumed = offset

    def __repr__(self) -> str:
        return (
            f"PartitionTopicInfo({self.topic}-{self.partition} thread={self.thread_id} "
            f"fetched={self.fetched_offset} consumed={self.consumed_offset} "
            f"committed={self.committed_offset} active={self.active})"
        )


class LiveChunk:
    """A chunk being handed out by `compress(chain.from_iterable(iter(next_slice, None)), stop)`.

    `data` is the chunk's messages plus one sentinel and `cursor` the list iterator over it: how far
    the cursor got says which messages were handed out. `stop` holds one selector per message.
    The messages come in slices of at most `slice` from `next_slice`, which first looks at
    `usable` (the partition still active, the gate open, the lease valid): one Python call per
    slice, made before the slice's first pull, so between pulling a message and handing it out
    only C code runs and no other thread can see a message pulled and not handed out.

    `halt()` (a release, a closed gate, a lapsed lease, from any thread) sets `halted`, then
    empties `stop`, so compress ends after one more pull: mid-slice the next message, at a slice
    boundary the one `next_slice` lets through for that. Every end of a chunk has thus pulled
    exactly one message more than it handed out (the sentinel at the normal end), except one cut
    short by an exception raised inside `next_slice` (a KeyboardInterrupt), which pulled none more
    and is not `halted`.
    """

    __slots__ = ("data", "cursor", "stop", "halted", "usable", "slice")

    def __init__(self, data: list[Any], usable: Callable[[], bool], slice_size: int) -> None:
        self.data = data
        self.cursor = iter(data)
        self.stop = [1] * (len(data) - 1)
        self.halted = False
        self.usable = usable
        self.slice = slice_size

    def next_slice(self) -> Iterator[Any]:
        left = _remaining(self.cursor)
        if self.halted or not self.usable():
            self.halt()
            return itertools.islice(self.cursor, 1)  # the one pull a halted chunk makes
        # The last slice takes the sentinel, whose pull (with `stop` used up) ends the chunk.
        return itertools.islice(self.cursor, self.slice if left > self.slice + 1 else left)

    def halt(self) -> None:
        self.halted = True
        self.stop.clear()


def live_position(data: list[Any], cursor: Any) -> int:
    """The next offset not finished in a chunk being delivered; -1 if none of it was handed out yet.

    `data` is the chunk's messages plus one sentinel and `cursor` the list iterator over it. The
    last message handed out is still being processed, so it does not count; once the sentinel
    was pulled, the application asked for more after the last message, so all of them count.
    """
    pulled = len(data) - _remaining(cursor)
    if pulled == 0:
        return -1
    last: Message  # data[-1] is the sentinel, never a message read here
    if pulled >= len(data):
        last = data[-2]
        return last.offset() + 1
    last = data[pulled - 1]
    return last.offset()


class Chunk:
    """Consecutive messages of one partition, as fetched together (confluent_kafka.Message objects)."""

    __slots__ = ("info", "messages")

    def __init__(self, info: PartitionTopicInfo, messages: Sequence[Message]) -> None:
        self.info = info
        self.messages = messages


_REFILL_TIMEOUT = 0.1  # longest consume() a reader's fetch waits: how late a command or close() gets the Consumer

END = object()  # shutdown sentinel: ends the iterator for good (compared by identity)


class StreamQueue:
    """A queue of at most `capacity` chunks that never blocks its producer.

    The fetcher calls `offer()`; on False it pauses the partition and keeps the chunk until
    `on_space` fires (called from the consuming thread as it takes a chunk), so one slow stream
    never stalls the others.

    `refill(queue, timeout)`, once the fetcher sets it, lets a reader that finds the queue empty
    fetch on its own thread (Fetcher.fetch_for): it returns 0 after fetching, else how long to wait
    for another thread's fetch before asking again.
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
        self.refill: Callable[[StreamQueue, float], float] | None = None

    def set_refill(self, refill: Callable[[StreamQueue, float], float]) -> None:
        """Let readers that find the queue empty fetch through `refill`; wakes one waiting now."""
        with self._cond:
            self.refill = refill
            self._cond.notify_all()

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
        """Next chunk, `END`, or None on timeout. Raises the error set by `fail()`.

        An empty queue with a `refill` asks it to fetch, outside the queue's lock (the fetch offers
        chunks to this queue too), or waits as long as it says for another thread's fetch.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        wait: float | None = None  # how long refill said to wait for another's fetch; None: ask it
        while True:
            with self._cond:
                if self._chunks or self._error is not None:
                    if self._error is not None and (not self._chunks or self._chunks[0] is not END):
                        raise ConsumerError(f"consumer stream {self.name} failed: {self._error}") from self._error
                    item = self._chunks.popleft()
                    callback = None
                    if item is END:
                        self._chunks.appendleft(item)  # stays ended for every later call
                    elif self._refused:
                        self._refused = False
                        callback = self.on_space
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                refill = None if self._closed else self.refill
                if refill is None or wait is not None:
                    self._cond.wait(remaining if wait is None else wait if remaining is None else min(wait, remaining))
                    wait = None
                    continue
            asked = refill(self, _REFILL_TIMEOUT if remaining is None else min(remaining, _REFILL_TIMEOUT))
            wait = asked if asked > 0 else None
        if callback is not None:
            try:
                callback()
            except BaseException:  # a signal in the callback: the chunk goes back, the hint is lost
                with self._cond:  # (the fetcher offers held chunks now and then anyway)
                    self._chunks.appendleft(item)
                raise
        return item

    def clear(self) -> int:
        """Drop queued chunks (rebalance step 2). Returns how many were dropped."""
        with self._cond:
            kept = [c for c in self._chunks if c is END]
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
            self._chunks = collections.deque([END] if self._error is None else [])
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
            return sum(1 for c in self._chunks if c is not END)
