"""The fetcher's routing of consume() batches into stream queues: per-partition chunks, held refusals, pauses."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka import Message as KafkaMessage

from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo
from zkconsumer.consumer.fetch_turns import READER_GRACE
from zkconsumer.consumer.runs import split_runs

Key = tuple[str, int]


class ChunkRouting:
    """Fetcher's routing half (a base of zkconsumer.fetcher.Fetcher; runs on the fetcher thread only).

    A partition's run that its queue refuses is held, and grows behind what came before it; a queue
    with room again wakes the fetcher (`_on_space`), which offers the held chunks again.
    """

    # Set by Fetcher.__init__ (and, for _raw, Fetcher.start).
    _raw: Consumer
    _wake: threading.Event
    _retry: bool
    _reader_turns: bool
    _reader_asked: float
    _batch_size: int
    _hold_bytes: int
    _infos: dict[Key, PartitionTopicInfo]
    _ever_assigned: set[Key]
    _shared_partitions: frozenset[int]
    _held: collections.OrderedDict[Key, list[Message]]
    _held_bytes: dict[Key, int]
    _paused: set[Key]

    if TYPE_CHECKING:

        def _on_message_error(self, m: KafkaMessage) -> None: ...

    def _route(self, messages: list[Message]) -> None:
        """Split a consume() batch into per-partition runs (order kept) and queue one chunk per run.

        The messages themselves are handed on untouched: per message this costs two C calls made
        by map() (error, partition), not Python code; see split_runs.
        """
        infos, held_map, limit = self._infos, self._held, self._batch_size
        # A queue with refused chunks serves them first: new data of its other partitions waits
        # behind them, or partitions beyond queued.max.message.chunks would starve.
        congested = {infos[k].queue for k in held_map if k in infos} if held_map else ()
        to_pause = []
        errors = []
        for run in split_runs(messages, self._shared_partitions):
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
            size = self._held_bytes[key] = self._held_bytes.get(key, 0) + sum(map(len, run))
            if (len(held) >= limit or size >= self._hold_bytes) and key not in self._paused:
                to_pause.append(key)
        if to_pause:
            self._raw.pause([TopicPartition(*k) for k in to_pause])
            self._paused.update(to_pause)
        for m in errors:
            self._on_message_error(m)

    def _on_space(self) -> None:  # queue.on_space: runs on application threads, so only flag and wake
        self._retry = True  # a hint: the fetcher thread also offers held chunks now and then
        # A reader that fetches offers them in its next fetch; without one, wake the fetcher thread.
        if not self._reader_turns or time.monotonic() - self._reader_asked >= READER_GRACE:
            self._wake.set()

    def _retry_held(self) -> None:
        resume = []
        for key in list(self._held):
            held = self._held[key]  # dropped only once queued: a turn cut short here loses nothing
            info = self._infos.get(key)
            if info is None or not info.active:
                self._drop_held(key)  # released: stays paused until remove()/assign()
            elif info.queue.offer(Chunk(info, held)):
                self._drop_held(key)
                if key in self._paused:
                    resume.append(key)
            else:  # last in line: partitions sharing a queue take turns (one C call: no signal between)
                self._held.move_to_end(key)
        if resume:
            self._raw.resume([TopicPartition(*k) for k in resume])
            self._paused.difference_update(resume)

    def _drop_held(self, key: Key) -> None:
        self._held.pop(key, None)
        self._held_bytes.pop(key, None)

    def _forget(self, keys: Iterable[Key]) -> None:
        """Drop held messages and pause state (librdkafka keeps a pause across unassign/assign)."""
        resume = []
        for key in keys:
            self._drop_held(key)
            if key in self._paused:
                self._paused.discard(key)
                resume.append(TopicPartition(*key))
        if resume:
            self._raw.resume(resume)

    def _set_infos(self, infos: dict[Key, PartitionTopicInfo]) -> None:
        self._infos = infos
        # Every partition ever assigned: a late message of one no longer assigned must not merge
        # into the run of another topic's partition with the same number (split_runs).
        if not self._ever_assigned.issuperset(infos):
            self._ever_assigned.update(infos)
            numbers = collections.Counter(p for _, p in self._ever_assigned)
            self._shared_partitions = frozenset(p for p, n in numbers.items() if n > 1)
