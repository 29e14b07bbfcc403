"""Our offset nodes under /consumers/<group>/offsets: read them, and write them only while we own
the partition (the owner node's version and our session fence checked in the same transaction).

GroupZk holds one OffsetNodes and delegates its offset methods here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.protocol.states import ZnodeStat

from zkconsumer.errors import CommitFailed
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.fence import SessionFence
from zkconsumer.zookeeper.owner_nodes import OwnerNodes
from zkconsumer.zookeeper.signals import OwnershipSignals

log = logging.getLogger(__name__)

__all__ = ["OffsetNodes", "offset_predates_topic"]


def offset_predates_topic(offset_stat: ZnodeStat, topic_epoch: int | None) -> bool:
    """Whether an offset node was last written before the topic's node (czxid `topic_epoch`) was
    created: it then belongs to a deleted incarnation of the topic and is no valid offset."""
    return topic_epoch is not None and offset_stat.mzxid < topic_epoch


class OffsetNodes:
    """One member's offset nodes of `/consumers/<group>/offsets`, every write fenced by owner node and registration.

    Built by GroupZk, which passes its owner nodes, its fence and its folder memo. Example::

        written = group.offset_nodes.commit({("orders", 0): 42}, {("orders", 0): "billing_host-...-0"})
    """

    def __init__(
        self,
        io: ZkIO,
        group_id: str,
        *,
        owner_nodes: OwnerNodes,
        fence: Callable[[], SessionFence],
        ensure_folder: Callable[[str], None],
        forget_folder: Callable[[str], None],
        signals: OwnershipSignals,
        acl: list[Any] | None = None,
    ) -> None:
        self.io = io
        self.client = io.client
        self.group_id = group_id
        self.acl = acl  # of offset nodes (ZkAuth.node_acl); None: open
        self._owner_nodes = owner_nodes
        self._fence = fence  # what every write is fenced on (SessionLost before registration)
        self._ensure_folder = ensure_folder  # creates a folder once (GroupZk's memo of existing folders)
        self._forget_folder = forget_folder  # a folder was deleted under us: create it again next time
        self.signals = signals  # a partition found not ours, a refused fence: the member acts on it

    def read(self, keys: Iterable[TopicPartition], topic_epochs: Mapping[str, int | None]) -> dict[TopicPartition, int]:
        """Committed offsets; -1 where none exists, or where it predates the topic itself.

        Offset nodes outlive a deleted topic; one last written before the current topic node
        was created (`topic_epochs`: topic -> czxid of its node, cluster.ClusterMetadata) belongs
        to the old incarnation, and resuming from it would silently skip the new topic's first
        messages, so it counts as absent (auto.offset.reset applies).
        """
        return {key: offset for key, (offset, _version) in self.read_versioned(keys, topic_epochs).items()}

    def read_versioned(
        self, keys: Iterable[TopicPartition], topic_epochs: Mapping[str, int | None]
    ) -> dict[TopicPartition, tuple[int, int | None]]:
        """key -> (committed offset as `read` gives it, the offset node's version; None: no node),
        both from one read: what a later compare-and-set write (zookeeper/guarded_write.py) expects to find."""
        keys = list(keys)
        found = self.io.many(
            ((k, self.client.get_async(znodes.offset_path(self.group_id, *k))) for k in keys), "read offsets"
        )
        out: dict[TopicPartition, tuple[int, int | None]] = {}
        for key, answer in found.items():
            path = znodes.offset_path(self.group_id, *key)
            if answer is None:
                out[key] = (-1, None)
                continue
            data, stat = answer
            if offset_predates_topic(stat, topic_epochs.get(key[0])):
                log.warning("%s was committed before topic %s was (re)created; ignoring it", path, key[0])
                out[key] = (-1, stat.version)
                continue
            out[key] = (znodes.decode_offset(data, path), stat.version)
        return out

    def commit(
        self, offsets: Mapping[TopicPartition, int], owners: Mapping[TopicPartition, str], *, attempts: int = 3
    ) -> dict[TopicPartition, bool]:
        """Write each offset only while we own the partition (owner check in the same multi).

        Returns key -> written; False means the partition is no longer ours (fenced off). Scala
        writes unconditionally; fencing keeps a member that lost its partitions from overwriting
        the new owner's progress. A missing parent is re-created; a write that keeps losing
        races raises CommitFailed naming the partitions. An owner node found not ours, by the read
        or by the write's own check, is reported (OwnershipSignals.doubt): delivery of it stops.
        """
        results: dict[TopicPartition, bool] = {}
        pending = dict(offsets)
        for _ in range(max(1, attempts)):  # the offset node or its parent may appear or vanish under us
            if not pending:
                break
            # Three pipelined rounds for all partitions (owner nodes, offset nodes, the fenced
            # writes), not three round trips each: a release commits every moving partition.
            stats = self._owner_nodes.stats_if_ours({k: owners[k] for k in pending})
            foreign = sorted(k for k, stat in stats.items() if stat is None)
            for key in foreign:
                log.warning(
                    "not committing %s-%d=%d: %s is no longer ours",
                    key[0],
                    key[1],
                    pending.pop(key),
                    znodes.owner_path(self.group_id, *key),
                )
                results[key] = False
            self.signals.doubt(foreign, "a commit found the owner nodes of " + partitions_text(foreign) + " not ours")
            present = self.io.many(
                ((k, self.client.exists_async(znodes.offset_path(self.group_id, *k))) for k in pending),
                "read offset nodes",
            )
            for topic in sorted({k[0] for k, stat in present.items() if stat is None}):
                self._ensure_folder(znodes.offsets_path(self.group_id, topic))
            fence = self._fence()
            sent = [
                (key, self._fenced_offset_write(fence, key, offset, stats[key], present[key] is not None))
                for key, offset in pending.items()
            ]
            for key, answer in sent:
                what = f"commit {znodes.offset_path(self.group_id, *key)}"
                outcome = self.io.wait(answer, what)
                if fence.refused(outcome):
                    raise self._refused(fence, outcome, what)
                if not any(isinstance(r, Exception) for r in outcome):
                    results[key] = True
                    del pending[key]
                elif isinstance(outcome[1], (BadVersionError, NoNodeError)):  # the owner node changed since our read
                    owner = znodes.owner_path(self.group_id, *key)
                    self.signals.doubt([key], f"{owner} changed between a commit's read and its write")
                elif any(isinstance(r, NoNodeError) for r in outcome):
                    self._forget_folder(znodes.offsets_path(self.group_id, key[0]))  # deleted under us
        if pending:
            raise CommitFailed(
                "could not write offsets of " + partitions_text(pending) + f" in {attempts} attempts", list(pending)
            )
        return results

    def _fenced_offset_write(
        self, fence: SessionFence, key: TopicPartition, offset: int, owner: ZnodeStat, exists: bool
    ) -> Any:
        """Send (not wait for) one multi: our registration and our owner node unchanged, and the
        offset written."""
        path = znodes.offset_path(self.group_id, *key)
        txn = self.client.transaction()
        fence.guard(txn)
        txn.check(znodes.owner_path(self.group_id, *key), owner.version)
        if exists:
            txn.set_data(path, znodes.encode_offset(offset))
        else:
            txn.create(path, znodes.encode_offset(offset), acl=self.acl)
        return txn.commit_async()

    def _refused(self, fence: SessionFence, results: list[Any], what: str) -> Exception:
        """A write refused on our fence: say so to whoever re-registers, and return what to raise."""
        error = fence.lost(what, results)
        self.signals.refused(str(error))
        return error

    def withdraw(self, key: TopicPartition, offset: int, thread_id: str) -> bool:
        """Delete the offset node if it still holds `offset` and we still own the partition (one multi)."""
        owner_path = znodes.owner_path(self.group_id, *key)
        offset_path = znodes.offset_path(self.group_id, *key)
        owner = self._owner_nodes.stat_if_ours(owner_path, thread_id)
        if owner is None:
            self.signals.doubt([key], f"withdrawing {offset_path} found {owner_path} not ours")
            return False
        try:
            data, stat = self.io.get(offset_path)
        except NoNodeError:
            return False
        if data != znodes.encode_offset(offset):
            return False
        fence = self._fence()
        txn = self.client.transaction()
        fence.guard(txn)
        txn.check(owner_path, owner.version)
        txn.delete(offset_path, version=stat.version)
        results = self.io.commit(txn, f"withdraw {offset_path}")
        if fence.refused(results):
            raise self._refused(fence, results, f"withdraw {offset_path}")
        return not any(isinstance(r, Exception) for r in results)
