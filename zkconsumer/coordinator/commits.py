"""Commits: offsets written one step at a time under the rebalance lock, Kafka-only ones only while ZooKeeper vouches."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.membership import Membership, State
from zkconsumer.errors import CommitFailed, describe, is_retriable
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger("zkconsumer.coordinator.rebalancer")  # these lines are the rebalancer's
_LEASE_RAN_OUT = "the session lease ran out: ZooKeeper has not confirmed the session recently enough"


class Commits:
    """Every commit of a member: the application's, auto-commit's, the one before a release and the
    final one. Each takes the rebalance lock (shared with the Rebalancer, which holds it for one step
    of an attempt at a time, never across a wait) for at most `wait_s`, the session timeout: a step
    holds it through ZooKeeper calls each bounded by that timeout and through the listener's
    callbacks, and a commit that finds it held longer raises CommitFailed rather than hang.

    ZooKeeper commits are fenced by ZooKeeper itself (our session's fence and the owner node in the
    same transaction). Kafka-side writes (offsets.storage=kafka, with or without dual commit) have
    no such fence, so each is refused while ZooKeeper cannot vouch for what we own
    (`ownership_unconfirmed`): a member whose session expired while its link was down must not
    rewind its successor's offsets with its old positions.

    Example::

        commits = Commits(config, group, membership, assignment, streams, offsets, rebalance_lock)
        commits.commit(retries=5)   # auto-commit
    """

    def __init__(
        self,
        config: ConsumerConfig,
        group: GroupZk,
        membership: Membership,
        assignment: Assignment,
        streams: StreamSet,
        offsets: OffsetStore,
        lock: threading.RLock,
    ) -> None:
        self.config = config
        self.group = group
        self.membership = membership
        self.assignment = assignment
        self.streams = streams
        self.offsets = offsets
        self._lock = lock
        self.wait_s = config.zookeeper_session_timeout_ms / 1000.0
        # The live switch's Kafka commit as a group member, after ZooKeeper took the offsets (fenced).
        self.mirror: Callable[[Mapping[TopicPartition, int], float], None] | None = None

    def commit(self, *, retries: int = 0) -> int:
        """Write the consumed offsets of every owned (or releasing) partition that changed. Each try
        takes the rebalance lock; the back-offs between tries run without it (a refused try often
        waits for a rebalance: the re-fencing, the resolution of a doubt)."""
        written = self.offsets.commit(
            self.assignment.committable, attempts=1 + retries, vouch=self.ownership_unconfirmed, hold=self._step
        )
        self._mirror(self.assignment.committable())
        return written

    def commit_positions(
        self, positions: Mapping[TopicPartition, int], epochs: Mapping[str, int | None] | None = None
    ) -> dict[TopicPartition, bool]:
        """Commit progress tracked outside the iterators (next offset to read), owned partitions only
        (and, with `epochs`, only those claimed in the topic incarnation the positions count in)."""
        with self._step():
            infos = self.assignment.record_positions(positions, epochs)
            self._write(infos)
            mine = {i.key: i for i in infos}
        self._mirror(infos)  # waits on the brokers: not under the lock
        return {key: key in mine and mine[key].committed_offset == offset for key, offset in positions.items()}

    def before_release(self) -> None:
        """Auto-commit's commit before a release (the caller, an attempt, holds the lock): a failure
        is logged and the release goes on; the new owner re-reads from the last commit."""
        if not self.config.auto_commit_enable:
            return
        try:
            # Not mirrored to Kafka here, under the lock (it waits on the brokers): the release carries
            # its partitions to Kafka (Rebalancer._carry_to_kafka), the next commit the others.
            self._write(self.assignment.committable())
        except Exception as exc:  # noqa: BLE001 - release anyway
            if not is_retriable(exc):
                raise
            log.error(
                "%s: commit before release failed (%s); messages since the last commit will be delivered again",
                self.group.consumer_id,
                describe(exc),
            )

    def final(self, infos: list[PartitionTopicInfo]) -> dict[TopicPartition, int]:
        """The shutdown's commit (the caller holds the lock); returns what it could not write. ZooKeeper
        only: the live switch's Kafka copy waits on the brokers, so the member's stop carries it after,
        holding no lock (GroupMember._carry_on_leaving)."""
        try:
            self._write(infos, attempts=1 + self.config.offsets_commit_max_retries)
        except Exception as exc:  # noqa: BLE001 - reported to the caller with what was not written
            log.error("%s: final commit failed: %s", self.group.consumer_id, describe(exc))
        return uncommitted(infos)

    def ownership_unconfirmed(self) -> str | None:
        """Why ZooKeeper cannot vouch for what we own right now (None: it can): the member is not
        registered, kazoo is in another session than the registered one, or the lease ran out (the
        session may have expired while the link was down, and a successor may own our partitions)."""
        why = self.ownership_unconfirmed_on_leaving()
        if why is None and not self.streams.gate.open:
            return _LEASE_RAN_OUT
        return why

    def ownership_unconfirmed_on_leaving(self) -> str | None:
        """The same for the shutdown, which closed the delivery gate: the session and the lease alone."""
        state = self.membership.state
        if state not in (State.CONNECTED, State.SUSPENDED):
            return f"the member is {state.value} in ZooKeeper"
        registered, live = self.group.session, self.group.live_session
        if registered is None or (live is not None and live != registered):
            return "the ZooKeeper session is not the one the member registered in"
        if not self.streams.gate.lease_holds():
            return _LEASE_RAN_OUT
        return None

    @contextlib.contextmanager
    def _step(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=self.wait_s):
            raise CommitFailed(
                f"{self.group.consumer_id}: a rebalance step held the rebalance lock over {self.wait_s:.1f}s; "
                "not committing now",
                sorted(i.key for i in self.assignment.committable()),
            )
        try:
            yield
        finally:
            self._lock.release()

    def _write(self, infos: Iterable[PartitionTopicInfo], attempts: int = 1) -> int:
        """ZooKeeper's write under the caller's lock; the Kafka copy (`_mirror`) is the caller's, after it."""
        return self.offsets.commit(list(infos), attempts=attempts, vouch=self.ownership_unconfirmed)

    def _mirror(self, infos: Iterable[PartitionTopicInfo]) -> None:
        """The live switch's Kafka side: what ZooKeeper holds of ours (the fenced write just made it so),
        only while ZooKeeper vouches for our ownership; best effort (SwitchFollower.mirror)."""
        if self.mirror is None or self.ownership_unconfirmed() is not None:
            return
        self.mirror({i.key: i.committed_offset for i in infos if i.committed_offset >= 0}, self.wait_s)


def uncommitted(infos: Iterable[PartitionTopicInfo]) -> dict[TopicPartition, int]:
    """partition -> consumed offset, of those whose consumed offset is not the committed one."""
    return {
        i.key: i.consumed_offset for i in infos if i.consumed_offset >= 0 and i.consumed_offset != i.committed_offset
    }
