"""Carries out rebalance attempts (decide, release, claim, start fetching) and offset commits, one at a time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from zkconsumer.cluster.broker_nodes import BrokerInfo
from zkconsumer.cluster.metadata import ClusterMetadata, bootstrap_servers, no_endpoint_message
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.partition_fetcher import PartitionFetcher
from zkconsumer.consumer.stream import PartitionTopicInfo, StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.linger import ReleaseLinger
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.peers import IgnoredPeerReporter, evaluate_peers
from zkconsumer.coordinator.plan import Decision, decide, plan, subscribed_topics
from zkconsumer.coordinator.reconcile import reconcile_owned
from zkconsumer.coordinator.retries import Outcome, RebalanceStats, run_attempts
from zkconsumer.coordinator.watchdog import OwnershipCheck
from zkconsumer.errors import (
    BrokersUnavailable,
    SessionLost,
    ZooKeeperUnavailable,
    describe,
    is_retriable,
)
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.partitions import by_topic, partitions_text
from zkconsumer.zookeeper.client import Deadline
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class Rebalancer:
    """Runs rebalance attempts in the legacy order and commits offsets, never both at once.

    The lock here serialises attempts, commits and shutdown (Scala's rebalanceLock); readers of
    what we own ask the Assignment instead and are never blocked by it.
    """

    def __init__(
        self,
        config: ConsumerConfig,
        group: GroupZk,
        cluster: ClusterMetadata,
        membership: Membership,
        assignment: Assignment,
        streams: StreamSet,
        offsets: OffsetStore,
        make_fetcher: Callable[[str], PartitionFetcher],
        listener: ConsumerRebalanceListener,
    ) -> None:
        self.config = config
        self.consumer_id = group.consumer_id
        self.group = group
        self.cluster = cluster
        self.membership = membership
        self.assignment = assignment
        self.streams = streams
        self.offsets = offsets
        self._make_fetcher = make_fetcher
        self.listener = listener
        self._lock = threading.RLock()
        self.fetcher: PartitionFetcher | None = None
        self.stats = RebalanceStats()
        self._last_decision: Decision | None = None
        self._last_by_topic: tuple[Decision | None, dict[str, dict[int, str]]] = (None, {})
        self.my_topics: set[str] = set()
        self.topic_epochs: dict[str, int | None] = {}
        self.peers = IgnoredPeerReporter()
        self._stopping = threading.Event()
        self._decided_with: set[str] | None = None  # the members the last decision was computed from
        self._close_size_warned = False  # see _check_close_size
        self.linger = ReleaseLinger(group, config.release_linger_ms / 1000.0, self._stopping)
        self._ownership_check = OwnershipCheck(self.consumer_id, group, assignment, membership, self._stopping)

    # ---- rebalance -----------------------------------------------------------------------------
    def synced_rebalance(self, reason: str) -> bool:
        """Up to rebalance.max.retries attempts under the rebalance lock (retries.run_attempts);
        True on success (or when stopping). A failure that is not retriable (a bug, a listener's own
        exception) is raised: the caller takes the member out."""
        with self._lock:
            return run_attempts(
                self._attempt,
                reason,
                consumer_id=self.consumer_id,
                config=self.config,
                listener=self.listener,
                stats=self.stats,
                group=self.group,
                stopping=self._stopping,
            )

    def _attempt(self) -> Outcome:
        """One attempt, always in this order: release what moves away, claim, start what was claimed.

        Every owner node the attempt creates is, when it returns or raises, installed, pending
        deletion (an orphan), or was refused by ZooKeeper (the session fence): see `_claim_and_start`.
        """
        self.membership.ensure_registered()
        sessions_lost = self.assignment.sessions_lost  # a LOST from here on voids this attempt's claim
        decision = self._decide()
        if decision is None:
            return Outcome(done=True, waiting_for_brokers=True)
        self._reconcile()
        incremental = self.config.rebalance_incremental
        steps = plan(self.assignment.owned(), decision.mine, stop_the_world=not incremental)
        self._release(steps.release, stop_the_world=not incremental, new_owners=decision.group)
        self._finish_releases()
        if self._stopping.is_set():
            return Outcome(done=True)
        # All or nothing as Scala claims; an incremental member takes what is free at once and
        # starts it, waiting only for the partitions others still hold.
        claimed, blocked = self._claim_and_start(steps.claim, sessions_lost, partial=incremental)
        if blocked:
            log.info(
                "%s: claimed %d partitions; %d still owned by others (e.g. %s-%d), %s",
                self.consumer_id,
                len(claimed),
                len(blocked),
                *blocked[0],
                "waiting for them" if incremental else "backing off",
            )
            return Outcome(done=False, blocked=tuple(blocked), claimed=len(claimed), released=len(steps.release))
        owned = self.assignment.owned()
        self._check_close_size(owned)
        log.info(
            "%s owns %d partitions (%d new, %d released, %d kept): %s",
            self.consumer_id,
            len(owned),
            len(steps.claim),
            len(steps.release),
            len(steps.keep),
            partitions_text(owned) or "none",
        )
        return Outcome(done=True, claimed=len(steps.claim), released=len(steps.release), kept=len(steps.keep))

    def _check_close_size(self, owned: Mapping[TopicPartition, str]) -> None:
        """Warn (once per crossing) when closing our session would write a transaction a ZooKeeper
        server with the configured jute.maxbuffer cannot read back after a restart."""
        limit = self.config.zookeeper_jute_maxbuffer
        size = self.group.close_size(owned)
        heavy = size > limit
        if heavy and not self._close_size_warned:
            log.warning(
                "%s holds %d owner nodes: the transaction that closes its session will weigh %d bytes, over "
                "zkconsumer.zookeeper.jute.maxbuffer (%d). ZooKeeper 3.6+ servers write it whole and read their "
                "log back only up to jute.maxbuffer + zookeeper.jute.maxbuffer.extrasize (2 x jute.maxbuffer by "
                "default): raise those on every server, or spread the partitions over more members "
                "(ZOOKEEPER-4306; docs/configuration.md)",
                self.consumer_id,
                len(owned),
                size,
                limit,
            )
        self._close_size_warned = heavy

    def _decide(self) -> Decision | None:
        """Read the group (arming every watch with the read it guards) and compute the assignment."""
        m = self.membership
        registrations, unreadable = self.group.read_registrations(watch=m.on_members_changed)
        self._decided_with = set(registrations) | set(unreadable)
        m.waiting_for_brokers = True  # before the read: a broker arriving right after it must trigger
        brokers = self.cluster.brokers(watch=m.on_brokers_changed)
        if not brokers:
            log.warning("%s: no brokers registered; waiting for /brokers/ids to change", self.consumer_id)
            return None
        self._ensure_fetcher(brokers)  # no fitting endpoint: keep waiting for /brokers/ids to change
        m.waiting_for_brokers = False
        compat = self.config.compat
        wildcard = any(r.pattern != "static" for r in registrations.values())
        all_topics = self.cluster.all_topics(watch=m.on_topic_list_changed if wildcard else None)
        view = evaluate_peers(
            registrations,
            unreadable,
            all_topics,
            own_id=self.consumer_id,
            group_id=self.config.group_id,
            exclude_internal=self.config.exclude_internal_topics,
            compat=compat,
        )
        self.peers.report(view.ignored)
        self.my_topics = set(view.threads[self.consumer_id])
        topics = self.cluster.topics(subscribed_topics(view.threads), watch=m.on_topic_changed)
        self.topic_epochs = {t: epoch for t, (_, epoch) in topics.items()}
        partitions = {t: parts for t, (parts, _) in topics.items()}
        decision = decide(self.consumer_id, self.config.partition_assignment_strategy, view.threads, partitions, compat)
        self._last_decision = decision
        return decision

    @property
    def last_assignment(self) -> dict[str, dict[int, str]]:
        """The group's assignment of the last attempt, topic -> partition -> thread id (built when
        asked: attempts outnumber the watchdog's checks and the listener's calls)."""
        decision = self._last_decision
        cached_for, by_topic = self._last_by_topic
        if decision is not cached_for:
            by_topic = decision.by_topic() if decision is not None else {}
            self._last_by_topic = (decision, by_topic)
        return by_topic

    def _reconcile(self) -> None:
        """Resolve owned partitions we can no longer vouch for before planning (reconcile.reconcile_owned)."""
        reconcile_owned(self.assignment, self.group, self.fetcher, self.topic_epochs, self.consumer_id)

    def _release(
        self, release: Mapping[TopicPartition, str], *, stop_the_world: bool, new_owners: Mapping[TopicPartition, str]
    ) -> None:
        """Stop delivering, commit, tell the listener; the owner nodes go in _finish_releases."""
        if stop_the_world and self.fetcher is not None:
            self.fetcher.stop_fetching()
        self.assignment.begin_release(release)
        if stop_the_world:
            self.streams.clear()  # after begin_release: nothing queued of them may be handed out
        pending = self.assignment.releasing()  # also what an earlier failed attempt left pending
        if pending:
            self._commit_quietly()
        if release:
            self.listener.before_releasing_partitions(by_topic(release))  # where manual committers commit
        if pending:
            self.linger.handing_over((new_owners[k] for k in pending if k in new_owners), self._decided_with)

    def _finish_releases(self) -> None:
        """Delete every owner node still pending (this attempt's and any earlier failed one's)."""
        pending = self.assignment.releasing()
        if not pending:
            return
        if not self.linger.wait():
            return  # stopping: the nodes go with the session, after the shutdown's own linger
        confirmed = self.group.release(pending)
        self.assignment.released(confirmed)
        if self.fetcher is not None and confirmed:
            self.fetcher.remove(confirmed)
        left = sorted(set(pending) - set(confirmed))
        if left:
            raise ZooKeeperUnavailable(
                f"owner nodes of {partitions_text(left)} changed while being released; trying again"
            )

    def _claim_and_start(
        self, owners: Mapping[TopicPartition, str], sessions_lost: int, *, partial: bool
    ) -> tuple[dict[TopicPartition, str], list[TopicPartition]]:
        """Create our owner nodes, then start and install what was claimed; returns (claimed, still
        held by others). Unless `partial`, all or nothing: a held node means nothing is claimed.

        Whatever fails after a create may have reached ZooKeeper is adopted as nodes to delete,
        on this (the rebalance) thread: a claim that raised (its answer lost), a start that failed
        (offsets, the listener, the fetcher), and an install refused because the session ended
        meanwhile. The session fence makes ZooKeeper refuse a claim sent in any session but the
        registered one, so no node of ours outlives this without being installed or pending.
        """
        try:
            held = self.group.claim(owners, partial=partial)
        except BaseException:
            self.assignment.adopt_orphans(owners)  # some nodes may exist: delete them next time
            raise
        claimed = {} if held and not partial else {k: t for k, t in owners.items() if k not in set(held)}
        if claimed or not held:  # an attempt that ends with nothing new still tells the listener
            self._start(claimed, sessions_lost)
        return claimed, held

    def _start(self, claim: Mapping[TopicPartition, str], sessions_lost: int) -> None:
        """Read offsets (only now: the old owner committed before it released), start fetching, install.

        On any failure, or if the session ended since the attempt began, the new records are made
        inactive (chunks a late fetcher command still queues are dropped unseen) and the claimed
        nodes are scheduled for deletion (those of an ended session are gone already: the next
        release confirms that and forgets them).
        """
        infos: list[PartitionTopicInfo] = []
        try:
            offsets = self.offsets.read(claim)
            infos = [
                PartitionTopicInfo(
                    key[0],
                    key[1],
                    thread,
                    self.streams.queue_for(key[0], thread),
                    offsets[key],
                    self.topic_epochs.get(key[0]),
                )
                for key, thread in claim.items()
            ]
            self.listener.before_starting_fetchers(self.consumer_id, self.last_assignment)
            assert self.fetcher is not None
            if self.config.rebalance_incremental:
                if infos:
                    self.fetcher.add(infos)
            else:
                self.fetcher.assign(infos)
            if not self.assignment.install(infos, sessions_lost):
                raise SessionLost(
                    "the ZooKeeper session ended while these partitions were being claimed; "
                    "claiming again in the new session"
                )
        except BaseException:
            for info in infos:
                info.active = False
            self.assignment.adopt_orphans(claim)
            raise

    def _ensure_fetcher(self, brokers: list[BrokerInfo]) -> None:
        if self.fetcher is None:
            protocol, listener = self.config.broker_security_protocol, self.config.broker_listener
            bootstrap = bootstrap_servers(brokers, security_protocol=protocol, listener=listener)
            if not bootstrap:
                raise BrokersUnavailable(no_endpoint_message(brokers, security_protocol=protocol, listener=listener))
            self.fetcher = self._make_fetcher(bootstrap)

    # ---- health --------------------------------------------------------------------------------
    def health_problems(self) -> list[str]:
        """Ownership problems in the partitions this member checks (watchdog.partitions_to_check:
        its own share, the owner nodes it still accounts for, and Scala members' shares for one
        member), as watchdog.find_problems words them. It reads and reports only: a problem that
        persists triggers a rebalance, which alone changes what we own (watchdog.OwnershipCheck)."""
        decision = self._last_decision
        if self._stopping.is_set() or decision is None or not decision.group:
            return []
        return self._ownership_check.problems(decision.group, self.my_topics, self.fetcher)

    # ---- commits -------------------------------------------------------------------------------
    def commit(self, *, retries: int = 0) -> int:
        """Write the consumed offsets of every owned (or releasing) partition that changed."""
        with self._lock:
            return self.offsets.commit(self.assignment.committable(), attempts=1 + retries)

    def commit_positions(
        self, positions: Mapping[TopicPartition, int], epochs: Mapping[str, int | None] | None = None
    ) -> dict[TopicPartition, bool]:
        """Commit progress tracked outside the iterators (next offset to read), owned partitions only
        (and, with `epochs`, only those claimed in the topic incarnation the positions count in)."""
        with self._lock:
            infos = self.assignment.record_positions(positions, epochs)
            self.offsets.commit(infos)
            mine = {i.key: i for i in infos}
            return {key: key in mine and mine[key].committed_offset == offset for key, offset in positions.items()}

    def _commit_quietly(self) -> None:
        if not self.config.auto_commit_enable:
            return
        try:
            self.offsets.commit(self.assignment.committable())
        except Exception as exc:  # noqa: BLE001 - release anyway; the new owner re-reads from the last commit
            if not is_retriable(exc):
                raise
            log.error(
                "%s: commit before release failed (%s); messages since the last commit will be delivered again",
                self.consumer_id,
                describe(exc),
            )

    # ---- shutdown ------------------------------------------------------------------------------
    def begin_shutdown(self) -> None:
        """Make a running rebalance give up at its next step (KAFKA-1848)."""
        self._stopping.set()

    def shutdown(self, timeout_s: float) -> dict[TopicPartition, int]:
        """Stop delivering, end the iterators, commit (if auto-commit), close the fetcher, all within
        `timeout_s`. Returns the offsets it could not commit (empty when everything was written)."""
        self._stopping.set()
        began = time.monotonic()
        if self.fetcher is not None:
            self.fetcher.set_deadline(Deadline(timeout_s))  # a Kafka-side final commit goes through it
        got_lock = self._lock.acquire(timeout=max(0.0, timeout_s / 2))
        try:
            infos = self.assignment.committable()
            self.assignment.begin_release(list(self.assignment.owned()))
            self.streams.close()
            unwritten = {}
            if self.config.auto_commit_enable:
                unwritten = self._final_commit(infos)
            if infos:
                self.linger.before_leaving((timeout_s - (time.monotonic() - began)) / 2)
            if self.fetcher is not None:
                self.fetcher.close(timeout=max(0.1, timeout_s - (time.monotonic() - began)))
            return unwritten
        finally:
            if got_lock:
                self._lock.release()

    def _final_commit(self, infos: list[PartitionTopicInfo]) -> dict[TopicPartition, int]:
        try:
            self.offsets.commit(infos, attempts=1 + self.config.offsets_commit_max_retries)
        except Exception as exc:  # noqa: BLE001 - reported to the caller with what was not written
            log.error("%s: final commit failed: %s", self.consumer_id, describe(exc))
        return {
            i.key: i.consumed_offset
            for i in infos
            if i.consumed_offset >= 0 and i.consumed_offset != i.committed_offset
        }
