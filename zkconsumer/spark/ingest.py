"""The batch ingest: write a group's new messages (committed -> log end) to files, then commit the offsets.

The runnable job is spark_jobs/ingest.py in the repository (spark-submit it; docs/spark.md,
"The ingest job"); this module is what it runs, shipped in the wheel with the data source.

Each run writes PATH/run=<topic>-<hash of its offset ranges> and, once that write succeeded, a
marker file (_ZKCONSUMER_RANGES.json) with the group, the topic's incarnation and the ranges;
only then are the offsets committed to /consumers/<group>/offsets. A run of the same group and
incarnation that died between write and commit is found again by its marker: the rerun commits
past it instead of reading it again, so the output never holds a message twice. Run directories
without a marker (a write that died) are deleted before writing. One ingest per group and topic
at a time (an ephemeral lock node in ZooKeeper; a second one exits 4); the group must have no
live member owning the topic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zkconsumer.errors import ZkConsumerError
from zkconsumer.spark.offsets import Key
from zkconsumer.spark.options import parse_options
from zkconsumer.spark.planning import BatchPlan, plan_batch, zookeeper
from zkconsumer.zookeeper import ephemeral_lock, znodes

MARKER = "_ZKCONSUMER_RANGES.json"
FAIL_ENV = "ZKCONSUMER_INGEST_FAIL_AFTER_WRITE"  # tests: die after the write, before the commit
EXIT_OK, EXIT_FAILED, EXIT_OWNED, EXIT_COMMIT_REFUSED, EXIT_LOCKED = 0, 1, 2, 3, 4


class IngestLockLost(ZkConsumerError, RuntimeError):
    """The job's ZooKeeper session ended while it held the group and topic's ingest lock: another run
    may have started, so this one commits nothing; rerun it."""

    retriable = True


@dataclass(frozen=True)
class IngestRun:
    """One run directory: its name and (once complete) what its marker records."""

    name: str
    ranges: dict[int, tuple[int, int]] | None  # partition -> [start, end); None: no marker
    group: str | None = None
    epoch: int | None = None  # the topic's incarnation (its node's czxid) the ranges belong to
    written_at: int | None = None  # ms; markers from before epochs were recorded have only this


class HadoopFs:
    """The few file operations the job needs, through Hadoop's FileSystem (local, HDFS, S3...)."""

    def __init__(self, spark: Any, root: str) -> None:
        self._jvm = spark._jvm
        self._path = self._jvm.org.apache.hadoop.fs.Path
        self._fs = self._path(root).getFileSystem(spark._jsc.hadoopConfiguration())
        self.root = root.rstrip("/")

    def children(self, pattern: str) -> list[str]:
        found = self._fs.globStatus(self._path(f"{self.root}/{pattern}")) or []
        return sorted(status.getPath().getName() for status in found if status.isDirectory())

    def read(self, path: str) -> str | None:
        p = self._path(path)
        if not self._fs.exists(p):
            return None
        stream = self._fs.open(p)
        try:
            text: str = self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")  # py4j: a Java String
            return text
        finally:
            stream.close()

    def write(self, path: str, text: str) -> None:
        out = self._fs.create(self._path(path), True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()

    def delete(self, path: str) -> None:
        self._fs.delete(self._path(path), True)


def log(message: str) -> None:
    """One line of the job's own output on stderr."""
    print(f"[zkconsumer-ingest] {message}", file=sys.stderr, flush=True)


class IngestProgress:
    """Prints the running stage's task counts to stderr every few seconds (SparkStatusTracker)."""

    def __init__(self, spark: Any, label: str, every_s: float = 2.0) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._label, self._every = label, every_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ingest-progress", daemon=True)
        self._began = time.monotonic()

    def __enter__(self) -> IngestProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)

    def _loop(self) -> None:
        last = None
        while not self._done.wait(self._every):
            stages = [self._tracker.getStageInfo(s) for s in self._tracker.getActiveStageIds()]
            line = (
                ", ".join(
                    f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s is not None
                )
                or "planning"
            )
            if line != last:
                log(f"{self._label}: {line} ({time.monotonic() - self._began:.0f}s)")
                last = line


def find_runs(fs: HadoopFs, topic: str) -> list[IngestRun]:
    own = re.compile(r"run=" + re.escape(topic) + r"-[0-9a-f]{16}")  # not runs of "topic-x"
    runs = []
    for name in fs.children(f"run={topic}-*"):
        if not own.fullmatch(name):
            continue
        text = fs.read(f"{fs.root}/{name}/{MARKER}")
        doc = json.loads(text) if text else None
        ranges = None if doc is None else {int(p): (r[0], r[1]) for p, r in doc["ranges"].items()}
        doc = doc or {}
        runs.append(IngestRun(name, ranges, doc.get("group"), doc.get("epoch"), doc.get("written_at")))
    return runs


def same_incarnation(
    runs: Sequence[IngestRun], group: str, epoch: int | None, created_ms: int | None = None
) -> tuple[list[IngestRun], list[IngestRun]]:
    """(runs recovery may chain through, the others): a complete run counts only if it was written
    for this group and this incarnation of the topic (a marker without an epoch: written after
    the topic node was created, at `created_ms`). Offsets of a deleted topic's run mean nothing
    in the topic created again under its name (chaining through them skipped its data)."""

    def ours(run: IngestRun) -> bool:
        if run.ranges is None or run.group != group or epoch is None:
            return False
        if run.epoch is not None:
            return run.epoch == epoch
        return created_ms is not None and run.written_at is not None and run.written_at >= created_ms

    usable = [r for r in runs if ours(r)]
    return usable, [r for r in runs if not ours(r)]


def recover(starts: dict[Key, int], runs: Sequence[IngestRun]) -> dict[Key, int]:
    """Advance each partition past completed runs that hold where it stands: their data is already
    in the output, and only their commit was lost, or was refused because a member committed an
    offset inside the run meanwhile."""
    positions = dict(starts)
    changed = True
    while changed:
        changed = False
        for run in runs:
            for partition, (lo, hi) in (run.ranges or {}).items():
                for key in [k for k in positions if k[1] == partition and lo <= positions[k] < hi]:
                    positions[key] = hi
                    changed = True
    return positions


# Options the plan already resolved into its pinned offsets: given to the read as well, a time would
# override the pinned starts and ends (a time ranks above an offsets entry) and read a run twice.
PLANNED_ONLY = frozenset(
    {
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "endingtimestamp",
        "endingoffsetsbytimestamp",
        "ignorecommittedoffsets",
    }
)


def pinned_read(options: Mapping[str, str], starts: Mapping[Key, int], ends: Mapping[Key, int]) -> dict[str, str]:
    """The batch read's options for a run: exactly the plan's partitions ("partitions": one added
    since is left to the next run) and its offsets, nothing that could move them."""
    kept = {k: v for k, v in options.items() if k.lower() not in PLANNED_ONLY}
    return {
        **kept,
        "partitions": ",".join(f"{t}/{p}" for t, p in sorted(starts)),
        "startingOffsets": json.dumps({f"{t}/{p}": v for (t, p), v in sorted(starts.items())}),
        "endingOffsets": json.dumps({f"{t}/{p}": v for (t, p), v in sorted(ends.items())}),
    }


def run_name(topic: str, ranges: dict[Key, tuple[int, int]], *, group: str, epoch: int | None) -> str:
    """The run's directory: the same ranges of another group or topic incarnation get another one
    (the same offsets of a re-created topic are other messages; overwriting would lose the old)."""
    text = json.dumps(
        {"group": group, "epoch": epoch, "ranges": {f"{t}/{p}": list(r) for (t, p), r in sorted(ranges.items())}},
        separators=(",", ":"),
    )
    return f"run={topic}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def take_lock(client: Any, group: str, topic: str) -> str | None:
    """Create the group and topic's ingest lock (ephemeral: it goes with this job's session);
    None when taken, else what the running job wrote into it."""
    me = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "since": int(time.time() * 1000)})
    return ephemeral_lock.take(client, znodes.ingest_lock_path(group, topic), me.encode())


def ingest_topic(spark: Any, args: argparse.Namespace, topic: str, props: dict[str, str]) -> int:
    """One topic, under its lock: a second job at once would delete this one's run in progress
    as a write that died."""
    options = {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "topics": topic,
        "startingOffsets": args.starting,
        **props,
    }
    opts = parse_options(options, streaming=False)
    with zookeeper(opts) as client:
        holder = take_lock(client, args.group, topic)
        if holder is not None:
            log(
                f"{topic}: refusing: another ingest of group {args.group} runs ({holder}; lock "
                f"{znodes.ingest_lock_path(args.group, topic)}); one at a time"
            )
            return EXIT_LOCKED
        lock = znodes.ingest_lock_path(args.group, topic)

        def check_lock(before: str) -> None:
            if not ephemeral_lock.holds(client, lock):
                raise IngestLockLost(
                    f"lost the ingest lock {lock} (our ZooKeeper session ended) {before}: "
                    "another run may have started; nothing of this run was committed, rerun it"
                )

        def current_epoch() -> int | None:
            from zkconsumer.cluster.metadata import ClusterMetadata

            return ClusterMetadata(client).topic_epochs([topic]).get(topic)

        try:
            return _ingest_locked(spark, args, topic, options, opts, check_lock, current_epoch)
        finally:
            ephemeral_lock.release(client, lock)


def _ingest_locked(
    spark: Any,
    args: argparse.Namespace,
    topic: str,
    options: dict[str, str],
    opts: Any,
    check_lock: Callable[[str], None],
    current_epoch: Callable[[], int | None],
) -> int:
    plan: BatchPlan = plan_batch(opts)
    owned = [p for p in plan.partitions if p.owner]
    if owned:
        log(
            f"{topic}: refusing: live members of {args.group} own "
            + ", ".join(f"{p.key[1]} ({p.owner})" for p in owned)
            + "; stop them first (their offsets would race ours)"
        )
        return EXIT_OWNED
    fs = HadoopFs(spark, args.output)
    runs = find_runs(fs, topic)
    for stale in (r for r in runs if r.ranges is None):  # a write that died before its marker
        log(f"{topic}: deleting incomplete {stale.name}")
        fs.delete(f"{fs.root}/{stale.name}")
    epoch = plan.epochs.get(topic)
    done, others = same_incarnation(
        [r for r in runs if r.ranges is not None], args.group, epoch, plan.created_ms.get(topic)
    )
    for run in others:
        log(
            f"{topic}: not resuming past {run.name}: written for group {run.group} and topic incarnation "
            f"{run.epoch}, this is group {args.group} and incarnation {epoch}"
        )
    planned = {p.key: p.start for p in plan.partitions}
    starts = recover(planned, done)
    ends = {p.key: max(p.end, starts[p.key]) for p in plan.partitions}
    ranges = {k: (starts[k], ends[k]) for k in starts if ends[k] > starts[k]}
    recovered = {k: v for k, v in starts.items() if v != planned[k]}
    if recovered:
        log(
            f"{topic}: found written but uncommitted runs; resuming past them at "
            + ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(recovered.items()))
        )
    if ranges:
        name = run_name(topic, ranges, group=args.group, epoch=epoch)
        path = f"{fs.root}/{name}"
        total = sum(hi - lo for lo, hi in ranges.values())
        log(f"{topic}: reading {total} messages from {len(ranges)} partitions into {path}")
        df = spark.read.format("zkconsumer").options(**pinned_read(options, starts, ends)).load()
        spark.sparkContext.setJobDescription(f"zkconsumer ingest {args.group}/{topic} -> {name}")
        with IngestProgress(spark, topic):
            df.write.mode("overwrite").format(args.format).save(path)
        check_lock("before writing the marker")
        now = current_epoch()
        if epoch is not None and now != epoch:
            # Deleted (and maybe created again) during the write: the executors may have read the
            # new log's messages under the old one's offsets. A marker would let a rerun skip them
            # while the output holds them under the wrong incarnation: the run is withdrawn instead.
            fs.delete(path)
            log(
                f"{topic}: refusing: the topic was deleted during the write (incarnation {epoch}, now "
                f"{now if now is not None else 'none'}); deleted this run's output {path}, committed "
                "nothing; rerun to read the new topic from its start"
            )
            return EXIT_COMMIT_REFUSED
        fs.write(
            f"{path}/{MARKER}",
            json.dumps(
                {
                    "group": args.group,
                    "topic": topic,
                    "epoch": epoch,
                    "written_at": int(time.time() * 1000),
                    "ranges": {str(p): [lo, hi] for (_, p), (lo, hi) in sorted(ranges.items())},
                }
            ),
        )
        log(f"{topic}: wrote {total} messages")
        if os.environ.get(FAIL_ENV):
            raise RuntimeError(f"{FAIL_ENV} is set: failing after the write, before the commit")
    commits = {p.key: ends[p.key] for p in plan.partitions if ends[p.key] != p.committed}
    if not ranges and not commits:
        log(f"{topic}: nothing new (committed offsets are at the log end)")
        return EXIT_OK
    check_lock("before committing")
    return commit(opts, args.group, commits, plan)


def commit(opts: Any, group: str, commits: dict[Key, int], plan: BatchPlan) -> int:
    """Write each offset unless a live member owns the partition, only over the offset node the
    plan read (compare-and-set: a member that committed since keeps its offset) and only into the
    topic incarnation the plan counted in (one guarded transaction each)."""
    from zkconsumer.zookeeper.guarded_write import write_offset_guarded  # the owner-fenced offset write

    planned = {p.key: p for p in plan.partitions}
    refused = {}
    with zookeeper(opts) as client:
        for (topic, partition), offset in sorted(commits.items()):
            epoch = plan.epochs.get(topic)
            reason = write_offset_guarded(
                client,
                group,
                topic,
                partition,
                offset,
                expect_version=planned[(topic, partition)].committed_version,
                topic_epoch=epoch,
            )
            if reason is not None:
                refused[(topic, partition)] = reason
    if commits:
        log("committed " + ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(commits.items()) if (t, p) not in refused))
    for (topic, partition), reason in sorted(refused.items()):
        log(
            f"NOT committed {topic}-{partition}: {reason}. The output is complete and recorded; a rerun "
            "starts from what ZooKeeper holds then (once no member owns the partition)"
        )
    return EXIT_COMMIT_REFUSED if refused else EXIT_OK
