"""Runs rebalances in the legacy order (stop, clear, commit, release, assign, claim, start) and commits."""
from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from confluent_kafka import KafkaException
from kazoo.exceptions import KazooException

from zkconsumer.config import ConsumerConfig
from zkconsumer.fetcher import Fetcher
from zkconsumer.group import GroupZk, RegistrationConflict
from zkconsumer.listener import ConsumerRebalanceFailed, ConsumerRebalanceListener
from zkconsumer.offsets import OffsetStore
from zkconsumer.rebalance import Decision, GroupView, by_topic, decide, member_threads, plan, subscribed_topics
from zkconsumer.stream import PartitionTopicInfo, StreamSet
from zkconsumer.watchdog import find_problems
from zkconsumer.zkdata import ZkDataError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class PartitionFetcher(Protocol):
    """What a rebalance needs from the fetcher (zkconsumer.fetcher.Fetcher, or NoFetcher)."""

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None: ...

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None: ...

    def remove(self, keys: Sequence[TopicPartition]) -> None: ...

    def stop_fetching(self) -> None: ...

    def close(self, timeout: float = 10.0) -> None: ...


class NoFetcher:
    """fetch=False: own partitions without reading them (e.g. a Spark driver whose executors read)."""

    consumer = None

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        pass

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        pass

    def remove(self, keys: Sequence[TopicPartition]) -> None:
        pass

    def stop_fetching(self) -> None:
        pass

    def close(self, timeout: float = 10.0) -> None:
        pass


# Failures that mean "try again later"; anything else is a bug and fails the streams.
# ValueError covers a peer's unusable registration (bad regex, zero streams): Scala fails the
# attempt and retries too.
RETRIABLE = (KazooException, KafkaException, ZkDataError, RegistrationConflict, OSError, TimeoutError,
             RuntimeError, ValueError)


@dataclass
class RebalanceStats:
    succeeded: int = 0
    failed: int = 0
    last_seconds: float = 0.0
    last_error: str | None = None


class Coordinator:
    """Owns this member's partitions: rebalances them and commits their offsets.

    One lock serialises rebalances, commits and shutdown, as Scala's rebalanceLock does.
    """

    def __init__(self, config: ConsumerConfig, consumer_id: str, group: GroupZk, streams: StreamSet,
                 offsets: OffsetStore, make_fetcher: Callable[[str], PartitionFetcher],
                 registration: Callable[[], bytes], listener: ConsumerRebalanceListener) -> None:
        self.config = config
        self.consumer_id = consumer_id
        self.group = group
        self.streams = streams
        self.offsets = offsets
        self._make_fetcher = make_fetcher
        self._registration = registration
        self.listener = listener
        self.lock = threading.RLock()
        self.owned: dict[TopicPartition, PartitionTopicInfo] = {}
        self.fetcher: PartitionFetcher | None = None
        self.generation = 0  # bumped whenever a new set of owned partitions is installed
        self.stats = RebalanceStats()
        self.last_assignment: dict[str, dict[int, str]] = {}
        self.waiting_for_brokers = False
        self.my_topics: set[str] = set()
        self.topic_epochs: dict[str, int | None] = {}  # czxid of each subscribed topic's node, last read
        self._registered_session: int | None = None
        self._shutting_down = threading.Event()

    @property
    def registered_session(self) -> int | None:
        """The ZooKeeper session our member node was created in."""
        return self._registered_session

    # ---- registration ------------------------------------------------------------------------
    def register(self) -> None:
        """(Re-)create our member node; wait out a stale node of a previous session first."""
        self.group.register(self._registration(),
                            wait_for_stale_s=self.config.zookeeper_session_timeout_ms / 1000.0)
        self._registered_session = self.group.session_id
        self._extend_lease(time.monotonic())
        log.info("%s registered in group %s", self.consumer_id, self.config.group_id)

    def renew_lease(self) -> None:
        """A confirmed round trip in our session lets delivery go on (see DeliveryGate)."""
        sent = time.monotonic()
        if self.group.session_id == self._registered_session and self.group.is_registered():
            self._extend_lease(sent)

    def _extend_lease(self, confirmed_at: float) -> None:
        # 80%: the server may count the session timeout from a little before our request.
        self.streams.gate.renew(confirmed_at + 0.8 * self.config.zookeeper_session_timeout_ms / 1000.0)

    def _ensure_registered(self) -> None:
        # A new session (expiry) or a deleted node (reference §3.4): register again; owner
        # nodes of the old session are gone, so forget them without deleting anything.
        if self.group.session_id != self._registered_session or not self.group.is_registered():
            if self.owned:
                log.warning("%s: session changed or member node missing; dropping %d partitions",
                            self.consumer_id, len(self.owned))
                self._stop_and_clear()
                self.owned = {}
            self.register()
        # Whatever was delivered under the old session is gone from the queues: safe to deliver.
        self.streams.gate.reopen()

    # ---- ZooKeeper connection state (called on kazoo's thread: no blocking, no ZooKeeper calls) ---
    def connection_suspended(self) -> None:
        """Hold delivery: a peer may take our partitions if our session expires meanwhile."""
        self.streams.gate.close()

    def connection_restored(self) -> bool:
        """Reopen delivery if the session survived; False means a rebalance must re-register."""
        if self.group.session_id is not None and self.group.session_id == self._registered_session:
            self._extend_lease(time.monotonic())  # the server just accepted the session again
            self.streams.gate.reopen()
            return True
        return False

    # ---- rebalance -----------------------------------------------------------------------------
    def synced_rebalance(self, reason: str) -> bool:
        """Up to rebalance.max.retries attempts; True on success (or when shutting down)."""
        with self.lock:
            began = time.monotonic()
            attempts = self.config.rebalance_max_retries
            for attempt in range(1, attempts + 1):
                if self._shutting_down.is_set():
                    return True
                log.info("%s: rebalance attempt %d/%d (%s)", self.consumer_id, attempt, attempts, reason)
                try:
                    if self._attempt():
                        self.stats.succeeded += 1
                        self.stats.last_seconds = time.monotonic() - began
                        self.stats.last_error = None
                        return True
                    error = "another member still owns some of our partitions"
                except RETRIABLE as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    log.warning("%s: rebalance attempt %d failed: %s", self.consumer_id, attempt, error)
                self.stats.last_error = error
                if not self.config.rebalance_incremental:
                    self._stop_and_clear()  # Scala's full stop; incrementally, kept partitions go on
                self._commit_quietly()
                # Jittered: members that failed on the same conflict should not retry in lockstep.
                if self._shutting_down.wait(self.config.rebalance_backoff_ms / 1000.0 * random.uniform(1.0, 1.5)):
                    return True
            self.stats.failed += 1
            failure = ConsumerRebalanceFailed(
                f"{self.consumer_id} can't rebalance after {attempts} retries ({self.stats.last_error}); "
                f"retrying with back-off up to {self.config.rebalance_recheck_ms} ms, never giving up")
            log.error("%s", failure)
            self.listener.on_rebalance_failed(failure)
            return False

    def _attempt(self) -> bool:
        decision = self._decide()
        if decision is None:
            return True  # no brokers: nothing to do until /brokers/ids changes
        incremental = self.config.rebalance_incremental
        if incremental:
            self._forget_lost()
        steps = plan({k: i.thread_id for k, i in self.owned.items()}, decision.mine,
                     stop_the_world=not incremental)
        if incremental:
            self._release_moved(steps.release)                               # 1-5 for moved only
        else:
            self._stop_and_clear()                                           # 1-2 stop, clear
            self._commit_quietly()                                           # 3 commit
            self.listener.before_releasing_partitions(by_topic(self.owned))  # 4
            self.group.release(steps.release)                                # 5 release
            for info in self.owned.values():
                info.active = False
            self.owned = {}
        if self._shutting_down.is_set():
            return True
        conflicts = self.group.claim(steps.claim)                            # 9 claim, all or nothing
        if conflicts:
            log.info("%s: %d partitions still owned by others (e.g. %s-%d); backing off",
                     self.consumer_id, len(conflicts), *conflicts[0])
            return False
        # Offsets are read only once the claim holds (Scala reads them first, step 7): the old
        # owner commits before it releases, so now we cannot see a commit older than its last.
        try:
            offsets = self.offsets.read(steps.claim)
        except BaseException:
            self.group.release(steps.claim)
            raise
        infos = {key: PartitionTopicInfo(key[0], key[1], thread, self.streams.queue_for(key[0], thread),
                                         offsets[key], self.topic_epochs.get(key[0]))
                 for key, thread in steps.claim.items()}
        self.last_assignment = decision.by_topic()                           # 10 listener
        self.listener.before_starting_fetchers(self.consumer_id, self.last_assignment)
        assert self.fetcher is not None
        try:                                                                 # 11 start
            if incremental:
                if infos:
                    self.fetcher.add(list(infos.values()))
            else:
                self.fetcher.assign(list(infos.values()))
        except BaseException:
            # Not fetching them, so not ours: give them back rather than own them idle.
            for info in infos.values():
                info.active = False
            self.group.release(steps.claim)
            raise
        self.owned.update(infos)                                             # install
        self.generation += 1
        log.info("%s owns %d partitions (%d new, %d released, %d kept): %s", self.consumer_id, len(self.owned),
                 len(infos), len(steps.release), len(steps.keep),
                 ", ".join(f"{t}-{p}" for t, p in sorted(self.owned)) or "none")
        return True

    def _decide(self) -> Decision | None:
        """Read the group and compute the assignment every member computes (None: no brokers)."""
        self._ensure_registered()
        registrations, broken = self.group.read_registrations()
        for cid, err in sorted(broken.items()):
            # Scala fails every member here (§1.5); we all skip the same member instead.
            log.warning("ignoring group member %s: unreadable registration (%s)", cid, err)
        if self.consumer_id not in registrations:
            raise RuntimeError(f"own registration {self.group.member_path} is missing or unreadable")
        brokers = self.group.brokers()
        if not brokers:
            log.warning("%s: no brokers registered; waiting for /brokers/ids to change", self.consumer_id)
            self.waiting_for_brokers = True
            return None
        self.waiting_for_brokers = False
        self._ensure_fetcher(brokers)
        compat = self.config.compat
        threads = member_threads(GroupView(registrations, tuple(self.group.all_topics())),
                                 exclude_internal=self.config.exclude_internal_topics, compat=compat)
        self.my_topics = set(threads[self.consumer_id])
        topics = self.group.topics(subscribed_topics(threads))
        self.topic_epochs = {t: epoch for t, (_, epoch) in topics.items()}
        partitions = {t: parts for t, (parts, _) in topics.items()}
        return decide(self.consumer_id, self.config.partition_assignment_strategy, threads, partitions, compat)

    def _forget_lost(self) -> None:
        """Forget kept partitions we cannot vouch for, so this attempt claims them afresh.

        Their owner node vanished (deleted by a tool, say) or the fetcher lost them; a claim
        of a node that is still ours is a no-op, so nothing is written for the second case.
        Partitions of an older incarnation of their topic (deleted, maybe created again) are
        released without a commit: their positions mean nothing in the new topic, and the
        claim that follows reads the offsets afresh (auto.offset.reset applies).
        """
        stale = sorted(k for k, i in self.owned.items()
                       if not i.active or i.epoch != self.topic_epochs.get(k[0], i.epoch))
        if stale:
            log.warning("%s: topic deleted or re-created under us; dropping %s without committing",
                        self.consumer_id, ", ".join(f"{t}-{p}" for t, p in stale))
            released = {i.key: i.thread_id for i in self._stop(stale)}
            self.group.release(released)
        lost = set(self.group.not_ours({k: i.thread_id for k, i in self.owned.items()}))
        if isinstance(self.fetcher, Fetcher):
            lost |= set(self.owned) - self.fetcher.assigned()
        if lost:
            log.warning("%s: %s no longer owned or fetched as recorded; claiming again", self.consumer_id,
                        ", ".join(f"{t}-{p}" for t, p in sorted(lost)))
            self._stop(sorted(lost))

    def _release_moved(self, release: Mapping[TopicPartition, str]) -> None:
        """Stop delivering, commit and release only the partitions that move to another member.

        The fetcher is told last: waiting for it would widen the window in which a Scala
        joiner (which reads offsets before it claims) could read our previous commit.
        """
        infos = [self.owned.pop(k) for k in release if k in self.owned]
        for info in infos:
            info.active = False
        if self.config.auto_commit_enable and infos:
            self._commit_quietly(infos)
        self.listener.before_releasing_partitions(by_topic(release))
        self.group.release(release)
        if infos and self.fetcher is not None:
            self.fetcher.remove([i.key for i in infos])

    def _stop(self, keys: list[TopicPartition]) -> list[PartitionTopicInfo]:
        """Stop fetching and delivering these partitions and forget them (no ZooKeeper writes)."""
        infos = [self.owned.pop(k) for k in keys if k in self.owned]
        if infos and self.fetcher is not None:
            self.fetcher.remove([i.key for i in infos])
        for info in infos:
            info.active = False  # iterators drop their queued chunks of these unseen
        return infos

    def _ensure_fetcher(self, brokers: list) -> None:  # type: ignore[type-arg]
        if self.fetcher is None:
            addresses = [b.plaintext_address() for b in brokers]
            bootstrap = ",".join(f"{h}:{p}" for h, p in (a for a in addresses if a))
            if not bootstrap:
                raise RuntimeError("no broker has a PLAINTEXT endpoint (the legacy consumer needs one)")
            self.fetcher = self._make_fetcher(bootstrap)

    def _stop_and_clear(self) -> None:
        """Stop fetching and drop queued data, so nothing of a released partition is delivered."""
        if self.fetcher is not None:
            self.fetcher.stop_fetching()
        for info in self.owned.values():
            info.active = False  # the iterators drop their current chunk of these
        self.streams.clear()

    def topic_epoch_seen(self, topic: str, epoch: int | None) -> None:
        """A watch saw the topic's node (epoch: its czxid, None if deleted): on kazoo's thread.

        Only flags: partitions of an older incarnation stop delivering at once, before the
        rebalance this also triggers drops and re-claims them (see _forget_lost).
        """
        for info in list(self.owned.values()):
            if info.topic == topic and info.epoch is not None and info.epoch != epoch:
                info.active = False

    # ---- health --------------------------------------------------------------------------------
    def health_problems(self) -> list[str]:
        """Ownership problems in our topics right now (see watchdog.find_problems)."""
        if self._shutting_down.is_set() or not self.last_assignment:
            return []
        members = set(self.group.member_ids())
        partitions = {t: parts.keys() for t, parts in self.last_assignment.items() if t in self.my_topics}
        owners = {t: self.group.owners(t) for t in partitions}
        with self.lock:
            owned = set(self.owned)
            fetcher = self.fetcher
            fetched = fetcher.assigned() if isinstance(fetcher, Fetcher) else None
        return find_problems(partitions, owners, members, owned, fetched)

    # ---- commits -------------------------------------------------------------------------------
    def commit(self, *, retries: int = 0) -> int:
        """Write the consumed offsets of every owned partition that changed."""
        with self.lock:
            return self.offsets.commit(self.owned.values(), attempts=1 + retries)

    def commit_positions(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, bool]:
        """Commit progress tracked outside the iterators (next offset to read), owned partitions only."""
        with self.lock:
            infos = []
            for key, offset in positions.items():
                info = self.owned.get(key)
                if info is not None and offset >= 0:
                    info.consumed_offset = offset
                    infos.append(info)
            self.offsets.commit(infos)
            return {key: key in self.owned and self.owned[key].committed_offset == offset
                    for key, offset in positions.items()}

    def _commit_quietly(self, infos: Sequence[PartitionTopicInfo] | None = None) -> None:
        infos = list(self.owned.values()) if infos is None else infos
        if not self.config.auto_commit_enable or not infos:
            return
        try:
            written = self.offsets.commit(infos)
            log.debug("%s: wrote %d changed offsets (%s)", self.consumer_id, written, ", ".join(
                f"{i.topic}-{i.partition}={i.committed_offset}" for i in infos))
        except Exception as exc:  # noqa: BLE001 - release anyway; the new owner re-reads from the last commit
            log.warning("%s: commit before release failed (%s); messages since the last commit "
                        "will be delivered again", self.consumer_id, exc)

    # ---- shutdown ------------------------------------------------------------------------------
    def begin_shutdown(self) -> None:
        """Make a running rebalance give up at its next step (KAFKA-1848)."""
        self._shutting_down.set()

    def shutdown(self) -> None:
        """Stop fetching, end the iterators, commit (if auto-commit), close the fetcher."""
        self._shutting_down.set()
        with self.lock:
            if self.fetcher is not None:
                self.fetcher.stop_fetching()
            for info in self.owned.values():
                info.active = False  # iterators stop now; undelivered messages go to the next owner
            self.streams.close()
            self._commit_quietly()
            if self.fetcher is not None:
                self.fetcher.close()
