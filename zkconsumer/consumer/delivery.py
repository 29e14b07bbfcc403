"""Handing messages to the application: the delivery gate (session lease) and the ConsumerIterator.

Speed comes from iterating with C-level iterators: `for msg in stream` runs `itertools.chain` over
one `itertools.compress` per chunk, so no Python code runs per message; the gate and the lease are
looked at once per slice of at most SLICE messages, by the one Python call that starts the slice
(chunks.LiveChunk). Exactness comes from lists that other threads can act on atomically:

- `cursor` iterates the chunk's messages plus one sentinel; how far it got says exactly which
  messages were handed out (`chunks.live_position`), so commits read positions on demand;
- `stop` holds one selector per message; clearing it (a release, a closed gate, a lapsed lease)
  makes compress end before handing out the next message. compress pulls a message and then
  its selector, in C, so every end of a chunk, normal or stopped, has pulled exactly one message
  more than it handed out: the sentinel, or the first message not handed out.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from operator import length_hint
from typing import Any

from zkconsumer.clock import lease_clock
from zkconsumer.consumer.chunks import END, Chunk, LiveChunk, Message, PartitionTopicInfo, StreamQueue
from zkconsumer.errors import ConsumerError, ConsumerTimeout

_SENTINEL = [None]
SLICE = 128  # messages handed out between two looks at the gate (and lease): a frozen process's overrun


class _Raising(Iterator[Message]):
    """An iterator that raises `error` once, then ends (how the chain reports a timeout and lives on)."""

    def __init__(self, error: BaseException) -> None:
        self._error: BaseException | None = error

    def __next__(self) -> Message:
        error, self._error = self._error, None
        if error is None:
            raise StopIteration
        raise error


class DeliveryGate:
    """Shared by a connector's iterators: delivery only while ZooKeeper vouches for our ownership.

    Closed on LOST (and released partitions stop on their own). Also a lease: every round trip
    the ensemble's leader confirmed, sent at time t, extends `lease_until` to a bit less than
    t + session timeout (our session, hence our owner nodes, cannot expire before that). t is read
    on the lease clock (zkconsumer.clock), which counts a host's suspend as the servers' session
    clock does. A process frozen or a host suspended past its session timeout therefore hands out
    at most the rest of the slice it was in (SLICE messages) on waking, until the session is
    confirmed again. The gate is checked before every slice; closing it, or the lease running
    out (seen by `LeaseGuard`), stops the slice being delivered.
    """

    def __init__(self, clock: Callable[[], float] = lease_clock) -> None:
        self.open = True  # plain attributes: read without the lock
        self.lease_until = math.inf
        self.ended = False
        self.clock = clock  # counts suspend (zkconsumer.clock); a simulation passes its own
        self._cond = threading.Condition()
        self._iterators: list[ConsumerIterator] = []
        self._lapsed_at: float | None = None  # the lease value whose lapse enforce_lease acted on

    def attach(self, iterator: ConsumerIterator) -> None:
        with self._cond:
            self._iterators.append(iterator)

    def usable(self) -> bool:
        """Delivery may go on: open and within the lease, or ended (iterators run to their end)."""
        return self.ended or (self.open and self.lease_until >= self.clock())

    def lease_holds(self) -> bool:
        """The lease alone, ended or not: a final commit after a failure ended the gate still asks it."""
        return self.lease_until >= self.clock()

    def close(self) -> None:
        with self._cond:
            if self.ended:
                return
            self.open = False
        self.interrupt()

    def interrupt(self) -> None:
        """Stop every chunk being delivered (each resumes where it stopped once the gate is usable)."""
        with self._cond:
            iterators = list(self._iterators)
        for it in iterators:
            it.interrupt()

    def reopen(self) -> None:
        with self._cond:
            self.open = True
            self._cond.notify_all()

    def renew(self, until: float) -> None:
        with self._cond:
            if not self.ended:
                self.lease_until = until
            self._cond.notify_all()
        if until < self.clock():  # confirmed too long ago (a starved renewer): out already
            self.enforce_lease()

    def end(self) -> None:
        """Shutdown or failure: let every waiting iterator through to the end of its stream (every
        partition was made inactive first, so nothing more is handed out). The lease keeps its
        value (frozen): ending delivery vouches for no ownership."""
        with self._cond:
            self.ended = True
            self.open = True
            self._cond.notify_all()

    def wait(self, timeout: float | None) -> bool:
        """Block until usable (True) or until timeout (False)."""
        with self._cond:
            return self._cond.wait_for(self.usable, timeout)

    def enforce_lease(self) -> bool:
        """If the lease ran out since it was last renewed, stop the chunks being delivered (once
        per lapse). True if it is out. LeaseGuard calls this; a simulation calls it itself."""
        with self._cond:
            lapsed = not self.ended and self.lease_until < self.clock()
            first = lapsed and self._lapsed_at != self.lease_until
            if first:
                self._lapsed_at = self.lease_until
        if first:
            self.interrupt()
        return lapsed

    def wait_for_lapse(self, poll_s: float) -> bool:
        """Wait for the lease to run out or be renewed, at most `poll_s`; True if it is out now."""
        with self._cond:
            if not self.ended:
                remaining = self.lease_until - self.clock()
                self._cond.wait(min(remaining, poll_s) if remaining > 0 else poll_s)
            return not self.ended and self.lease_until < self.clock()


class LeaseGuard:
    """A thread that stops chunks mid-way when the lease runs out without being renewed.

    Chunk starts check the lease themselves; this covers a chunk already being delivered when
    the process froze. It stops with the gate's end (StreamSet.close/fail), or `stop()`.
    """

    def __init__(self, gate: DeliveryGate, name: str, *, poll_s: float = 1.0) -> None:
        self._gate = gate
        self._poll_s = poll_s
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"{name}-lease-guard", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        gate = self._gate
        while not self._stopped and not gate.ended:
            if gate.wait_for_lapse(self._poll_s):
                gate.enforce_lease()

    def stop(self, timeout: float) -> None:
        """Stop the thread; wait for it at most `timeout` (it wakes at once: the renew below notifies)."""
        self._stopped = True
        self._gate.renew(self._gate.lease_until)  # wake it
        self._thread.join(timeout)


_ALWAYS_OPEN = DeliveryGate()


class ConsumerIterator(Iterator[Message]):
    """Blocking iterator over one stream's messages (drain it from one thread).

    A message counts as consumed when the next one is requested (or `mark_consumed()` is
    called), so a crash while handling message n re-delivers n: at-least-once. Messages are
    confluent_kafka.Message objects (`msg.value()`, `msg.offset()`, ...).

    `for msg in stream` runs at C speed (see the module docstring); calling `next()` on this
    object works too, a little slower. After a ConsumerTimeout, iterate again (the same
    `iter(stream)` object also goes on working).
    """

    def __init__(self, queue: StreamQueue, consumer_timeout_ms: int = -1, gate: DeliveryGate = _ALWAYS_OPEN) -> None:
        self._queue = queue
        self._gate = gate
        self._timeout = None if consumer_timeout_ms < 0 else consumer_timeout_ms / 1000.0
        self._fast: Iterator[Message] | None = None
        self._current: PartitionTopicInfo | None = None  # whose chunk is live
        self._resume: tuple[PartitionTopicInfo, Sequence[Message]] | None = None  # a stopped chunk's rest
        self._batch: tuple[PartitionTopicInfo, int] | None = None  # next_batch's, until the next request
        self._ended = False
        if gate is not _ALWAYS_OPEN:
            gate.attach(self)

    # ---- the fast path ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Message]:
        fast = self._fast
        if fast is None:
            fast = self._fast = itertools.chain.from_iterable(self._chunks())
        return fast

    def __next__(self) -> Message:
        return next(iter(self))

    def _chunks(self) -> Iterator[Iterator[Message]]:
        """Yields one stoppable iterator per chunk (or stopped chunk's rest); runs only between chunks.

        A timeout or a failed stream is yielded as an iterator that raises it once: the chain
        (what a caller of iter(stream) may hold on to) stays usable afterwards.
        """
        gate = self._gate
        try:
            while True:
                self._finish_live()
                self._settle_batch()
                try:
                    found = self._next_messages()
                except (ConsumerTimeout, ConsumerError) as exc:
                    yield _Raising(exc)
                    continue
                if found is None:
                    return  # the connector shut down
                info, messages = found
                data: list[Any] = list(messages)
                data += _SENTINEL
                live = LiveChunk(data, lambda info=info: info.active and gate.usable(), SLICE)  # type: ignore[misc]
                # Published before the first slice looks at the gate: a release from now on halts it.
                info.live = live
                self._current = info
                yield itertools.compress(itertools.chain.from_iterable(iter(live.next_slice, None)), live.stop)
                del found, messages, data, live  # hold no delivered messages while waiting
        except GeneratorExit:
            raise
        except BaseException:
            self._fast = None  # e.g. KeyboardInterrupt in take(): the next iteration starts afresh
            raise

    def _finish_live(self) -> None:
        """The application asked for more after the live chunk ended (normally or stopped)."""
        info = self._current
        if info is None:
            return
        self._current = None
        live, info.live = info.live, None
        if live is None:
            return
        data = live.data
        pulled = len(data) - length_hint(live.cursor)
        # A halted chunk pulled one message it did not hand out. One that ended neither halted nor
        # at its sentinel was cut short by an exception in next_slice, before that slice's pull.
        handed = pulled - 1 if live.halted or pulled >= len(data) else pulled
        if handed >= len(data) - 1:
            info.advance(data[-2].offset() + 1)
            return
        info.advance(data[handed].offset())
        if info.active:  # stopped by the gate: the rest waits for it to open again
            self._keep_rest(info, data[handed:-1])

    def _keep_rest(self, info: PartitionTopicInfo, rest: list[Message]) -> None:
        """Put what a stopped slice did not hand out before the rest of its chunk."""
        pending = self._resume
        if pending is not None and pending[0] is info:
            rest = rest + list(pending[1])
        self._resume = (info, rest)

    def _next_messages(self) -> tuple[PartitionTopicInfo, Sequence[Message]] | None:
        """The next messages to deliver, once the gate lets them through; None at the end."""
        while True:
            if self._resume is not None:
                info, messages = self._resume
                if not info.active:
                    self._resume = None
                    continue
            else:
                taken = self._take()
                if taken is None:
                    return None
                info, messages = taken
                self._resume = taken  # kept if the gate makes us give up waiting
            if not self._gate.usable() and not self._gate.wait(self._timeout):
                raise ConsumerTimeout("delivery paused: ZooKeeper has not confirmed our session within the lease")
            self._resume = None
            if info.active:  # the gate may have been closed for a release
                start = _first_unfinished(messages, info.consumed_offset)
                if start < len(messages):
                    return info, messages[start:] if start else messages

    def _take(self) -> tuple[PartitionTopicInfo, Sequence[Message]] | None:
        while True:
            if self._ended:
                return None
            item = self._queue.take(self._timeout)
            if item is None:
                # operator: take() gives None only when it was given a timeout, so _timeout is a number.
                raise ConsumerTimeout(f"no message within {self._timeout * 1000:.0f} ms")  # type: ignore[operator]
            if item is END:
                self._ended = True
                return None
            chunk: Chunk = item  # type: ignore[assignment]  # the queue holds Chunks and END only
            if chunk.info.active and chunk.messages:
                return chunk.info, chunk.messages

    # ---- batches --------------------------------------------------------------------------------------
    def next_batch(self) -> Sequence[Message]:
        """The rest of the current chunk at once (all from one partition).

        The whole batch counts as consumed when the next batch or message is requested.
        """
        self._settle_batch()
        info = self._current
        live = info.live if info is not None else None
        if info is not None and live is not None:  # take over the rest of the live chunk
            data = live.data
            handed = len(data) - length_hint(live.cursor)  # this thread pulls: none pulled and not handed
            live.halt()
            info.live, self._current, self._fast = None, None, None
            if handed > 0:
                info.advance(data[handed - 1].offset() + 1)
            if handed < len(data) - 1 and info.active:
                self._keep_rest(info, data[handed:-1])
        found = self._next_messages()
        if found is None:
            raise StopIteration
        info, messages = found
        self._batch = (info, messages[-1].offset() + 1)
        return messages

    def _settle_batch(self) -> None:
        batch, self._batch = self._batch, None
        if batch is not None:
            batch[0].advance(batch[1])

    # ---- other threads ----------------------------------------------------------------------------------
    def mark_consumed(self) -> None:
        """Count the last handed-out message (or batch) as finished (commit_offsets())."""
        self._settle_batch()
        info = self._current
        live = info.live if info is not None else None
        if info is None or live is None:
            return
        data = live.data
        pulled = len(data) - length_hint(live.cursor)  # read before `halted`: see below
        if pulled >= len(data):
            info.advance(data[-2].offset() + 1)  # the sentinel: all handed out, and more asked for
        elif pulled > 0:
            # A halted chunk pulls one message it does not hand out. A halt sets `halted` before it
            # empties anything, so if it is unset now, no such pull had happened when `pulled` was read.
            info.advance(data[pulled - 1].offset() + (0 if live.halted else 1))

    def interrupt(self) -> None:
        """Stop the live chunk before its next message (the gate closed or the lease ran out)."""
        info = self._current
        live = info.live if info is not None else None
        if live is not None:
            live.halt()


def _first_unfinished(messages: Sequence[Message], consumed: int) -> int:
    """Index of the first message at or after `consumed` (what a re-fetch after a reset repeats)."""
    if not messages or messages[0].offset() >= consumed:
        return 0
    lo, hi = 0, len(messages)
    while lo < hi:
        mid = (lo + hi) // 2
        if messages[mid].offset() < consumed:
            lo = mid + 1
        else:
            hi = mid
    return lo


__all__ = ["ConsumerIterator", "DeliveryGate", "LeaseGuard"]
