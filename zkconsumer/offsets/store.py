"""Committed offsets: read and write them in ZooKeeper, Kafka or both, as offsets.storage says."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable

import tenacity

from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.consumer.fetcher import CurrentFetcher
from zkconsumer.errors import BrokersUnavailable, CommitFailed, SessionLost, ZkConsumerError, describe, is_retriable
from zkconsumer.offsets import dual_commit
from zkconsumer.offsets.broker_group_lookup import BrokerGroupView, admin_config, describe_broker_group
from zkconsumer.offsets.dual_commit import KafkaCommitEpisodes, KafkaFailure
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(__name__)


# The once-per-episode look at the broker-side group must not hold commits (and the rebalancer's lock) long.
_DESCRIBE_TIMEOUT_S = 5.0


class KafkaSideFailed(ZkConsumerError):
    """Dual commit: ZooKeeper was written, but the Kafka-side write failed with a non-retriable error
    (a bug or a fatal client error); the cause is chained."""


def _lease_holds(vouch: Callable[[], str | None]) -> None:
    refused = vouch()
    if refused is not None:  # a successor may own these now: our old positions would rewind it
        raise SessionLost(f"not committing offsets to Kafka: {refused}")


class OffsetStore:
    """offsets.storage=zookeeper (default), =kafka, and dual.commit.enabled (write both, read max).

    Kafka-side commits go through the member's fetcher's confluent-kafka Consumer (`fetcher`, the
    member's CurrentFetcher) with the group's id and no generation, like Scala's OffsetCommitRequest
    with generation -1.

    With dual commit ZooKeeper is written first (fenced by owner node), then Kafka with what moved
    since this ownership's last Kafka write, under a lease that holds and only for partitions whose
    owner node is ours (see `_vouched`). A Kafka-side failure never undoes or prevents the ZooKeeper
    write: rejections by a live broker-coordinated group with our id, transient failures and a
    lease that ran out are counted and reported once per episode, and the next commit sends what is
    still behind. The
    report names that broker group's members, described through the fetcher's broker settings.
    """

    def __init__(
        self,
        group: GroupZk,
        *,
        cluster: ClusterMetadata,
        storage: str,
        dual_commit: bool,
        fetcher: CurrentFetcher,
        backoff_ms: int,
        timeout_ms: int,
    ) -> None:
        self.group = group
        self.cluster = cluster  # topic incarnations: an offset older than its topic is none
        self.use_zookeeper = storage == "zookeeper" or dual_commit
        self.use_kafka = storage == "kafka"
        self._fetcher = fetcher
        self._backoff_s = backoff_ms / 1000.0
        self._timeout_s = timeout_ms / 1000.0
        self.zookeeper_writes = 0  # ZooKeeperCommitsPerSec's counter
        self.kafka_writes = 0  # KafkaCommitsPerSec's counter
        self.failures = 0  # commits that raised (zkconsumer_commit_failures_total)
        self.kafka_rejected = 0  # dual commit: Kafka-side commits a live broker-side group rejected
        self.kafka_failed = 0  # dual commit: Kafka-side commits that failed otherwise (transient)
        self.kafka_episodes = KafkaCommitEpisodes()

    def read(self, keys: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """-1 where nothing is committed; with dual commit the larger of the two (migration path: what
        that gives when one of the two writes failed is in docs/design.md, "Dual commit during a migration")."""
        keys = list(keys)
        result = {k: -1 for k in keys}
        if self.use_zookeeper:
            result.update(self.group.read_offsets(keys, self.cluster.topic_epochs({t for t, _ in keys})))
        if self.use_kafka and keys:
            for key, offset in self._read_kafka(keys).items():
                result[key] = max(result[key], offset)
        return result

    def commit(
        self,
        infos: Iterable[PartitionTopicInfo] | Callable[[], Iterable[PartitionTopicInfo]],
        *,
        attempts: int = 1,
        vouch: Callable[[], str | None] = lambda: None,
        hold: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
    ) -> int:
        """Write changed offsets of the given partitions; returns how many partitions were written.

        ZooKeeper writes are fenced by owner node (see GroupZk.commit_offsets). A partition
        we no longer own is skipped, not retried. Kafka-side writes have no fence: before each one
        `vouch()` says why our ownership cannot be vouched for now (None: it can), and a reason
        refuses it with SessionLost (Kafka-only: the try fails; dual commit: reported, sent later). Failures are retried `attempts - 1` times with
        offsets.channel.backoff.ms between, then raised. Each try runs inside `hold()` (the caller's
        lock), the back-offs outside it; `infos` given as a callable is asked again in each try.
        """
        if attempts < 1:
            return 0
        given = infos if callable(infos) else list(infos)

        def once() -> int:
            with hold():
                return self._commit_once(list(given() if callable(given) else given), vouch)

        def out_of_tries(state: tenacity.RetryCallState) -> bool:  # a shutdown's deadline allows no retry past it
            return state.attempt_number >= attempts or self.group.io.deadline.expired()

        def say_retrying(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None  # set: it failed
            cause = describe(exc) if exc is not None else "?"
            log.warning("offset commit attempt %d/%d failed (%s); retrying", state.attempt_number, attempts, cause)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(is_retriable),  # bugs are raised at once
            stop=out_of_tries,
            wait=lambda _state: self.group.io.deadline.remaining(self._backoff_s),
            before_sleep=say_retrying,
            sleep=lambda seconds: time.sleep(seconds),
            reraise=True,  # the last attempt's own exception, not tenacity's RetryError
        )
        try:
            return retrying(once)
        except Exception as exc:
            self.failures += 1
            if not isinstance(exc, KafkaSideFailed):  # that one says itself what was written
                log.error(
                    "offset commit failed after %d attempts (%s): messages since the last "
                    "commit will be delivered again if these partitions move",
                    retrying.statistics.get("attempt_number", 1),
                    describe(exc),
                )
            raise

    def _commit_once(self, infos: list[PartitionTopicInfo], vouch: Callable[[], str | None]) -> int:
        # Snapshot once: iterator threads keep advancing consumed_offset while we write, and the
        # checkpoint must record the value actually written, or a later commit skips the rest.
        snapshot = [(i, i.consumed_offset) for i in self._current_incarnation(infos)]
        todo = [(i, o) for i, o in snapshot if o >= 0 and o != i.committed_offset]
        if not self.use_zookeeper:  # Kafka is the only store: its failure is the commit's
            # The full map (KAFKA-1510): it also keeps idle partitions' offsets from expiring.
            full = self._vouched([(i, o) for i, o in snapshot if o >= 0], vouch, fenced_now=set())
            kept = {id(i) for i, _ in full}
            todo = [(i, o) for i, o in todo if id(i) in kept]
            self._write_kafka(full)
            self.kafka_writes += len(full)
            self._checkpoint(todo, {i.key: True for i, _ in todo})
            return len(todo)
        written = {i.key: True for i, _ in todo}
        if todo:
            written = self.group.commit_offsets({i.key: o for i, o in todo}, {i.key: i.thread_id for i, _ in todo})
            self._withdraw_overtaken([(i, o) for i, o in todo if written[i.key]], written)
            self.zookeeper_writes += sum(written.values())
        self._checkpoint(todo, written)
        if self.use_kafka:
            # Only what moved since this ownership's last Kafka write: ZooKeeper holds the rest (a read
            # takes the larger of the two), and an unchanged position resent by a member whose
            # ownership nobody vouches for would rewind a successor. A partition ZooKeeper just
            # fenced off is another member's now: its Kafka offset is too.
            fenced_now = {i.key for i, _ in todo if written[i.key]}
            moved = [(i, o) for i, o in snapshot if o >= 0 and o != i.kafka_offset and written.get(i.key, True)]
            self._write_kafka_beside_zookeeper(moved, vouch, fenced_now)
        return sum(written.values())

    def _vouched(
        self,
        pairs: list[tuple[PartitionTopicInfo, int]],
        vouch: Callable[[], str | None],
        *,
        fenced_now: set[TopicPartition],
    ) -> list[tuple[PartitionTopicInfo, int]]:
        """What a Kafka-side write may carry. Kafka fences nothing, so the lease must hold (`vouch()`
        gives the reason it does not: SessionLost) and each partition's owner node must be ours:
        proven by the fenced ZooKeeper transaction that just wrote it (`fenced_now`, a quorum write)
        or by a fresh read of the rest. The lease is asked again after that read, just before the send:
        the read may have outlasted it."""
        if not pairs:
            return pairs
        _lease_holds(vouch)
        ours = {id(i) for i, _ in self._still_ours([(i, o) for i, o in pairs if i.key not in fenced_now])}
        _lease_holds(vouch)
        return [(i, o) for i, o in pairs if i.key in fenced_now or id(i) in ours]

    def _still_ours(self, pairs: list[tuple[PartitionTopicInfo, int]]) -> list[tuple[PartitionTopicInfo, int]]:
        """Read our owner nodes afresh (one pipelined round, as a ZooKeeper commit does) and leave out,
        and report as doubted, what is not ours: another member may own it and have committed past us."""
        if not pairs:
            return pairs
        stats = self.group.owner_nodes.stats_if_ours({i.key: i.thread_id for i, _ in pairs})
        foreign = sorted(k for k, stat in stats.items() if stat is None)
        if foreign:
            log.warning("not committing %s to Kafka: their owner nodes are no longer ours", partitions_text(foreign))
            self.group.signals.doubt(
                foreign, "a commit found the owner nodes of " + partitions_text(foreign) + " not ours"
            )
        return [(i, o) for i, o in pairs if stats[i.key] is not None]

    @staticmethod
    def _checkpoint(todo: list[tuple[PartitionTopicInfo, int]], written: dict[TopicPartition, bool]) -> None:
        for info, offset in todo:
            if written[info.key]:  # a fenced-off partition keeps its old checkpoint
                info.committed_offset = offset

    def _write_kafka_beside_zookeeper(
        self,
        moved: list[tuple[PartitionTopicInfo, int]],
        vouch: Callable[[], str | None],
        fenced_now: set[TopicPartition],
    ) -> None:
        """Dual commit's Kafka side, after ZooKeeper was written: a refusal (no lease) and failures are
        reported, not raised (unless they are bugs); what was not written is sent by the next commit."""
        if not moved:
            return
        try:
            full = self._vouched(moved, vouch, fenced_now=fenced_now)
            self._write_kafka(full)
        except Exception as exc:  # noqa: BLE001 - classified: bugs and fatal errors are raised
            kind = dual_commit.classify(exc)
            if kind is KafkaFailure.FATAL:
                raise KafkaSideFailed(
                    f"group {self.group.group_id}: ZooKeeper offsets were written, but the Kafka-"
                    f"side commit failed with a non-retriable error: {describe(exc)}"
                ) from exc
            self._kafka_failed(kind, exc)
            return
        for info, offset in full:
            info.kafka_offset = offset
        self.kafka_writes += len(full)
        ended = self.kafka_episodes.succeeded()
        if ended is not None:
            log.info(dual_commit.recovered_info(self.group.group_id, ended))

    def _kafka_failed(self, kind: KafkaFailure, exc: BaseException) -> None:
        if kind is KafkaFailure.REJECTED:
            self.kafka_rejected += 1
        else:
            self.kafka_failed += 1
        error = dual_commit.error_text(exc)
        if not self.kafka_episodes.failed(kind):
            log.debug("group %s: Kafka-side commit failed again (%s, %s)", self.group.group_id, kind.value, error)
            return
        if kind is KafkaFailure.TRANSIENT:
            log.warning(dual_commit.transient_warning(self.group.group_id, error))
            return
        view = self._describe_broker_group(self.group.io.deadline.remaining(min(_DESCRIBE_TIMEOUT_S, self._timeout_s)))
        log.warning(dual_commit.rejected_warning(self.group.group_id, error, view))

    def _describe_broker_group(self, timeout_s: float) -> BrokerGroupView | None:
        """The broker-side group with our id, asked of the brokers the fetcher reaches (None: no fetcher)."""
        fetcher = self._fetcher.get()
        settings = fetcher.settings if fetcher is not None else None
        if settings is None:
            return None
        return describe_broker_group(admin_config(settings.consumer_config()), self.group.group_id, timeout_s)

    def _current_incarnation(self, infos: list[PartitionTopicInfo]) -> list[PartitionTopicInfo]:
        """Leave out partitions claimed in a topic that has since been deleted (or re-created).

        Their positions belong to the old topic; written now, the offset node would look newer
        than the new topic and a later owner would resume the new topic from it, skipping data.
        """
        stale = self._other_incarnation(infos)
        if stale:
            log.warning(
                "not committing %s: the topic was deleted or re-created since they were claimed",
                ", ".join(f"{i.topic}-{i.partition}={i.consumed_offset}" for i in stale),
            )
            skip = {id(i) for i in stale}
            return [i for i in infos if id(i) not in skip]
        return infos

    def _withdraw_overtaken(
        self, done: list[tuple[PartitionTopicInfo, int]], written: dict[TopicPartition, bool]
    ) -> None:
        """Delete what was just written for a topic deleted or re-created during the write.

        `_current_incarnation` looked before writing; a topic re-created between that look and
        the write (a few ZooKeeper round trips, long on a loaded machine) would leave the old
        position with an mzxid newer than the new topic, which read_offsets would trust. The
        caller holds the rebalancer's lock, so no re-claim reads the offset in between.
        """
        overtaken = {id(i) for i in self._other_incarnation([i for i, _ in done])}
        for info, offset in done:
            if id(info) in overtaken:
                withdrawn = self.group.withdraw_offset(info.key, offset, info.thread_id)
                log.warning(
                    "%s-%d: topic deleted or re-created while %d was being committed; %s",
                    info.topic,
                    info.partition,
                    offset,
                    "withdrew it" if withdrawn else "left it (it changed since, or the partition is no longer ours)",
                )
                written[info.key] = False

    def _other_incarnation(self, infos: list[PartitionTopicInfo]) -> list[PartitionTopicInfo]:
        """Those claimed in a topic whose node is gone or is not the one they were claimed in."""
        epochs = self.cluster.topic_epochs({i.topic for i in infos if i.epoch is not None})
        return [i for i in infos if i.epoch is not None and epochs[i.topic] != i.epoch]

    def _read_kafka(self, keys: list[TopicPartition]) -> dict[TopicPartition, int]:
        from confluent_kafka import TopicPartition as KafkaTP

        consumer = self._fetcher.consumer()
        if consumer is None:
            raise BrokersUnavailable("offsets.storage=kafka needs a broker connection and none exists yet")
        # attr-defined: consumer() gives the fetcher's ConsumerProxy, which forwards any Consumer method.
        found = consumer.committed([KafkaTP(t, p) for t, p in keys], timeout=self._timeout_s)  # type: ignore[attr-defined]
        return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else -1) for tp in found}

    def _write_kafka(self, infos: list[tuple[PartitionTopicInfo, int]]) -> None:
        if not infos:
            return
        from confluent_kafka import TopicPartition as KafkaTP

        consumer = self._fetcher.consumer()
        if consumer is None:
            raise BrokersUnavailable("offsets.storage=kafka needs a broker connection and none exists yet")
        results = consumer.commit(  # type: ignore[attr-defined]  # a ConsumerProxy: see _read_kafka
            offsets=[KafkaTP(i.topic, i.partition, o) for i, o in infos], asynchronous=False
        )
        failed = [tp for tp in results or [] if tp.error is not None]
        if failed:
            from confluent_kafka import KafkaException

            # The first partition's KafkaError rides along as the cause, so dual commit can tell a
            # rejection by a live broker-side group (UNKNOWN_MEMBER_ID, ...) from a transient failure.
            raise CommitFailed(
                f"Kafka offset commit failed for {len(failed)} partition(s), e.g. {failed[0].topic}-"
                f"{failed[0].partition}: {failed[0].error}",
                [(tp.topic, tp.partition) for tp in failed],
            ) from KafkaException(failed[0].error)
