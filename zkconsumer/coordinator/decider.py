"""Decider: an attempt's decide step (read the group, its brokers and topics; compute our share), and the last decision."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from zkconsumer.cluster.broker_nodes import BrokerInfo
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.peers import IgnoredPeerReporter, evaluate_peers
from zkconsumer.coordinator.rebalance_plan import Decision, decide, subscribed_topics
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(
    "zkconsumer.coordinator.rebalancer"
)  # the rebalancer's logger: these lines are the rebalancer's


class Decider:
    """Reads what an assignment is computed from, each read arming the watch that guards it (a
    change after the read triggers a rebalance), and computes the group's assignment (rebalance_plan.decide).

    It keeps what the other steps and the watchdog's check need of the last decision: the members
    it was computed from (the release linger), the topics this member subscribes to and their
    incarnations (reconcile, the claim, the check), and the group's assignment. Only the rebalance
    thread decides; readers see whole values (each attribute is replaced, never changed in place).

    `ensure_fetcher(brokers)` runs once brokers are known (Rebalancer makes its fetcher then).
    """

    def __init__(
        self,
        config: ConsumerConfig,
        group: GroupZk,
        cluster: ClusterMetadata,
        membership: Membership,
        ensure_fetcher: Callable[[list[BrokerInfo]], None],
    ) -> None:
        self.config = config
        self.consumer_id = group.consumer_id
        self.group = group
        self.cluster = cluster
        self.membership = membership
        self._ensure_fetcher = ensure_fetcher
        self.last: Decision | None = None
        self._last_by_topic: tuple[Decision | None, dict[str, dict[int, str]]] = (None, {})
        self.decided_with: set[str] | None = None  # the members the last decision was computed from
        self.my_topics: set[str] = set()
        self.my_threads: dict[str, list[str]] = {}  # topic -> our thread ids (the live switch's target)
        self.topic_epochs: dict[str, int | None] = {}
        self.peers = IgnoredPeerReporter()

    def decide(self) -> Decision | None:
        """Read the group (arming every watch with the read it guards) and compute the assignment;
        None while no broker is registered (a change of /brokers/ids triggers the next attempt)."""
        m = self.membership
        registrations, unreadable = self.group.read_registrations(watch=m.on_members_changed)
        self.decided_with = set(registrations) | set(unreadable)
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
        self.my_threads = dict(view.threads[self.consumer_id])
        topics = self.cluster.topics(subscribed_topics(view.threads), watch=m.on_topic_changed)
        self.topic_epochs = {t: epoch for t, (_, epoch) in topics.items()}
        partitions = {t: parts for t, (parts, _) in topics.items()}
        decision = decide(self.consumer_id, self.config.partition_assignment_strategy, view.threads, partitions, compat)
        self.last = decision
        return decision

    def last_group(self) -> Mapping[TopicPartition, str]:
        """The group's assignment of the last decision, (topic, partition) -> thread id ({}: none yet)."""
        decision = self.last
        return decision.group if decision is not None else {}

    @property
    def last_assignment(self) -> dict[str, dict[int, str]]:
        """The group's assignment of the last attempt, topic -> partition -> thread id (built when
        asked: attempts outnumber the watchdog's checks and the listener's calls)."""
        decision = self.last
        cached_for, by_topic = self._last_by_topic
        if decision is not cached_for:
            by_topic = decision.by_topic() if decision is not None else {}
            self._last_by_topic = (decision, by_topic)
        return by_topic
