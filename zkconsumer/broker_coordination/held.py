"""HeldChunks: chunks a full stream queue refused, kept in order per partition, and which partitions to pause."""

from __future__ import annotations

import threading

from zkconsumer.consumer.chunks import Chunk, StreamQueue

# A partition is paused only once this many of its messages wait: librdkafka drops a paused
# partition's prefetched messages and fetches them again on resume, so pausing at every refusal of
# a 2-chunk queue would cost a fetch round trip each time.
HOLD_MAX = 10_000
Key = tuple[str, int]


class HeldChunks:
    """Written by the poll thread (`add`, `offer_all`, `forget`) and by readers (`offer_to`, when a
    queue that refused a chunk has room again); one lock, held for no I/O (offers never block)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Key, list[Chunk]] = {}
        self._paused: set[Key] = set()
        self._drained: set[Key] = set()  # paused partitions with nothing held any more: to resume

    def add(self, key: Key, chunk: Chunk) -> bool:
        """Deliver `chunk` after what is held of its partition; True if the partition must be paused now."""
        with self._lock:
            held = self._held.get(key)
            if held is None:
                if chunk.info.queue.offer(chunk):
                    return False
                held = self._held[key] = []
            held.append(chunk)
            if key in self._paused or sum(len(c.messages) for c in held) < HOLD_MAX:
                return False
            self._paused.add(key)
            return True

    def offer_to(self, queue: StreamQueue) -> None:
        """A reader took a chunk from `queue`: hand it what is held for it, in order."""
        with self._lock:
            for key, chunks in list(self._held.items()):
                if chunks and chunks[0].info.queue is queue:
                    self._offer(key, chunks)

    def offer_all(self) -> list[Key]:
        """Offer everything held (a callback may have come before the refusal); the partitions to resume."""
        with self._lock:
            for key, chunks in list(self._held.items()):
                self._offer(key, chunks)
            resume = sorted(self._drained & self._paused)
            self._paused -= self._drained
            self._drained = set()
            return resume

    def forget(self, keys: list[Key]) -> list[Key]:
        """Revoked or lost partitions: their held chunks are dropped unseen. Returns those of them that
        were paused (to resume: librdkafka keeps a partition's pause across a later assignment)."""
        with self._lock:
            paused = sorted(k for k in keys if k in self._paused)
            for key in keys:
                self._held.pop(key, None)
                self._paused.discard(key)
                self._drained.discard(key)
            return paused

    def _offer(self, key: Key, chunks: list[Chunk]) -> None:
        while chunks and chunks[0].info.queue.offer(chunks[0]):
            chunks.pop(0)
        if not chunks:
            del self._held[key]
            self._drained.add(key)
