"""The stream reader's group member on the driver: joining, owned positions, fenced commits, log offsets, leaving."""

from __future__ import annotations

import collections
import logging
import os
import signal
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from zkconsumer.errors import ZkConsumerError, is_retriable
from zkconsumer.errors import describe as describe_error
from zkconsumer.offsets.store import KafkaSideFailed
from zkconsumer.spark import phase_timings
from zkconsumer.spark.broker_offsets import LogOffsets, log_offsets
from zkconsumer.spark.broker_trouble import Answers
from zkconsumer.spark.checkpoint import CheckpointError, CheckpointLog, last_completed
from zkconsumer.spark.offsets import Key
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.planning import bootstrap_of
from zkconsumer.spark.reconcile import forward_commits

log = logging.getLogger("zkconsumer.spark.source")  # the source's logger: these lines are the stream reader's
# stop() gives the last completed batch's commit this long (checkpoint read and ZooKeeper write),
# then leaves the group regardless: a stuck filesystem or ZooKeeper must not hold the stop.
STOP_COMMIT_TIMEOUT_S = 15.0


class MemberLeft(ZkConsumerError, RuntimeError):
    """The stream reader's group member left the group on a failure; the cause is chained."""


class StreamMember:
    """The stream reader's member of the group (driver side only): ZkStreamReader holds one.

    The member is a ConsumerConnector with fetch=False, joined on first use and left by stop(). A
    pickled copy (executors get the reader's) carries no connector and no log-offset client.
    """

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._conn: Any = None  # ConsumerConnector, created on first use
        self._log_offsets: LogOffsets | None = None
        self._claims: dict[Key, Any] = {}  # the claim records of the last owned() snapshot: incarnation, and identity
        # Offsets this process planned or Spark handed it (canonical JSON): stop() commits a batch
        # from the checkpoint only if its offsets are one of these, i.e. really this query's.
        self._seen: collections.deque[str] = collections.deque(maxlen=64)
        self._brokers_read: str | None = None  # the bootstrap list of the last /brokers/ids read

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_conn"] = state["_log_offsets"] = None  # sockets and threads: driver only
        return state

    def remember(self, offsets: str) -> None:
        """Offsets (canonical JSON) this query planned or Spark handed it: stop() may commit these."""
        self._seen.append(offsets)

    def _connector(self) -> Any:
        """The query's member, joined on first use. A member that left the group on a failure (a bug,
        ZooKeeper refusing it, kazoo closed for good) fails the planning call that asks for it: the
        query stops with the member's cause instead of planning nothing forever."""
        member = self._conn if self._conn is not None else self._join()
        if member.failure is not None:
            raise MemberLeft(
                f"the query's member of group {self.opts.group_id} ({member.consumer_id}) left the group: "
                f"{describe_error(member.failure)}"
            ) from member.failure
        return member

    def _join(self) -> Any:
        from zkconsumer import ConsumerConnector

        conn = ConsumerConnector(self.opts.consumer_props, fetch=False)
        try:
            if self.opts.topic_filter is not None:
                conn.create_message_streams_by_filter(self.opts.topic_filter, self.opts.streams)
            else:
                conn.create_message_streams({t: self.opts.streams for t in self.opts.topics})
        except BaseException:
            conn.shutdown()
            raise
        log.info("query joined group %s as %s", self.opts.group_id, conn.consumer_id)
        self._conn = conn
        self._leave_on_sigterm()
        return conn

    def _leave_on_sigterm(self) -> None:
        """Spark ends this planner process with SIGTERM when the query stops, without calling stop():
        leave the group at once (close the session) instead of lingering for the session timeout."""
        if threading.current_thread() is not threading.main_thread():
            return

        def on_sigterm(_signum: int, _frame: object) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # Spark sends it twice: finish leaving first
            try:
                self.stop()
            finally:
                os._exit(0)

        signal.signal(signal.SIGTERM, on_sigterm)

    @phase_timings.timed("planner.owned")
    def owned(self, member: Any = None) -> dict[Key, int]:
        """Owned partitions -> consumed position: a consistent snapshot (never a half-installed rebalance).

        Also remembers the topic incarnation each was claimed in: positions planned from this
        snapshot count in those, and `commit` writes them only into the same incarnation.
        """
        member = member if member is not None else self._connector()
        # Inactive: fenced (the topic was deleted or re-created) or stopped; the next rebalance
        # resolves them, and listing their log offsets would fail the query meanwhile.
        infos = {k: i for k, i in member.assignment.owned_infos().items() if i.active}
        self._claims = infos
        return {k: i.consumed_offset for k, i in infos.items()}

    def claim_of(self, key: Key) -> Any:
        """The claim record `key` was owned under in the last `owned()` snapshot (None: not owned):
        compared by identity, it tells a partition released and claimed again since apart."""
        return self._claims.get(key)

    def released_since_snapshot(self, keys: Iterable[Key]) -> set[Key]:
        """Of `keys` (from the last `owned()` snapshot), those no longer held by the same claim:
        released (or released and claimed again) by a rebalance since."""
        now = self._connector().assignment.owned_infos()
        return {k for k in keys if now.get(k) is None or now[k] is not self._claims.get(k) or not now[k].active}

    def epochs(self, keys: Iterable[Key]) -> dict[str, int]:
        """topic -> incarnation (czxid of its node) of the last snapshot, for the topics of `keys`."""
        out: dict[str, int] = {}
        for key in keys:
            claim = self._claims.get(key)
            epoch = None if claim is None else claim.epoch
            if epoch is not None:
                out[key[0]] = max(epoch, out.get(key[0], epoch))  # czxids grow: the newest one
        return out

    def topic_epochs(self, topics: Iterable[str]) -> dict[str, int | None]:
        """topic -> its incarnation (czxid of its node) now, read from ZooKeeper (None: deleted)."""
        return dict(self._connector().cluster.topic_epochs(topics))

    def connected(self) -> bool:
        """Whether ZooKeeper confirmed our session within the lease (the member may plan)."""
        return bool(self._connector().ownership_confirmed())

    def subscription(self) -> dict[str, tuple[int, int]]:
        """topic -> (incarnation, partition count) of every subscribed topic that exists now."""
        cluster = self._connector().cluster
        opts = self.opts
        topics = list(opts.topics) if opts.topic_filter is None else [t for t in cluster.all_topics() if opts.wants(t)]
        return {t: (epoch, len(parts)) for t, (parts, epoch) in cluster.topics(topics).items() if epoch is not None}

    def owners(self, keys: Iterable[Key]) -> dict[Key, str | None]:
        """The owner thread id ZooKeeper names for each partition now (None: unowned), for messages."""
        wanted = sorted(set(keys))
        group = self._connector().group
        out: dict[Key, str | None] = {}
        for topic in sorted({t for t, _ in wanted}):
            held = group.owners(topic)
            out.update({k: held.get(k[1]) for k in wanted if k[0] == topic})
        return out

    @phase_timings.timed("planner.bootstrap")
    def bootstrap(self) -> str:
        """The brokers executors start from. A planning call that meets the member's ZooKeeper
        session ending (or the connection down) uses the list read last: executors only need a
        broker to start from, and failing the call would end the query."""
        if self.opts.bootstrap_override:
            return self.opts.bootstrap_override
        try:
            self._brokers_read = bootstrap_of(self._connector().cluster.brokers(), self.opts.config)
        except Exception as exc:  # noqa: BLE001 - classified right here
            if self._brokers_read is None or not is_retriable(exc):
                raise
            log.warning(
                "could not read /brokers/ids (%s); planning with %s, read before",
                describe_error(exc),
                self._brokers_read,
            )
        return self._brokers_read

    @phase_timings.timed("planner.spans")
    def spans(self, keys: Sequence[Key]) -> Answers[tuple[int, int]]:
        """Each partition's log (start, end) from the brokers, per partition: those unanswered after
        fetchOffset.numRetries attempts are in `trouble` (the caller plans the rest)."""
        return self._lookups().spans(keys)

    @phase_timings.timed("planner.times")
    def times(self, times: Mapping[Key, int]) -> Answers[int]:
        """Offsets for timestamps (startingTimestamp and its kin), retried and per partition as `spans`."""
        return self._lookups().times(times)

    def _lookups(self) -> LogOffsets:
        if self._log_offsets is None:
            self._log_offsets = log_offsets(self.opts, self.bootstrap())
        return self._log_offsets

    @phase_timings.timed("planner.zookeeper_commit")
    def commit(self, positions: dict[Key, int], member: Any = None) -> None:
        """Write progress to /consumers/<group>/offsets, fenced: only partitions we still own.

        Also writes again every owned partition whose recorded position has not landed (a write
        that failed before: the member records a position before writing it, so the planner would
        otherwise never see it as due again), so a failed commit is retried at the next trigger,
        at Spark's commit(end) and at stop().

        With dual commit (offsets.storage=kafka) the member's offset store writes ZooKeeper, then the
        brokers; each commit hands it every owned position (ZooKeeper gets only what changed), so
        the brokers receive the full map the connector's commits send, and a Kafka-side failure is
        made good by the next commit (OffsetStore, "Dual commit during a migration" in docs/design.md)."""
        member = member if member is not None else self._connector()
        infos = member.assignment.owned_infos()
        unwritten = {
            k: i.consumed_offset
            for k, i in infos.items()
            if i.active and i.consumed_offset >= 0 and i.consumed_offset != i.committed_offset
        }
        epochs = {t: (c.epoch if (c := self._claims.get((t, p))) is not None else None) for t, p in positions}
        for (topic, _), info in ((k, infos[k]) for k in unwritten if k not in positions):
            epochs.setdefault(topic, info.epoch)  # a retried position counts in the claim it was recorded in
        todo = {**{k: o for k, o in unwritten.items() if epochs.get(k[0]) == infos[k].epoch}, **positions}
        if not todo:
            return
        if self.opts.dual_commit:
            todo = {**full_map(infos, epochs), **todo}
        try:
            # The member checks, under its rebalance lock, that each partition is still claimed in
            # the incarnation the positions count in: a re-claim in between must not receive them.
            written = member.commit_positions(todo, epochs=epochs)
        except KafkaSideFailed:
            raise  # ZooKeeper was written; a bug on the Kafka side ends the query, as it ends a member
        except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: the next trigger commits again
            log.warning(
                "committing offsets of group %s failed (%s); will retry at the next trigger",
                self.opts.group_id,
                describe_error(exc),
            )
            return
        skipped = sorted(k for k, ok in written.items() if not ok)
        if skipped:
            log.info("not committing %s: no longer owned by this query", ", ".join(f"{t}-{p}" for t, p in skipped))

    def stop(self) -> None:
        """Commit the last batch the sink committed (with the option checkpointLocation), then leave
        the group. Never the last *planned* batch: a stop may have cancelled it, and its end would
        make the member taking over skip it; Spark's commit log says which batch really completed."""
        member, self._conn = self._conn, None
        if member is not None:
            if self.opts.checkpoint_location:
                self._commit_completed(member)
            member.shutdown()  # leaves the group: our partitions move to the other members
        if self._log_offsets is not None:
            self._log_offsets.close()
            self._log_offsets = None

    @staticmethod
    def check_checkpoint(location: str) -> None:
        """Say at the first batch, not only at stop, when the option names no checkpoint."""
        try:
            if not CheckpointLog(location).exists():
                log.warning(
                    "option checkpointLocation: %s holds no offset log: it must be the query's own "
                    "checkpointLocation, or stop() cannot commit the last completed batch",
                    location,
                )
        except CheckpointError as exc:
            log.warning("option checkpointLocation: %s", exc)

    def _commit_completed(self, member: Any) -> None:
        """Commit the end of the checkpoint's last committed batch, if this source planned or read it;
        bounded by STOP_COMMIT_TIMEOUT_S (on a thread: a SIGTERM may arrive while the main thread
        holds the member's lock, and the filesystem may hang)."""
        location = str(self.opts.checkpoint_location)

        def work() -> None:
            try:
                batch, end = last_completed(CheckpointLog(location), list(self._seen))
                if end is None:
                    if self._seen:  # we planned or read batches, yet the last committed one is not ours
                        log.warning(
                            "not committing on stop: the last committed batch in %s (%s) has none of this "
                            "query's offsets; the option checkpointLocation must be the query's own "
                            "checkpointLocation",
                            location,
                            batch,
                        )
                    return
                owned = self.owned(member)
                positions = forward_commits(end, owned, self.epochs(owned))
                log.info(
                    "stop: committing batch %d, which the sink committed: %s",
                    batch,
                    ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(positions.items())) or "nothing new",
                )
                self.commit(positions, member)
            except Exception as exc:  # noqa: BLE001 - the stop goes on; ZooKeeper stays one batch behind
                log.warning("not committing the last completed batch of group %s on stop: %s", self.opts.group_id, exc)

        worker = threading.Thread(target=work, name="zkconsumer-stop-commit", daemon=True)
        worker.start()
        worker.join(STOP_COMMIT_TIMEOUT_S)
        if worker.is_alive():
            log.warning(
                "gave up committing the last completed batch of group %s after %.0f s; ZooKeeper stays one "
                "batch behind the sink",
                self.opts.group_id,
                STOP_COMMIT_TIMEOUT_S,
            )


def full_map(infos: Mapping[Key, Any], epochs: dict[str, int | None]) -> dict[Key, int]:
    """Dual commit: every owned partition's recorded position (claim records `infos`), those of a
    topic incarnation other than the one `epochs` names left out; `epochs` gains the topics it
    lacked (their claim's incarnation)."""
    out = {}
    for (topic, partition), info in infos.items():
        if info.active and info.consumed_offset >= 0 and epochs.setdefault(topic, info.epoch) == info.epoch:
            out[(topic, partition)] = info.consumed_offset
    return out
