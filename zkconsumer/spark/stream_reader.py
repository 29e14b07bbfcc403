"""ZkStreamReader: micro-batches planned from the group state of the query's driver-side member."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from zkconsumer.errors import ZOOKEEPER_FAILURES
from zkconsumer.errors import describe as describe_error
from zkconsumer.spark import phase_timings
from zkconsumer.spark.broker_offsets import explicit_starts_for
from zkconsumer.spark.broker_trouble import Answers, TroubleClock, names
from zkconsumer.spark.kafka_read import RangeReading
from zkconsumer.spark.offsets import (
    Key,
    batch_ranges,
    decode_epochs,
    decode_offsets,
    encode_offsets,
    initial_position,
    is_initial,
    rate_limit,
    settle,
)
from zkconsumer.spark.options import SourceOptions
from zkconsumer.spark.reconcile import canonical, forward_commits
from zkconsumer.spark.restart_report import report_restart
from zkconsumer.spark.stream_member import StreamMember
from zkconsumer.spark.topic_loss import replayed_ranges, still_counted
from zkconsumer.spark.triggers import PAUSE_S, AvailableNowIncomplete, AvailableNowRun, TriggerAdmission, wait_bound_s

try:  # pyspark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

    STREAM_API = True
except ImportError:  # 4.0/4.1: the stand-ins let batch reads import; streamReader() refuses
    STREAM_API = False

    class ReadLimit:  # type: ignore[no-redef]
        pass

    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        pass

    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        def __init__(self, max_rows: int) -> None:
            self.max_rows = max_rows

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


log = logging.getLogger("zkconsumer.spark.source")
# initialOffset()'s sub-object: topic -> [incarnation, partition count] when the query started.
# Those partitions follow the starting options at the query's first trigger that owns anything;
# others (added later, a new topic, a re-created one) and every later claim start at the group's
# offset, else earliest. Not carried into batch ends: the options apply once.
START = "@start"


class ZkStreamReader(RangeReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the partitions the group assigns to this query's driver-side member.

    Planning methods run in one long-lived driver Python process per query, so the member (a
    ConsumerConnector with fetch=False) lives as long as the query; executors get pickled copies
    without it (__getstate__). Offsets: {"topic/partition": next offset} for every partition the
    query has tracked; only owned ones advance. An "@from" sub-object marks partitions whose batch
    starts elsewhere than the previous end (newly assigned, or resumed past another member), and
    every partition of the batch planned from initialOffset(), which Spark asks for again when it
    replays that batch. "@epochs" names the topic incarnation the positions count in.

    The member itself (joining, owned positions, fenced commits, log offsets, stop) is a
    stream_member.StreamMember it holds (`member`; tests pass a stand-in); this class answers
    Spark's planning calls.
    """

    def __init__(self, opts: SourceOptions, member: StreamMember | None = None) -> None:
        self.opts = opts
        self._reader_conf = opts.reader_config()
        self.member = member if member is not None else StreamMember(opts)
        # Partitions that follow the checkpoint, not ZooKeeper: those owned at the process's first
        # trigger that owns anything, until each is planned (None: no such trigger yet)
        # (key -> the claim it was owned under: released and claimed again, it no longer counts)
        self._resume: dict[Key, Any] | None = None
        self._by_rules: dict[Key, Any] = {}  # a new query's partitions still to start by its starting options
        self._trouble = TroubleClock(opts.unreadable_timeout_ms)  # broker trouble per partition
        self.clock = time.monotonic  # tests pass their own clock and sleep
        self.sleep = time.sleep
        self._last_end: dict[str, Any] | None = None
        self._run: AvailableNowRun | None = None  # Trigger.AvailableNow: targets, and the wait for them
        self._latest: dict[Key, int] = {}
        self._checkpoint_checked = False
        self._admission = (
            TriggerAdmission(opts.min_offsets_per_trigger, opts.max_trigger_delay_ms)
            if opts.min_offsets_per_trigger
            else None
        )
        if not opts.checkpoint_location:
            # A Python source is never told the query's checkpoint (PySpark 4.3 passes it nothing
            # but the reader's options), and without its commit log stop() cannot tell which
            # batch the sink completed: say so once, where the query starts.
            log.warning(
                "group %s: the option checkpointLocation is not set, so a graceful stop leaves the group's "
                "ZooKeeper offsets one batch behind the sink (the query itself resumes from its checkpoint; "
                "tools and members that take its partitions over see the older offsets). Repeat the "
                "writer's checkpointLocation as a source option to commit the last completed batch on stop",
                opts.group_id,
            )

    def stop(self) -> None:
        """Spark's stop: the member commits the last completed batch and leaves (StreamMember.stop)."""
        self.member.stop()

    # ---- Spark's planning calls ----------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """New query: startingOffsets JSON entry > committed offset > startingOffsets earliest/latest.

        Spark keeps only batch ends and asks again when it replays batch 0 after a restart; the
        answer may differ by then, so the batch planned from this one records every start ("@from").
        The subscription's partitions now are recorded too (START): those the query first plans
        later start by the same rules. A partition the brokers do not answer for is left to the
        first trigger they answer (broker trouble counts towards unreadablePartitionTimeoutMs).
        """
        owned = self.member.owned()
        explicit = explicit_starts_for(self.opts, owned, self.member.times)  # timestamps resolved
        spans = self.member.spans(list(owned))
        trouble = self._troubled(owned, spans.trouble, explicit.trouble, what="the query's start")
        wanted = {k: self._new_query_start(k, zk, explicit.found) for k, zk in owned.items() if k not in trouble}
        positions = {
            k: settle(k, pos, *spans.found[k], fail_on_data_loss=self.opts.fail_on_data_loss, past_end_to_end=True)
            for k, pos in wanted.items()
        }
        doc = encode_offsets(positions, epochs=self.member.epochs(positions), initial=True)
        try:
            doc[START] = {t: [e, n] for t, (e, n) in sorted(self.member.subscription().items())}
        except ZOOKEEPER_FAILURES as exc:
            log.warning(
                "could not read the subscription's topics (%s): partitions claimed later start at the "
                "group's offset, else earliest, not by startingOffsets",
                describe_error(exc),
            )
        self._last_end = doc
        return doc

    def _new_query_start(self, key: Key, committed: int, explicit: Mapping[Key, int]) -> int:
        """`explicit`: startingOffsets' entries with the starting timestamps resolved (explicit_starts_for)."""
        return initial_position(
            key,
            committed,
            explicit=explicit,
            fallback=self.opts.starting,
            ignore_committed=self.opts.ignore_committed,
        )

    def _troubled(self, owned: Mapping[Key, int], *trouble: Mapping[Key, str], what: str) -> dict[Key, str]:
        """The one rule for broker trouble: the partitions the brokers left unanswered (after every
        fetchOffset.numRetries attempt) are not planned now, the others are; a partition unreadable
        past unreadablePartitionTimeoutMs fails the query naming it (broker_trouble.TroubleClock)."""
        merged = {k: why for t in trouble for k, why in t.items()}
        now = self.clock() * 1000.0
        self._trouble.forget([k for k in self._trouble.since if k not in owned])
        self._trouble.saw([k for k in owned if k not in merged], merged, now)
        if merged:
            log.warning(
                "planning no new data for %s this trigger (group %s): the brokers did not answer (%s)",
                names(merged),
                self.opts.group_id,
                next(iter(merged.values())),
            )
        self._trouble.check(now, what)
        return merged

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """The run's targets: the log end of every partition owned now (one owned later: its log end
        when first planned). latestOffset() then returns its start only once every target is read."""
        owned = list(self.member.owned())
        spans = self.member.spans(owned)
        targets: dict[Key, int | None] = {k: spans.found[k][1] if k in spans.found else None for k in owned}
        if spans.trouble:
            log.warning(
                "the brokers did not give the log ends of %s (%s): their targets are set at the run's first "
                "trigger they answer",
                names(spans.trouble),
                next(iter(spans.trouble.values())),
            )
        self._run = AvailableNowRun(targets, wait_bound_s(self.opts.config), clock=self.clock)

    @phase_timings.timed("planner.latestOffset")
    def latestOffset(self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None) -> dict[str, Any]:
        if start is None:  # pyspark < 4.2 passes nothing: continue from our own last answer
            start = self._last_end if self._last_end is not None else self.initialOffset()
        run = self._run
        if run is None:
            return self._plan(start, limit)
        # Trigger.AvailableNow: Spark ends the run the first time we answer `start`, so answer it only
        # when every target is read; a trigger that cannot plan yet waits (bounded) and plans again.
        while True:
            end = self._plan(start, limit)
            if end is not start:
                run.planned()
                return end
            why = run.unfinished(self.member, decode_offsets(start), self._latest)
            if why is None:
                return start
            if run.out_of_time():
                raise AvailableNowIncomplete(
                    f"Trigger.AvailableNow run of group {self.opts.group_id} stopped short after waiting "
                    f"{run.wait_s:.0f} s: {why}. Run it again once these partitions are this query's"
                )
            log.info("Trigger.AvailableNow run not done (%s): planning again in %.0f s", why, PAUSE_S)
            self.sleep(PAUSE_S)

    def _plan(self, start: dict[str, Any], limit: ReadLimit | None) -> dict[str, Any]:
        """One trigger's plan: the next batch's end offsets, or `start` itself when nothing is new."""
        before = decode_offsets(start)
        if not self.member.connected():
            # Like the fetcher's delivery gate: once the lease is out our session may be expiring and
            # another member taking these partitions over. Plan nothing new until ZooKeeper confirms it.
            log.warning(
                "ZooKeeper has not confirmed our session within the lease: planning no new data for group %s",
                self.opts.group_id,
            )
            return start
        owned = self.member.owned()
        if self._run is not None:
            self._run.owns(owned)
        self.member.remember(canonical(start))
        recorded, current = decode_epochs(start), self.member.epochs(owned)
        deleted = self._deleted_topics(before, owned)
        known = still_counted(before, recorded, current, deleted, fail_on_data_loss=self.opts.fail_on_data_loss)
        if self._resume is None and owned:
            # The first trigger that owns anything (one that waits for a dead predecessor's owner
            # nodes owns nothing and must not use it up): these partitions follow the checkpoint
            # until each is planned, even if broker trouble keeps one from this trigger's plan.
            self._resume = {k: self.member.claim_of(k) for k in owned}
            if is_initial(start):
                # A new query's start: its starting options apply to these partitions, once (as
                # Spark applies them once); partitions it claims later start at the group's offset.
                started = start.get(START) or {}
                self._by_rules = {
                    k: self.member.claim_of(k)
                    for k in owned
                    if k not in known and self._under_start_rules(k, started, current)
                }
            else:
                report_restart(self.opts, start, {k: v for k, v in known.items() if k in owned}, owned)
        # Only under the same claim: one released meanwhile (broker trouble kept it from the first
        # plan) may have been read and committed by another member, whose progress then counts.
        resume = {k for k, c in (self._resume or {}).items() if k in owned and self.member.claim_of(k) is c}
        by_rules = sorted(
            k for k, c in self._by_rules.items() if k in owned and k not in known and self.member.claim_of(k) is c
        )
        explicit = explicit_starts_for(self.opts, by_rules, self.member.times) if by_rules else Answers({})
        wanted: dict[Key, int] = {}
        for key, committed in owned.items():
            if key not in known:
                wanted[key] = (
                    self._new_query_start(key, committed, explicit.found)
                    if key in by_rules
                    else initial_position(key, committed, explicit={}, fallback="earliest", ignore_committed=False)
                )
            elif key in resume:  # a (re)started query follows its checkpoint
                wanted[key] = known[key]
            else:  # back after another member had it: skip what that member already consumed
                wanted[key] = max(known[key], committed)
        spans = self.member.spans(list(owned))
        trouble = self._troubled(owned, spans.trouble, explicit.trouble, what="the log offsets or times")
        starts = dict(known)
        for key, pos in wanted.items():
            if key in trouble:
                continue  # not planned now: it keeps its position (or stays untracked) until answered
            starts[key] = settle(
                key, pos, *spans.found[key], fail_on_data_loss=self.opts.fail_on_data_loss, past_end_to_end=True
            )
            if key not in known:
                log.info("%s-%d starts at offset %d: new to the query", key[0], key[1], starts[key])
        owned = {k: v for k, v in owned.items() if k not in trouble}
        if self._resume is not None:
            self._resume = {k: c for k, c in self._resume.items() if k in resume and k in trouble}  # the rest planned
            self._by_rules = {k: c for k, c in self._by_rules.items() if k in by_rules and k in trouble}
        # Spark asks for the next batch only once the batch ending at `start` completed (and was
        # recorded in the commit log): that progress is safe to show the group's tools now. (The
        # member also writes again what an earlier trigger failed to write.)
        self.member.commit({k: starts[k] for k in owned if starts[k] != owned[k]})
        if not self.member.connected():
            # The commit and the log lookups can block (a link down, the rebalance lock): the lease
            # checked above may have run out meanwhile. Plan only on a lease that still holds.
            log.warning("the lease ran out while planning: no new data for group %s this trigger", self.opts.group_id)
            return start
        released = self.member.released_since_snapshot(owned)
        if released:
            # A rebalance released them while this trigger planned (the commit above waits for its
            # lock): another member may read them now, so this batch must not.
            log.info("not planning %s: released while planning", ", ".join(f"{t}-{p}" for t, p in sorted(released)))
            owned = {k: v for k, v in owned.items() if k not in released}
            for key in released:
                if key in before:
                    starts[key] = before[key]
                else:
                    starts.pop(key, None)
        froms = {k: v for k, v in starts.items() if v != before.get(k)}
        highs = {k: spans.found[k][1] for k in owned}
        self._latest = highs
        if self._run is not None:
            highs = self._run.cap(highs)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        positions = dict(starts)
        positions.update(rate_limit({k: (starts[k], max(starts[k], highs[k])) for k in owned}, max_rows))
        epochs = {t: e for t, e in {**recorded, **current}.items() if any(k[0] == t for k in positions)}
        if positions == before and not froms and epochs == recorded:
            return start  # nothing new: the same JSON, so Spark skips the trigger
        if self._waits_for_more({k: highs[k] - starts[k] for k in owned}):
            return start  # minOffsetsPerTrigger: fewer are there, and maxTriggerDelay has not passed
        if is_initial(start):
            froms = starts  # batch 0: replayed from these even if initialOffset() answers otherwise
        self._last_end = encode_offsets(positions, froms, epochs)
        self.member.remember(canonical(self._last_end))
        return self._last_end

    def _waits_for_more(self, backlog: dict[Key, int]) -> bool:
        """minOffsetsPerTrigger (triggers.TriggerAdmission); never under Trigger.AvailableNow, whose
        run must reach its targets rather than wait for more."""
        if self._admission is None or self._run is not None:
            return False
        return self._admission.delay(sum(max(0, n) for n in backlog.values()), time.monotonic() * 1000.0)

    @staticmethod
    def _under_start_rules(key: Key, started: dict[str, Any], current: dict[str, int]) -> bool:
        """Whether a partition owned at a new query's first trigger that owns anything follows the
        starting options: one that existed when the query started (same topic incarnation). One
        that came later, like every partition claimed after that trigger, starts at the group's
        offset, else earliest (as Spark reads newly discovered partitions), so messages produced
        before the next trigger are read."""
        topic, partition = key
        then = started.get(topic)
        return then is not None and partition < then[1] and current.get(topic, then[0]) == then[0]

    def _deleted_topics(self, before: Mapping[Key, int], owned: Mapping[Key, int]) -> set[str]:
        """Tracked topics of which no partition is owned now and whose node is gone from ZooKeeper
        (one look-up, only for topics the query tracks but owns nothing of)."""
        unowned = sorted({k[0] for k in before} - {k[0] for k in owned})
        if not unowned:
            return set()
        try:
            return {t for t, epoch in self.member.topic_epochs(unowned).items() if epoch is None}
        except ZOOKEEPER_FAILURES as exc:
            log.warning("could not tell whether %s still exist (%s)", ", ".join(unowned), describe_error(exc))
            return set()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return encode_offsets(self._latest) if self._latest else None

    @phase_timings.timed("planner.partitions")
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        self.member.remember(canonical(end))  # also a batch replayed from the checkpoint after a restart
        if self.opts.checkpoint_location and not self._checkpoint_checked:
            self._checkpoint_checked = True  # Spark wrote this batch's offsets/<id> before planning its tasks
            self.member.check_checkpoint(self.opts.checkpoint_location)
        ranges = batch_ranges(start, end)
        if ranges and (self._last_end is None or canonical(end) != canonical(self._last_end)):
            ranges = self._current_incarnation(ranges, decode_epochs(end))
        return self._tasks(ranges, self.member.bootstrap(), dict(decode_epochs(end))) if ranges else []

    def _current_incarnation(self, ranges: list[tuple[Key, int, int]], recorded: dict[str, int]) -> list[Any]:
        """A batch this process did not plan (Spark replaying its checkpoint after a restart): its
        offsets count in the topic incarnations recorded with it. A topic deleted or created again
        since is not read at those offsets (they would name other messages of the new log): the
        query fails (failOnDataLoss) or skips them, as Spark's source does with a deleted topic.
        Only here: the look-up is a ZooKeeper round trip, and batches planned by this process
        were planned against the incarnation its member holds."""
        topics = sorted({k[0] for k, _, _ in ranges if k[0] in recorded})
        if not topics:
            return ranges
        now = self.member.topic_epochs(topics)
        return replayed_ranges(ranges, recorded, now, fail_on_data_loss=self.opts.fail_on_data_loss)

    @phase_timings.timed("planner.commit")
    def commit(self, end: dict[str, Any]) -> None:
        """Spark's own "done up to end": commit it where it moves an owned partition forward and
        the partition is still claimed in the topic incarnation `end` was counted in."""
        owned = self.member.owned()
        self.member.commit(forward_commits(end, owned, self.member.epochs(owned)))
