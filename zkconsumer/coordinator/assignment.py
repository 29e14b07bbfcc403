"""The single owner of this member's partition state: owned, releasing, positions and incarnations.

Every other piece asks this object. The fetcher and the iterators hold `PartitionTopicInfo`
records it created and only advance the positions that are theirs (fetched_offset, and
consumed_offset through `ConsumerIterator.mark_consumed`); whether a partition may still be
delivered (`info.active`) is changed here alone, under one lock that is never held across I/O.

A partition moves through:

    claimed (owner node created) -> installed (fetching, delivering)
        -> releasing (delivery stopped; owner node still ours; commits still allowed)
        -> released (owner node deleted, confirmed) | lost (the session that owned it ended)

`releasing` is kept until each delete is confirmed, so a failed release (a listener that raises,
a connection lost midway) is retried instead of leaving an owner node nobody will delete.

Any thread may put an installed partition in doubt (`doubt`: its owner node may not be ours any
more): delivery of it stops at once, and it stays installed until the rebalance thread's next
reconcile step reads the node again and drops, deletes or restarts it.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Mapping

from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.partitions import TopicPartition


class Assignment:
    """What this member owns and where each owned partition stands.

    Example::

        assignment = Assignment()
        assignment.install([info])                # after a successful claim
        moving = assignment.begin_release([key])  # delivery of `key` stops now
        ...                                       # commit, listener, delete owner nodes
        assignment.released([key])                # the deletes were confirmed
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owned: dict[TopicPartition, PartitionTopicInfo] = {}
        self._releasing: dict[TopicPartition, PartitionTopicInfo] = {}
        self._orphans: dict[TopicPartition, str] = {}  # our owner nodes we never installed
        # Owner nodes that may not be ours any more (a watch fired, a commit found them foreign):
        # installed ones stopped delivering; one claimed but not installed yet is installed stopped.
        self._doubted: set[TopicPartition] = set()
        self.generation = 0  # bumped whenever the owned set changes
        self.sessions_lost = 0  # bumped by lose_all: a claim made before it belongs to a dead session

    # ---- reads: consistent snapshots, never blocked by I/O --------------------------------------
    def owned(self) -> dict[TopicPartition, str]:
        """key -> thread id of every installed partition."""
        with self._lock:
            return {k: i.thread_id for k, i in self._owned.items()}

    def owned_infos(self) -> dict[TopicPartition, PartitionTopicInfo]:
        with self._lock:
            return dict(self._owned)

    def get(self, key: TopicPartition) -> PartitionTopicInfo | None:
        with self._lock:
            return self._owned.get(key)

    def positions(self) -> dict[TopicPartition, int]:
        """key -> next offset to consume (-1: nothing committed and not yet fetched)."""
        with self._lock:
            return {k: i.consumed_offset for k, i in self._owned.items()}

    def counts_by_topic(self) -> dict[str, int]:
        with self._lock:
            return dict(collections.Counter(t for t, _ in self._owned))

    def releasing(self) -> dict[TopicPartition, str]:
        """Partitions whose owner node we still have to delete: key -> thread id."""
        with self._lock:
            pending = {k: i.thread_id for k, i in self._releasing.items()}
            pending.update(self._orphans)
            return pending

    def committable(self) -> list[PartitionTopicInfo]:
        """Installed and releasing partitions: their owner nodes are still ours, so commits may go on
        (a listener's commit_offsets() in before_releasing_partitions reaches the moving ones). Not
        those in doubt: their owner node may be another member's now, whose offsets ours would rewind."""
        with self._lock:
            return [*(i for k, i in self._owned.items() if k not in self._doubted), *self._releasing.values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._owned)

    # ---- transitions -----------------------------------------------------------------------------
    def install(self, infos: Iterable[PartitionTopicInfo], sessions_lost: int | None = None) -> bool:
        """Claimed and fetching: deliver them. `sessions_lost` is what `sessions_lost` read before the
        claim: if a session ended since, the claim's nodes went with it, so nothing is installed,
        the records stay inactive, and False is returned."""
        infos = list(infos)
        with self._lock:
            if sessions_lost is not None and sessions_lost != self.sessions_lost:
                for info in infos:
                    info.active = False
                return False
            for info in infos:
                self._releasing.pop(info.key, None)
                self._orphans.pop(info.key, None)
                replaced = self._owned.get(info.key)
                if replaced is not None and replaced is not info:
                    replaced.active = False  # iterators holding the old record drop its chunks
                info.active = info.key not in self._doubted  # heard of between its claim and now
                self._owned[info.key] = info
            self.generation += 1
            return True

    def begin_release(self, keys: Iterable[TopicPartition]) -> list[PartitionTopicInfo]:
        """Stop delivering these now; they stay committable until `released()`."""
        with self._lock:
            moved = []
            for key in keys:
                self._doubted.discard(key)
                info = self._owned.pop(key, None)
                if info is not None:
                    info.active = False  # iterators drop what they hold of it, unseen
                    self._releasing[key] = info
                    moved.append(info)
            if moved:
                self.generation += 1
            return moved

    def released(self, keys: Iterable[TopicPartition]) -> None:
        """The owner nodes are gone (deleted by us, or no longer ours): forget them."""
        with self._lock:
            for key in keys:
                self._releasing.pop(key, None)
                self._orphans.pop(key, None)
                self._doubted.discard(key)

    def doubt(self, keys: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Any thread: the owner nodes of these may not be ours any more (deleted or rewritten by
        someone else, found foreign by a commit). Delivery of the installed ones stops now; nothing
        is forgotten (the node may still be ours): the rebalance thread resolves them (`doubted`).
        A key neither installed nor pending deletion is a claim not installed yet: it will be
        installed stopped. Partitions already releasing are left alone (delivery stopped already).
        Returns the keys newly in doubt (a rebalance must follow)."""
        with self._lock:
            fresh = []
            for key in keys:
                if key in self._doubted or key in self._releasing or key in self._orphans:
                    continue
                info = self._owned.get(key)
                if info is not None:
                    info.active = False  # iterators drop what they hold of it, unseen
                self._doubted.add(key)
                fresh.append(key)
            return sorted(fresh)

    def forget_stale_doubts(self) -> None:
        """The rebalance thread, before it claims: a doubt about a partition neither installed nor
        pending deletion was heard while none of our claims was in flight (a late event about a node
        we no longer hold), so it cannot be about a claim of ours: forget it."""
        with self._lock:
            self._doubted = {k for k in self._doubted if k in self._owned}

    def doubted(self) -> list[TopicPartition]:
        """Installed partitions in doubt (stopped), for the rebalance thread to resolve."""
        with self._lock:
            return sorted(k for k in self._doubted if k in self._owned)

    def adopt_orphans(self, nodes: Mapping[TopicPartition, str]) -> list[TopicPartition]:
        """Owner nodes of our session that we do not own or release (a claim whose answer was lost):
        schedule them for deletion. Returns the keys adopted."""
        with self._lock:
            fresh = {k: v for k, v in nodes.items() if k not in self._owned and k not in self._releasing}
            self._orphans.update(fresh)
            return sorted(fresh)

    def stop_delivering(self, keys: Iterable[TopicPartition]) -> None:
        """Delivery must stop now (the fetcher lost them, or their owner node vanished); a rebalance
        then drops or re-claims them."""
        with self._lock:
            for key in keys:
                info = self._owned.get(key)
                if info is not None:
                    info.active = False

    def fence_topic(self, topic: str, epoch: int | None) -> list[TopicPartition]:
        """The topic's node is gone or is another incarnation (czxid `epoch`): positions of ours in
        it mean nothing any more, so stop delivering them at once. Returns the keys fenced."""
        with self._lock:
            fenced = []
            for key, info in self._owned.items():
                if info.topic == topic and info.epoch is not None and info.epoch != epoch and info.active:
                    info.active = False
                    fenced.append(key)
            return fenced

    def inactive(self) -> list[TopicPartition]:
        """Installed but no longer delivering (fenced or stopped): a rebalance must resolve them."""
        with self._lock:
            return sorted(k for k, i in self._owned.items() if not i.active)

    def drop(self, keys: Iterable[TopicPartition]) -> list[PartitionTopicInfo]:
        """Forget installed partitions whose owner node is not ours any more (nothing to delete)."""
        with self._lock:
            keys = list(keys)
            self._doubted.difference_update(keys)
            dropped = [self._owned.pop(k) for k in keys if k in self._owned]
            for info in dropped:
                info.active = False
            if dropped:
                self.generation += 1
            return dropped

    def lose_all(self) -> list[PartitionTopicInfo]:
        """The session that owned everything ended: its owner nodes vanished with it."""
        with self._lock:
            lost = [*self._owned.values(), *self._releasing.values()]
            for info in lost:
                info.active = False
            had = bool(self._owned)
            self._owned, self._releasing, self._orphans = {}, {}, {}
            self._doubted.clear()
            self.sessions_lost += 1
            if had:
                self.generation += 1
            return lost

    def record_positions(
        self, positions: Mapping[TopicPartition, int], epochs: Mapping[str, int | None] | None = None
    ) -> list[PartitionTopicInfo]:
        """Progress tracked outside the iterators (fetch=False): set consumed offsets of what we own
        or are releasing; returns the records updated (others are not ours and are ignored). With
        `epochs` (topic -> incarnation the positions count in), records of another incarnation are
        not ours either: an old topic's position must not land in the new topic's record."""
        with self._lock:
            updated = []
            for key, offset in positions.items():
                info = self._owned.get(key) or self._releasing.get(key)
                if info is not None and epochs is not None and info.epoch != epochs.get(key[0], info.epoch):
                    continue
                if info is not None and offset >= 0:
                    info.consumed_offset = offset
                    updated.append(info)
            return updated
