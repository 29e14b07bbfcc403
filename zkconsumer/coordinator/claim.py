"""An attempt's claim step: create our owner nodes, read their offsets, install and start what was claimed; a failure after a create leaves orphans to delete."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.consumer.fetcher import CurrentFetcher
from zkconsumer.consumer.stream import StreamSet
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.decider import Decider
from zkconsumer.coordinator.retries import AttemptOutcome
from zkconsumer.errors import SessionLost
from zkconsumer.offsets.store import OffsetStore
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger("zkconsumer.coordinator.rebalancer")  # these lines are the rebalancer's


class ClaimStep:
    """The claim step of an attempt, run by the Rebalancer under the rebalance lock, on the rebalance
    thread (the only thread that installs).

    Its invariant (docs/design.md, "Partition state: one owner"): every owner node it creates is, when
    `run` returns or raises, installed, pending deletion (an orphan), or was refused by ZooKeeper (the
    session fence): a claim that raised (its answer lost), a start that failed (offsets, the listener,
    the fetcher) and an install refused because the session ended meanwhile all adopt the claim's
    nodes as orphans on the spot.
    """

    def __init__(
        self,
        config: ConsumerConfig,
        group: GroupZk,
        assignment: Assignment,
        streams: StreamSet,
        offsets: OffsetStore,
        fetchers: CurrentFetcher,
        decider: Decider,
        before_start: Callable[[], None],
    ) -> None:
        """`before_start`: the listener's before_starting_fetchers (the Rebalancer owns the listener)."""
        self.config = config
        self.consumer_id = group.consumer_id
        self.group = group
        self.assignment = assignment
        self.streams = streams
        self.offsets = offsets
        self.fetchers = fetchers
        self.decider = decider
        self._before_start = before_start
        self._close_size_warned = False  # see _check_close_size

    def run(self, claim: Mapping[TopicPartition, str], released: int, kept: int, sessions_lost: int) -> AttemptOutcome:
        """Claim and start this attempt's new partitions; blocked: the outcome says by what (try again)."""
        incremental = self.config.rebalance_incremental
        # All or nothing as Scala claims; an incremental member takes what is free at once and
        # starts it, waiting only for the partitions others still hold.
        claimed, blocked = self._claim_and_start(claim, sessions_lost, partial=incremental)
        if blocked:
            log.info(
                "%s: claimed %d partitions; %d still owned by others (e.g. %s-%d), %s",
                self.consumer_id,
                len(claimed),
                len(blocked),
                *blocked[0],
                "waiting for them" if incremental else "backing off",
            )
            return AttemptOutcome(done=False, blocked=tuple(blocked), claimed=len(claimed), released=released)
        owned = self.assignment.owned()
        self._check_close_size(owned)
        log.info(
            "%s owns %d partitions (%d new, %d released, %d kept): %s",
            self.consumer_id,
            len(owned),
            len(claim),
            released,
            kept,
            partitions_text(owned) or "none",
        )
        return AttemptOutcome(done=True, claimed=len(claim), released=released, kept=kept)

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

    def _claim_and_start(
        self, owners: Mapping[TopicPartition, str], sessions_lost: int, *, partial: bool
    ) -> tuple[dict[TopicPartition, str], list[TopicPartition]]:
        """Create our owner nodes, then start and install what was claimed; returns (claimed, still
        held by others). Unless `partial`, all or nothing: a held node means nothing is claimed.

        The session fence makes ZooKeeper refuse a claim sent in any session but the registered one,
        so no node of ours outlives this without being installed or pending.
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
                    self.decider.topic_epochs.get(key[0]),
                )
                for key, thread in claim.items()
            ]
            self._before_start()
            fetcher = self.fetchers.get()
            assert fetcher is not None
            # Installed before the fetcher sees them: a doubt heard since the claim stops them first.
            if not self.assignment.install(infos, sessions_lost):
                raise SessionLost(
                    "the ZooKeeper session ended while these partitions were being claimed; "
                    "claiming again in the new session"
                )
            if self.config.rebalance_incremental:
                if infos:
                    fetcher.add(infos)
            else:
                fetcher.assign(infos)
        except BaseException:
            self.assignment.drop([i.key for i in infos if self.assignment.get(i.key) is i])
            for info in infos:
                info.active = False
            self.assignment.adopt_orphans(claim)
            raise
