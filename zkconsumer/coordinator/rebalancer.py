"""Carries out rebalance attempts (decide, release, claim, start fetching) and offset commits, one at a time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from zkconsumer.cluster.broker_nodes import BrokerInfo, client_settings
from zkconsumer.cluster.metadata import ClusterMetadata, bootstrap_servers, no_endpoint_message
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.fetcher import CurrentFetcher, PartitionFetcher
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.claim import ClaimStep
from zkconsumer.coordinator.commits import Commits, uncommitted
from zkconsumer.coordinator.decider import Decider
from zkconsumer.coordinator.linger import ReleaseLinger
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.rebalance_plan import plan
from zkconsumer.coordinator.reconcile import reconcile_owned
from zkconsumer.coordinator.retries import AttemptOutcome, RebalanceStats, run_attempts
from zkconsumer.coordinator.switch_follow import SwitchFollower
from zkconsumer.coordinator.watchdog import OwnershipCheck
from zkconsumer.errors import (
    BrokersUnavailable,
    CommitFailed,
    ZooKeeperUnavailable,
)
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.partitions import TopicPartition, by_topic, partitions_text
from zkconsumer.zookeeper.deadline import Deadline
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(__name__)


class Rebalancer:
    """Runs rebalance attempts in the legacy order and commits offsets, never both at once.

    The lock here serialises the steps of attempts, commits and shutdown (Scala's rebalanceLock).
    It is never held across a wait: not across the back-off or the watched wait between attempts
    (run_attempts runs without it), nor across the release linger or the live switch's Kafka
    commit of what it releases (an attempt takes it for its release and again for its claim). A commit therefore waits for one step at most, and never
    longer than `Commits.wait_s` (then it raises CommitFailed). Readers of what we own ask the
    Assignment instead and are never blocked by it.

    Its parts: the decide step and the last decision (decider.Decider), the claim step
    (claim.ClaimStep), commits (commits.Commits), the release linger (linger.ReleaseLinger), the
    watchdog's check (watchdog.OwnershipCheck). The member's fetcher is made here, on the first
    attempt that finds brokers, into the CurrentFetcher the offset store reads too.
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
        fetchers: CurrentFetcher,
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
        self.fetchers = fetchers
        self.listener = listener
        self._lock = threading.RLock()
        self.stats = RebalanceStats()
        self.decider = Decider(config, group, cluster, membership, self._ensure_fetcher)
        self._stopping = threading.Event()
        self.linger = ReleaseLinger(
            group,
            config.release_linger_ms / 1000.0,
            self._stopping,
            max_s=config.release_linger_max_ms / 1000.0,
            budget_s=config.compat.scala_retry_budget_s,
            clock=streams.gate.clock,
        )
        self.commits = Commits(config, group, membership, assignment, streams, offsets, self._lock)
        self.claims = ClaimStep(
            config, group, assignment, streams, offsets, fetchers, self.decider, self._before_starting_fetchers
        )
        self.switch: SwitchFollower | None = None  # the live switch's side (GroupMember sets it)
        self._ownership_check = OwnershipCheck(self.consumer_id, group, assignment, membership, self._stopping)

    @property
    def fetcher(self) -> PartitionFetcher | None:
        """The member's fetcher (None until an attempt found brokers)."""
        return self.fetchers.get()

    # ---- rebalance -----------------------------------------------------------------------------
    def synced_rebalance(self, reason: str) -> bool:
        """Up to rebalance.max.retries attempts (retries.run_attempts, which waits between them
        holding no lock); True on success (or when stopping). A failure that is not retriable (a
        bug, a listener's own exception) is raised: the caller takes the member out."""
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

    def _attempt(self) -> AttemptOutcome:
        """One attempt, always in this order: release what moves away, linger (no lock held), claim,
        start what was claimed. A shutdown between the two steps ends the attempt.

        Every owner node the attempt creates is, when it returns or raises, installed, pending
        deletion (an orphan), or was refused by ZooKeeper (the session fence): see claim.ClaimStep.
        """
        with self._lock:
            if self._stopping.is_set():
                return AttemptOutcome(done=True)
            self.membership.ensure_registered()
            sessions_lost = self.assignment.sessions_lost  # a LOST from here on voids this attempt's claim
            decision = self.decider.decide()
            if decision is None:
                self._reconcile()  # a link drop took our owner-node watches: re-arm them with no brokers too
                return AttemptOutcome(done=True, waiting_for_brokers=True)
            self._reconcile()
            incremental = self.config.rebalance_incremental
            target = decision.mine
            if self.switch is not None:  # from `handover` on the brokers' assignment is the target
                self.switch.read_step(self.decider.my_topics)
                target = self.switch.target(decision.mine, self.decider.my_threads, self.assignment.owned())
            steps = plan(self.assignment.owned(), target, stop_the_world=not incremental)
            self._release(steps.release, stop_the_world=not incremental, new_owners=decision.group)
        if not self.linger.wait():
            return AttemptOutcome(done=True)  # stopping: the nodes go with the session, after the shutdown's linger
        carried = self._carry_to_kafka()  # the live switch's Kafka commit: it waits on the brokers, so no lock
        with self._lock:
            if self._stopping.is_set():  # the shutdown took over the release while we lingered
                return AttemptOutcome(done=True)
            self._finish_releases(carried)
            if self._stopping.is_set():
                return AttemptOutcome(done=True)
            return self.claims.run(steps.claim, len(steps.release), len(steps.keep), sessions_lost)

    def _reconcile(self) -> None:
        """Resolve owned partitions we can no longer vouch for before planning (reconcile.reconcile_owned);
        its reads are fresh after a reconnect (the cache was forgotten at SUSPENDED) and re-arm the
        watches, so delivery held since a same-session reconnect may go on."""
        reconnects = self.membership.reconnects
        reconcile_owned(self.assignment, self.group, self.fetcher, self.decider.topic_epochs, self.consumer_id)
        self.membership.owned_nodes_reread(reconnects)

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
            self.commits.before_release()
        if release:
            self.listener.before_releasing_partitions(by_topic(release))  # where manual committers commit
        if pending:
            self.linger.handing_over(
                (new_owners[k] for k in pending if k in new_owners), self.decider.decided_with, new_owners
            )

    def _finish_releases(self, carried: Mapping[TopicPartition, int]) -> None:
        """Delete every owner node still pending (this attempt's and any earlier failed one's), once
        the linger of their commit is over (the caller waited for it); in a live switch, only those
        whose ZooKeeper offset Kafka holds too (`carried`, from _carry_to_kafka)."""
        pending = self.assignment.releasing()
        if not pending:
            return
        kept = self._kept_for_kafka(pending, carried)
        pending = {k: t for k, t in pending.items() if k not in kept}
        confirmed = self.group.release(pending) if pending else []
        self.assignment.released(confirmed)
        self.linger.released(confirmed)
        if self.fetcher is not None and confirmed:
            self.fetcher.remove(confirmed)
        left = sorted(set(pending) - set(confirmed))
        if left:
            raise ZooKeeperUnavailable(
                f"owner nodes of {partitions_text(left)} changed while being released; trying again"
            )
        if kept:
            why = "until Kafka's committed offsets equal ZooKeeper's (live switch); trying again"
            raise CommitFailed(
                f"{self.consumer_id}: keeping the owner nodes of {partitions_text(sorted(kept))} {why}", sorted(kept)
            )

    def _carry_to_kafka(self) -> dict[TopicPartition, int]:
        """Live switch, holding no lock: ZooKeeper's offsets of the partitions pending release, committed to
        Kafka as a group member through the seat (SwitchFollower.carry); what Kafka read back equal."""
        pending = self.assignment.releasing()
        if self.switch is None or not pending:
            return {}
        zookeeper = self.group.read_offsets(list(pending), self.decider.topic_epochs)
        return self.switch.carry(zookeeper, self.commits.wait_s)

    def _kept_for_kafka(
        self, pending: Mapping[TopicPartition, str], carried: Mapping[TopicPartition, int]
    ) -> set[TopicPartition]:
        """Live switch: releasing partitions whose node stays, ZooKeeper's offset (read again, under the
        lock: a commit may have moved it since the carry) not what Kafka was seen to hold (SwitchFollower)."""
        if self.switch is None:
            return set()
        zookeeper = self.group.read_offsets(list(pending), self.decider.topic_epochs)
        return set(pending) - self.switch.releasable(zookeeper, carried)

    def _before_starting_fetchers(self) -> None:
        self.listener.before_starting_fetchers(self.consumer_id, self.decider.last_assignment)

    def _ensure_fetcher(self, brokers: list[BrokerInfo]) -> None:
        """Make the member's fetcher for these brokers, on the first attempt that finds them (Decider.decide)."""
        if self.fetchers.get() is None:
            self.fetchers.make(fetcher_bootstrap(self.config, brokers), client_settings(brokers))

    # ---- health --------------------------------------------------------------------------------
    def health_problems(self) -> list[str]:
        """Ownership problems in the partitions this member checks (watchdog.partitions_to_check:
        its own share, the owner nodes it still accounts for, and Scala members' shares for one
        member), as watchdog.find_problems words them. It reads and reports only: a problem that
        persists triggers a rebalance, which alone changes what we own (watchdog.OwnershipCheck)."""
        if not self._stopping.is_set():
            self.linger.follow_up(self.assignment.owned())
        decision = self.decider.last
        if self._stopping.is_set() or decision is None or not decision.group:
            return []
        return self._ownership_check.problems(decision.group, self.decider.my_topics, self.fetcher)

    # ---- commits -------------------------------------------------------------------------------
    def commit(self, *, retries: int = 0) -> int:
        """Write the consumed offsets of every owned (or releasing) partition that changed."""
        return self.commits.commit(retries=retries)

    def commit_positions(
        self, positions: Mapping[TopicPartition, int], epochs: Mapping[str, int | None] | None = None
    ) -> dict[TopicPartition, bool]:
        """Commit progress tracked outside the iterators (see Commits.commit_positions)."""
        return self.commits.commit_positions(positions, epochs)

    # ---- shutdown ------------------------------------------------------------------------------
    def begin_shutdown(self) -> None:
        """Make a running rebalance give up at its next step (KAFKA-1848)."""
        self._stopping.set()

    def shutdown(self, timeout_s: float) -> dict[TopicPartition, int]:
        """Stop delivering, end the iterators, commit (if auto-commit), close the fetcher, all within
        `timeout_s`. Returns the offsets it could not commit (empty when everything was written).

        The path of a release: under the rebalance lock (a running attempt gives up at its next
        step, and no step holds the lock across a wait), stop delivering everything, commit, and
        decide the linger; then linger holding no lock. The owner nodes go with the session. A lock
        not had within half the time means no commit: a commit without it could land on a node a
        successor created after our attempt deleted ours (a version check cannot tell them apart).
        """
        self._stopping.set()
        deadline = Deadline(timeout_s)
        if self.fetcher is not None:
            self.fetcher.set_deadline(deadline)  # a Kafka-side final commit goes through it
        linger_s, unwritten = 0.0, {}
        if self._lock.acquire(timeout=deadline.remaining(timeout_s) / 2):
            try:
                infos = self.assignment.committable()
                self.assignment.begin_release(list(self.assignment.owned()))
                if self.config.auto_commit_enable:
                    unwritten = self.commits.final(infos)  # before the gate ends: the lease still counts
                self.streams.close(timeout=deadline.remaining(timeout_s))
                if infos:
                    linger_s = self.linger.leaving(self.decider.last_group(), deadline.remaining(timeout_s) / 2)
            finally:
                self._lock.release()
        else:
            infos = self.assignment.committable()
            self.assignment.begin_release(list(self.assignment.owned()))
            self.streams.close(timeout=deadline.remaining(timeout_s))
            unwritten = uncommitted(infos) if self.config.auto_commit_enable else {}
            log.error(
                "%s: a rebalance step held the rebalance lock past half the shutdown's time; leaving "
                "without the final commit",
                self.consumer_id,
            )
        if linger_s > 0:
            time.sleep(linger_s)  # bounded by the budget `leaving` was given
        if self.fetcher is not None:
            self.fetcher.close(timeout=max(0.1, deadline.remaining(timeout_s)))
        return unwritten


def fetcher_bootstrap(config: ConsumerConfig, brokers: list[BrokerInfo]) -> str:
    """The brokers the member's fetcher (and so its Kafka-side commits) starts from:
    librdkafka.bootstrap.servers when given (brokers whose registered addresses this host cannot
    reach: a proxy, another network; the Spark source's bootstrap.servers), else the endpoints
    registered in ZooKeeper that speak our protocol (BrokersUnavailable naming them if none does)."""
    given = config.librdkafka_overrides.get("bootstrap.servers", "").strip()
    if given:
        return given
    protocol, listener = config.broker_security_protocol, config.broker_listener
    bootstrap = bootstrap_servers(brokers, security_protocol=protocol, listener=listener)
    if not bootstrap:
        raise BrokersUnavailable(no_endpoint_message(brokers, security_protocol=protocol, listener=listener))
    return bootstrap
