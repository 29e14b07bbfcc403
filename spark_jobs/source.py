"""The `zkconsumer` Python data source: bounded reads and micro-batches planned from ZooKeeper group state."""

from __future__ import annotations

import collections
import logging
import os
import signal
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from spark_jobs.checkpoint import CheckpointError, CheckpointLog, last_completed, previous_end
from spark_jobs.kafka_read import SCHEMA, LogOffsets, read_range
from spark_jobs.offsets import (
    EARLIEST,
    Key,
    OffsetRange,
    batch_ranges,
    decode_epochs,
    decode_offsets,
    encode_offsets,
    initial_position,
    is_initial,
    rate_limit,
    settle,
    split,
)
from spark_jobs.options import SourceOptions, parse_options
from spark_jobs.planning import bootstrap_of, plan_batch
from spark_jobs.reconcile import canonical, describe, disagreements, forward_commits, split_trailing
from zkconsumer.errors import describe as describe_error
from zkconsumer.errors import is_retriable

try:  # pyspark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
except ImportError:  # 4.0/4.1 call latestOffset() without arguments; the stand-ins are never used by Spark

    class ReadLimit:  # type: ignore[no-redef]
        pass

    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        pass

    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        def __init__(self, max_rows: int) -> None:
            self.max_rows = max_rows

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


log = logging.getLogger("spark_jobs.source")
# stop() gives the last completed batch's commit this long (checkpoint read and ZooKeeper write),
# then leaves the group regardless: a stuck filesystem or ZooKeeper must not hold the stop.
STOP_COMMIT_TIMEOUT_S = 15.0


class ZkConsumerDataSource(DataSource):
    """`spark.read` / `spark.readStream` `.format("zkconsumer")` over a legacy ZooKeeper consumer group."""

    @classmethod
    def name(cls) -> str:
        return "zkconsumer"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return ZkBatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ZkStreamReader(parse_options(self.options, streaming=True))


class _RangeReading:
    """Executor side, shared by both readers: a pickled copy reads one OffsetRange per task."""

    opts: SourceOptions
    _reader_conf: dict[str, object]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, OffsetRange):
            return iter(())  # Spark's single placeholder task when there is nothing to read
        return read_range(
            partition,
            self._reader_conf,
            batch_size=self.opts.batch_size,
            fail_on_data_loss=self.opts.fail_on_data_loss,
            poll_timeout_s=self.opts.poll_timeout_ms / 1000.0,
        )


class ZkBatchReader(_RangeReading, DataSourceReader):
    """Committed offsets (or startingOffsets) -> log end (or endingOffsets); no group membership."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._reader_conf = opts.reader_config()

    def partitions(self) -> list[InputPartition]:
        plan = plan_batch(self.opts)
        ranges = [(p.key, p.start, p.end) for p in plan.partitions if p.size > 0]
        log.info("batch read of group %s: %d messages in %d partitions", self.opts.group_id, plan.total, len(ranges))
        return list(split(ranges, plan.bootstrap, self.opts.min_partitions))


class ZkStreamReader(_RangeReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the partitions the group assigns to this query's driver-side member.

    Planning methods run in one long-lived driver Python process per query, so the member (a
    ConsumerConnector with fetch=False) lives as long as the query; executors get pickled copies
    without it (__getstate__). Offsets: {"topic/partition": next offset} for every partition the
    query has tracked; only owned ones advance. An "@from" sub-object marks partitions whose batch
    starts elsewhere than the previous end (newly assigned, or resumed past another member), and
    every partition of the batch planned from initialOffset(), which Spark asks for again when it
    replays that batch. "@epochs" names the topic incarnation the positions count in.
    """

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._reader_conf = opts.reader_config()
        self._member: Any = None  # ConsumerConnector, created on first use
        self._log_offsets: LogOffsets | None = None
        self._resumed = False  # the first latestOffset of a process follows the checkpoint
        self._last_end: dict[str, Any] | None = None
        self._targets: dict[Key, int] | None = None  # Trigger.AvailableNow: never read past these
        self._latest: dict[Key, int] = {}
        self._owned_epochs: dict[Key, int | None] = {}  # incarnations of the last _owned() snapshot
        # Offsets this process planned or Spark handed it (canonical JSON): stop() commits a batch
        # from the checkpoint only if its offsets are one of these, i.e. really this query's.
        self._seen: collections.deque[str] = collections.deque(maxlen=64)
        self._checkpoint_checked = False
        self._brokers_read: str | None = None  # the bootstrap list of the last /brokers/ids read

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_member"] = state["_log_offsets"] = None  # sockets and threads: driver only
        return state

    # ---- group membership and log offsets (driver) -------------------------------------------------
    def _connector(self) -> Any:
        if self._member is None:
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
            self._member = conn
            self._leave_on_sigterm()
        return self._member

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

    def _owned(self, member: Any = None) -> dict[Key, int]:
        """Owned partitions -> consumed position: a consistent snapshot (never a half-installed rebalance).

        Also remembers the topic incarnation each was claimed in: positions planned from this
        snapshot count in those, and `_commit` writes them only into the same incarnation.
        """
        member = member if member is not None else self._connector()
        # Inactive: fenced (the topic was deleted or re-created) or stopped; the next rebalance
        # resolves them, and listing their log offsets would fail the query meanwhile.
        infos = {k: i for k, i in member.assignment.owned_infos().items() if i.active}
        self._owned_epochs = {k: i.epoch for k, i in infos.items()}
        return {k: i.consumed_offset for k, i in infos.items()}

    def _epochs(self, keys: Iterable[Key]) -> dict[str, int]:
        """topic -> incarnation (czxid of its node) of the last snapshot, for the topics of `keys`."""
        out: dict[str, int] = {}
        for key in keys:
            epoch = self._owned_epochs.get(key)
            if epoch is not None:
                out[key[0]] = max(epoch, out.get(key[0], epoch))  # czxids grow: the newest one
        return out

    def _connected(self) -> bool:
        return bool(self._connector().ownership_confirmed())

    def _bootstrap(self) -> str:
        """The brokers executors start from. A planning call that meets the member's ZooKeeper
        session ending (or the connection down) uses the list read last: executors only need a
        broker to start from, and failing the call would end the query."""
        if self.opts.bootstrap_override:
            return self.opts.bootstrap_override
        try:
            self._brokers_read = bootstrap_of(self._connector().group.cluster.brokers(), self.opts.config)
        except Exception as exc:  # noqa: BLE001 - classified right here
            if self._brokers_read is None or not is_retriable(exc):
                raise
            log.warning(
                "could not read /brokers/ids (%s); planning with %s, read before",
                describe_error(exc),
                self._brokers_read,
            )
        return self._brokers_read

    def _spans(self, keys: Sequence[Key]) -> dict[Key, tuple[int, int]]:
        if self._log_offsets is None:
            self._log_offsets = LogOffsets(
                self._bootstrap(),
                read_committed=self.opts.isolation_committed(),
                client_config=self.opts.client_security(),
            )
        return self._log_offsets.spans(keys)

    def _commit(self, positions: dict[Key, int], member: Any = None) -> None:
        """Write progress to /consumers/<group>/offsets, fenced: only partitions we still own."""
        if not positions:
            return
        member = member if member is not None else self._connector()
        epochs = {t: self._owned_epochs.get((t, p)) for t, p in positions}
        try:
            # The member checks, under its rebalance lock, that each partition is still claimed in
            # the incarnation the positions count in: a re-claim in between must not receive them.
            written = member.commit_positions(positions, epochs=epochs)
        except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: the next trigger commits again
            log.warning(
                "committing offsets of group %s failed (%s); will retry at the next trigger", self.opts.group_id, exc
            )
            return
        skipped = sorted(k for k, ok in written.items() if not ok)
        if skipped:
            log.info("not committing %s: no longer owned by this query", ", ".join(f"{t}-{p}" for t, p in skipped))

    # ---- Spark's planning calls ----------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """New query: startingOffsets JSON entry > committed offset > startingOffsets earliest/latest.

        Spark keeps only batch ends and asks again when it replays batch 0 after a restart; the
        answer may differ by then, so the batch planned from this one records every start ("@from").
        """
        owned = self._owned()
        wanted = {
            k: initial_position(
                k,
                zk,
                explicit=self.opts.starting_explicit,
                fallback=self.opts.starting,
                ignore_committed=self.opts.ignore_committed,
            )
            for k, zk in owned.items()
        }
        spans = self._spans(list(wanted))
        positions = {
            k: settle(k, pos, *spans[k], fail_on_data_loss=self.opts.fail_on_data_loss, past_end_to_end=True)
            for k, pos in wanted.items()
        }
        self._last_end = encode_offsets(positions, epochs=self._epochs(owned), initial=True)
        return self._last_end

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._targets = {k: high for k, (_, high) in self._spans(list(self._owned())).items()}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None) -> dict[str, Any]:
        if start is None:  # pyspark < 4.2 passes nothing: continue from our own last answer
            start = self._last_end if self._last_end is not None else self.initialOffset()
        before = decode_offsets(start)
        if not self._connected():
            # Like the fetcher's delivery gate: while our session may be expiring, another member
            # may be taking these partitions over. Plan nothing new until ZooKeeper is back.
            log.warning("not connected to ZooKeeper: planning no new data for group %s", self.opts.group_id)
            return start
        owned = self._owned()
        self._seen.append(canonical(start))
        # The first trigger that owns anything: one that waits for a dead predecessor's owner nodes
        # (a driver killed before its session expired) owns nothing and must not use it up.
        first, self._resumed = not self._resumed and bool(owned), self._resumed or bool(owned)
        recorded, current = decode_epochs(start), self._epochs(owned)
        known = self._same_incarnation(before, recorded, current)
        if first and not is_initial(start):
            self._report_restart(start, {k: v for k, v in known.items() if k in owned}, owned)
        wanted: dict[Key, int] = {}
        for key, committed in owned.items():
            if key not in known:  # new to the query (or its topic re-created): the group's offset, else earliest
                wanted[key] = initial_position(
                    key, committed, explicit={}, fallback="earliest", ignore_committed=self.opts.ignore_committed
                )
            elif first:  # a (re)started query follows its checkpoint
                wanted[key] = known[key]
            else:  # back after another member had it: skip what that member already consumed
                wanted[key] = max(known[key], committed)
        spans = self._spans(list(owned))
        starts = dict(known)
        for key, pos in wanted.items():
            starts[key] = settle(
                key, pos, *spans[key], fail_on_data_loss=self.opts.fail_on_data_loss, past_end_to_end=True
            )
            if pos == EARLIEST:
                log.info(
                    "%s-%d starts at its earliest offset %d: new to the query, no committed offset",
                    key[0],
                    key[1],
                    starts[key],
                )
        froms = {k: v for k, v in starts.items() if v != before.get(k)}
        # Spark asks for the next batch only once the batch ending at `start` completed (and was
        # recorded in the commit log): that progress is safe to show the group's tools now.
        self._commit({k: starts[k] for k in owned if starts[k] != owned[k]})
        highs = {k: spans[k][1] for k in owned}
        self._latest = highs
        if self._targets is not None:
            highs = {k: min(h, self._targets.setdefault(k, h)) for k, h in highs.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        positions = dict(starts)
        positions.update(rate_limit({k: (starts[k], max(starts[k], highs[k])) for k in owned}, max_rows))
        epochs = {t: e for t, e in {**recorded, **current}.items() if any(k[0] == t for k in positions)}
        if positions == before and not froms and epochs == recorded:
            return start  # nothing new: the same JSON, so Spark skips the trigger
        if is_initial(start):
            froms = starts  # batch 0: replayed from these even if initialOffset() answers otherwise
        self._last_end = encode_offsets(positions, froms, epochs)
        self._seen.append(canonical(self._last_end))
        return self._last_end

    def _report_restart(self, start: dict[str, Any], checkpoint: dict[Key, int], zookeeper: dict[Key, int]) -> None:
        """A resumed query follows its checkpoint, not ZooKeeper: say so loudly where they disagree
        (an operator's `offsets reset`, another member's progress), quietly where ZooKeeper only
        trails by the query's own last batch (what a stop or a crash leaves)."""
        differ = disagreements(checkpoint, zookeeper)
        if not differ:
            return
        hint = ""
        if self.opts.checkpoint_location:
            try:
                trailing, differ = split_trailing(
                    differ, previous_end(CheckpointLog(self.opts.checkpoint_location), start)
                )
            except CheckpointError as exc:
                trailing, hint = {}, f" (could not tell the query's own last commit apart: {exc})"
            if trailing:
                log.info(
                    "resuming from the checkpoint; ZooKeeper is one batch behind it, at the query's own "
                    "last commit: %s",
                    describe(trailing),
                )
        else:
            hint = " (set the option checkpointLocation to the query's checkpoint to tell its own last commit apart)"
        if differ:
            log.warning(
                "group %s: the checkpoint and ZooKeeper disagree: %s. The checkpoint wins: these partitions "
                "resume at the checkpoint's offsets and ZooKeeper is overwritten with them at this trigger. "
                "To start from the ZooKeeper offsets instead (e.g. after `zkconsumer offsets reset`), start "
                "the query with a new checkpoint location%s",
                self.opts.group_id,
                describe(differ),
                hint,
            )

    @staticmethod
    def _same_incarnation(before: dict[Key, int], recorded: dict[str, int], current: dict[str, int]) -> dict[Key, int]:
        """The tracked positions that still mean something: those of a topic deleted and created
        again since they were counted belong to the old log, and are dropped."""
        gone = {t for t, e in current.items() if t in recorded and recorded[t] != e}
        for topic in sorted(gone):
            log.warning(
                "topic %s was deleted and created again (incarnation %d, was %d): its positions "
                "in the checkpoint are dropped; its partitions start over",
                topic,
                current[topic],
                recorded[topic],
            )
        return {k: v for k, v in before.items() if k[0] not in gone}

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return encode_offsets(self._latest) if self._latest else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        self._seen.append(canonical(end))  # also a batch replayed from the checkpoint after a restart
        if self.opts.checkpoint_location and not self._checkpoint_checked:
            self._checkpoint_checked = True  # Spark wrote this batch's offsets/<id> before planning its tasks
            self._check_checkpoint(self.opts.checkpoint_location)
        ranges = batch_ranges(start, end)
        return split(ranges, self._bootstrap(), self.opts.min_partitions) if ranges else []

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's own "done up to end": commit it where it moves an owned partition forward and
        the partition is still claimed in the topic incarnation `end` was counted in."""
        owned = self._owned()
        self._commit(forward_commits(end, owned, self._epochs(owned)))

    def stop(self) -> None:
        """Commit the last batch the sink committed (with the option checkpointLocation), then leave
        the group. Never the last *planned* batch: a stop may have cancelled it, and its end would
        make the member taking over skip it; Spark's commit log says which batch really completed."""
        member, self._member = self._member, None
        if member is not None:
            if self.opts.checkpoint_location:
                self._commit_completed(member)
            member.shutdown()  # leaves the group: our partitions move to the other members
        if self._log_offsets is not None:
            self._log_offsets.close()
            self._log_offsets = None

    @staticmethod
    def _check_checkpoint(location: str) -> None:
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
                owned = self._owned(member)
                positions = forward_commits(end, owned, self._epochs(owned))
                log.info(
                    "stop: committing batch %d, which the sink committed: %s",
                    batch,
                    ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(positions.items())) or "nothing new",
                )
                self._commit(positions, member)
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
