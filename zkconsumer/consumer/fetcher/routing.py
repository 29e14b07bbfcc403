"""ChunkRouter: consume() batches into stream queues as per-partition chunks; held refusals, pauses."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable

from confluent_kafka import Consumer, TopicPartition

from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo
from zkconsumer.consumer.fetcher.runs import split_runs

Key = tuple[str, int]


class ChunkRouter:
    """The routing state of the partitions a fetcher fetches, and what moves batches through it.

    Only the holder of the fetcher's turn (turns.ReaderTurns) calls it, with the Consumer of
    the moment (the fetcher renews it for a re-created topic). A partition's run that its queue
    refuses is held, and grows behind what came before it; at `hold_messages` held messages or
    `hold_bytes` of values its partition is paused. A queue with room again sets `retry` (a hint),
    and the held chunks are offered again (`offer_held`).
    """

    def __init__(self, *, hold_messages: int, hold_bytes: int) -> None:
        self.hold_messages = hold_messages
        self.hold_bytes = hold_bytes
        self.infos: dict[Key, PartitionTopicInfo] = {}
        self.held: collections.OrderedDict[Key, list[Message]] = collections.OrderedDict()  # refused, in order
        self.held_bytes: dict[Key, int] = {}  # the sizes of their values
        self.paused: set[Key] = set()
        self.retry = False  # a queue has room again (set by on_space, from application threads)
        self.retried_at = 0.0  # time.monotonic() of the last offer of held chunks
        self.stale = False  # a turn was cut short: `refetch` before routing again
        self._ever_assigned: set[Key] = set()
        self.shared_partitions: frozenset[int] = frozenset()  # numbers that 2+ topics have

    def fetchable(self) -> bool:
        """Some assigned partition is not paused."""
        return len(self.infos) > len(self.paused)

    def route(self, messages: list[Message], consumer: Consumer) -> list[Message]:
        """Split a consume() batch into per-partition runs (order kept) and queue one chunk per run.
        Returns the error messages, for the fetcher's error handling (nearly always none).

        The messages themselves are handed on untouched: per message this costs two C calls made
        by map() (error, partition), not Python code; see split_runs.
        """
        infos, held_map, limit = self.infos, self.held, self.hold_messages
        # A queue with refused chunks serves them first: new data of its other partitions waits
        # behind them, or partitions beyond queued.max.message.chunks would starve.
        congested = {infos[k].queue for k in held_map if k in infos} if held_map else ()
        to_pause = []
        errors: list[Message] = []
        for run in split_runs(messages, self.shared_partitions):
            head = run[0]
            if head.error() is not None:
                errors.extend(run)
                continue
            key = (head.topic(), head.partition())
            info = infos.get(key)
            if info is None or not info.active:
                continue  # stale: fetched before the partition was removed or released
            if head.offset() < info.fetched_offset:  # already routed (a re-fetch)
                run = [x for x in run if x.offset() >= info.fetched_offset]
                if not run:
                    continue
            # fetched_offset moves only once the run is queued or held: a fetch cut short in
            # between (Fetcher.fetch_for) refetches from it and at worst repeats a run.
            held = held_map.get(key)
            if held is not None:
                held.extend(run)  # behind what was refused: one growing chunk keeps the order
            elif info.queue not in congested and info.queue.offer(Chunk(info, run)):
                info.fetched_offset = run[-1].offset() + 1
                continue
            else:
                held = held_map[key] = run
            info.fetched_offset = run[-1].offset() + 1
            # Sizes only on this (rare) path: len(msg) is the value's length, in C.
            size = self.held_bytes[key] = self.held_bytes.get(key, 0) + sum(map(len, run))
            if (len(held) >= limit or size >= self.hold_bytes) and key not in self.paused:
                to_pause.append(key)
        if to_pause:
            consumer.pause([TopicPartition(*k) for k in to_pause])
            self.paused.update(to_pause)
        return errors

    def offer_held(self, consumer: Consumer) -> None:
        """Offer the held chunks to their queues again; resume the partitions that are let through."""
        self.retry, self.retried_at = False, time.monotonic()
        resume = []
        for key in list(self.held):
            held = self.held[key]  # dropped only once queued: a turn cut short here loses nothing
            info = self.infos.get(key)
            if info is None or not info.active:
                self._drop_held(key)  # released: stays paused until remove()/assign()
            elif info.queue.offer(Chunk(info, held)):
                self._drop_held(key)
                if key in self.paused:
                    resume.append(key)
            else:  # last in line: partitions sharing a queue take turns (one C call: no signal between)
                self.held.move_to_end(key)
        if resume:
            consumer.resume([TopicPartition(*k) for k in resume])
            self.paused.difference_update(resume)

    def _drop_held(self, key: Key) -> None:
        self.held.pop(key, None)
        self.held_bytes.pop(key, None)

    def forget(self, keys: Iterable[Key], consumer: Consumer) -> None:
        """Drop held messages and pause state (librdkafka keeps a pause across unassign/assign)."""
        resume = []
        for key in keys:
            self._drop_held(key)
            if key in self.paused:
                self.paused.discard(key)
                resume.append(TopicPartition(*key))
        if resume:
            consumer.resume(resume)

    def set_infos(self, infos: dict[Key, PartitionTopicInfo]) -> None:
        """The partitions fetched from now on."""
        self.infos = infos
        # Every partition ever assigned: a late message of one no longer assigned must not merge
        # into the run of another topic's partition with the same number (split_runs).
        if not self._ever_assigned.issuperset(infos):
            self._ever_assigned.update(infos)
            numbers = collections.Counter(p for _, p in self._ever_assigned)
            self.shared_partitions = frozenset(p for p, n in numbers.items() if n > 1)

    def clear(self) -> None:
        """Nothing fetched any more, and nothing held (the Consumer is closed: nothing to tell it)."""
        self.set_infos({})
        self.held, self.held_bytes, self.paused = collections.OrderedDict(), {}, set()

    def mark_stale(self) -> None:
        """A turn was cut short somewhere in routing: rebuild before routing again (`refetch`)."""
        self.stale = True

    def refetch(self, consumer: Consumer) -> None:
        """Rebuild the routing state after a turn cut short by an exception (a reader's KeyboardInterrupt):
        every partition is fetched again from its first message not queued (the first held one, or
        `fetched_offset`), held messages are dropped and only released partitions stay paused.
        Whatever step the turn was in (routing, offering held chunks, pausing, an offset reset),
        nothing is lost; a chunk queued twice repeats messages below `consumed_offset`, which the
        iterators skip."""
        tps, released = [], []
        for key, info in self.infos.items():
            held = self.held.get(key)
            if held:
                info.fetched_offset = held[0].offset()
            tp = TopicPartition(info.topic, info.partition, info.fetched_offset)
            tps.append(tp)
            if not info.active:  # waits for remove() (see offer_held)
                released.append(tp)
        self.held, self.held_bytes = collections.OrderedDict(), {}
        if tps:
            consumer.assign(tps)
            consumer.resume(tps)  # librdkafka keeps a pause across assign()
        if released:
            consumer.pause(released)
        self.paused = {(tp.topic, tp.partition) for tp in released}
        self.stale = False
