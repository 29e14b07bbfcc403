"""Latency mode of spark_ingest.py: streaming queries per source, alternated over rounds, into a parquet sink
under steady production; per-row produce-to-sink latency, Spark's durationMs phases and our own timings.

    .venv/bin/python scripts/bench/spark_latency.py --standalone [--latency 60] [--rounds 3] [...]

runs `spark_ingest.py --latency 60` with the same options (its --help says them all)."""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zkconsumer.testing import kafka

PARTITIONS = 8


class SteadyProducer(threading.Thread):
    """`rate` msg/s for `seconds`, round-robin over the partitions, paced against the clock in ~2 ms
    steps; each message's timestamp is the wall-clock time of its produce() call (ms)."""

    def __init__(self, bootstrap: str, topic: str, rate: int, seconds: float, size: int) -> None:
        super().__init__(name="steady-producer", daemon=True)
        self.bootstrap, self.topic, self.rate, self.seconds, self.size = bootstrap, topic, rate, seconds, size
        self.sent, self.failed, self.started_ms, self.elapsed = 0, 0, 0.0, 0.0

    def _delivered(self, error: Any, _: Any) -> None:
        if error is not None:
            self.failed += 1

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "acks": 1})
        payload = b"x" * self.size
        total = int(self.rate * self.seconds)
        self.started_ms = time.time() * 1000.0
        start = time.monotonic()
        while self.sent < total:
            due = min(total, int((time.monotonic() - start) * self.rate) + 1)
            while self.sent < due:
                producer.produce(
                    self.topic,
                    payload,
                    partition=self.sent % PARTITIONS,
                    timestamp=int(time.time() * 1000),
                    on_delivery=self._delivered,
                )
                self.sent += 1
            producer.poll(0)
            time.sleep(0.002)
        self.elapsed = time.monotonic() - start
        if producer.flush(60):
            self.failed += len(producer)


def sink_batches(out: Path) -> list[tuple[int, int, list[str]]]:
    """(batch id, commit time in ns, files the batch added) from a file sink's _spark_metadata log: the
    log file of batch N (N, or N.compact holding every earlier entry too) is written when N commits."""
    meta = out / "_spark_metadata"
    logs = sorted(
        (
            (int(f.name.split(".")[0]), f)
            for f in meta.iterdir()
            if not f.name.startswith(".") and f.name.split(".")[0].isdigit()
        )
        if meta.exists()
        else []
    )
    seen: set[str] = set()
    batches = []
    for batch, log in logs:
        files = set()
        for line in log.read_text().splitlines()[1:]:  # the first line is the log's version
            record = json.loads(line)
            if record.get("action", "add") == "add":
                files.add(record["path"].removeprefix("file://"))
        batches.append((batch, log.stat().st_mtime_ns, sorted(files - seen)))
        seen |= files
    return batches


def sink_count(out: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_rows for _, _, files in sink_batches(out) for f in files)


def row_latencies(out: Path, since_ms: float) -> tuple[list[float], int, int]:
    """(per-row latency in ms of rows stamped at or after `since_ms`, all rows in the sink, batches
    holding measured rows)."""
    import pyarrow.parquet as pq

    per_ms = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}
    latencies: list[float] = []
    total = batches = 0
    for _, committed_ns, files in sink_batches(out):
        before = len(latencies)
        for path in files:
            column = pq.read_table(path, columns=["timestamp"]).column("timestamp")
            total += len(column)
            scale = per_ms[column.type.unit]
            for stamp in column.cast("int64").to_pylist():
                stamp_ms = stamp * scale
                if stamp_ms >= since_ms:
                    latencies.append(committed_ns / 1e6 - stamp_ms)
        batches += len(latencies) > before
    return latencies, total, batches


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(p / 100.0 * len(ordered)) - 1))]


def wait_sink(
    out: Path, count: int, timeout: float, what: str, query: Any, poll: Callable[[], None] = lambda: None
) -> None:
    deadline = time.monotonic() + timeout
    while sink_count(out) < count:
        if query.exception() is not None:
            raise SystemExit(f"the query failed waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what} ({sink_count(out)} of {count} rows)")
        poll()
        time.sleep(0.25)


PHASES = ("triggerExecution", "latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


def phase_means(durations: dict[int, dict[str, int]]) -> str:
    """Mean of each durationMs phase over the sampled micro-batches (where a batch's time goes)."""
    if not durations:
        return "no batch progress sampled"
    return (
        ", ".join(
            f"{phase} {sum(d.get(phase, 0) for d in durations.values()) / len(durations):.0f}" for phase in PHASES
        )
        + f" ({len(durations)} batches sampled)"
    )


def profile_summary(folder: Path | None, since: float, until: float) -> str:
    """Our source's own phase timings between two wall-clock times (zkconsumer/spark/phase_timings.py records):
    the planner's calls per trigger and the executors' reads, with how long a read waited for its
    first message and how many ranges it read."""
    if folder is None:
        return ""
    rows: dict[str, list[float]] = {}
    for path in folder.glob("profile-*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not since <= rec.get("at", 0) <= until:
                continue
            name = rec["phase"]
            if name == "read_task":
                name = f"read_task ({'one range' if rec.get('ranges', 1) == 1 else 'several ranges'})"
                if rec.get("first_ms") is not None:
                    rows.setdefault(name + " to first message", []).append(rec["first_ms"])
            rows.setdefault(name, []).append(rec["ms"])
    return "; ".join(
        f"{name} n={len(v)} mean {sum(v) / len(v):.1f} p50 {percentile(v, 50):.1f} p90 {percentile(v, 90):.1f}"
        for name, v in sorted(rows.items())
    )


def latency_run(
    spark: Any,
    label: str,
    make: Callable[[Path], Any],
    warm: Callable[[], Any],
    bootstrap: str,
    topic: str,
    args: argparse.Namespace,
    folder: Path,
) -> dict[str, float]:
    """One streaming query of a source into parquet under steady production; latency per row.

    Start-up is not measured: `warm()` (a batch read of the primer through the same source, a task
    per partition) first runs the source on every executor, since a packed primer batch is one task
    and an executor's first task of a source takes seconds (its JVM's classes, its Python worker)."""
    kafka.create_topic(bootstrap, topic, PARTITIONS)
    kafka.produce_bulk(bootstrap, topic, PARTITIONS, args.size, PARTITIONS)  # the primer: one per partition
    warm().write.format("noop").mode("overwrite").save()
    out, checkpoint = folder / "out", folder / "checkpoint"
    began = time.time()
    query = (
        make(checkpoint)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=f"{args.trigger_ms} milliseconds")
        .start()
    )
    try:
        wait_sink(out, PARTITIONS, 300, f"{label}: the primer in the sink", query)
        durations: dict[int, dict[str, int]] = {}  # batch id -> durationMs, batches after the primer's

        def sample() -> None:
            progress = query.lastProgress
            if progress and progress["numInputRows"]:
                durations.setdefault(progress["batchId"], dict(progress["durationMs"]))

        primer = (query.lastProgress or {"batchId": -1})["batchId"]
        producer = SteadyProducer(bootstrap, topic, args.rate, args.warmup + args.latency, args.size)
        producer.start()
        while producer.is_alive():
            sample()
            producer.join(0.2)
        if producer.failed:
            raise SystemExit(f"{label}: {producer.failed} messages were not delivered")
        wait_sink(out, PARTITIONS + producer.sent, 120, f"{label}: every message in the sink", query, sample)
    finally:
        query.stop()
    durations = {batch: d for batch, d in durations.items() if batch > primer}
    latencies, total, batches = row_latencies(out, producer.started_ms + args.warmup * 1000.0)
    if total != PARTITIONS + producer.sent:
        raise SystemExit(f"{label}: the sink holds {total} rows, {PARTITIONS + producer.sent} were produced")
    if not latencies:
        raise SystemExit(f"{label}: no row was produced after the warm-up")
    result = {
        "p50": percentile(latencies, 50),
        "p90": percentile(latencies, 90),
        "p99": percentile(latencies, 99),
        "max": max(latencies),
    }
    print(
        f"  {label}: {len(latencies):,} rows measured in {batches} batches (produced {producer.sent:,} at "
        f"{producer.sent / producer.elapsed:,.0f} msg/s); latency ms p50 {result['p50']:.0f} "
        f"p90 {result['p90']:.0f} p99 {result['p99']:.0f} max {result['max']:.0f}",
        flush=True,
    )
    print(f"    mean ms per batch: {phase_means(durations)}", flush=True)
    slowest = sorted(durations.items(), key=lambda kv: -kv[1].get("triggerExecution", 0))[:3]
    print(f"    slowest batches: {', '.join(f'{b}: {d}' for b, d in slowest)}", flush=True)
    ours = profile_summary(args.profile_dir, began, time.time())
    if ours:
        print(f"    our phases, ms: {ours}", flush=True)
    return result


def latency(spark: Any, zookeeper: str, bootstrap: str, args: argparse.Namespace, label: str, workdir: Path) -> None:
    print(
        f"latency: {args.rate:,} msg/s x {args.size} B for {args.warmup:g}+{args.latency:g} s (warm-up not "
        f"counted), trigger {args.trigger_ms} ms, parquet sink",
        flush=True,
    )
    tag = uuid.uuid4().hex[:8]

    def ours(topic: str, rows_per_task: int | None) -> Callable[[Path], Any]:
        def make(checkpoint: Path) -> Any:
            reader = (
                spark.readStream.format("zkconsumer")
                .option("zookeeper.connect", zookeeper)
                .option("group.id", f"bench-latency-{topic}")
                .option("topics", topic)
                .option("startingOffsets", "earliest")
                .option("checkpointLocation", str(checkpoint))
            )
            return (reader if rows_per_task is None else reader.option("rowsPerTask", str(rows_per_task))).load()

        return make

    def ours_batch(topic: str) -> Callable[[], Any]:
        return lambda: (
            spark.read.format("zkconsumer")
            .option("zookeeper.connect", zookeeper)
            .option("group.id", f"bench-latency-warm-{tag}")
            .option("topics", topic)
            .option("startingOffsets", "earliest")
            .option("rowsPerTask", "0")
            .load()
        )

    def jvm_batch(topic: str) -> Callable[[], Any]:
        return lambda: (
            spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
        )

    def jvm(topic: str) -> Callable[[Path], Any]:
        return lambda _: (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
        )

    # The contenders, run in this order in every round (ours, Spark's, ours, Spark's, ...): the VM's
    # speed drifts within minutes, so only rounds side by side compare.
    contenders: list[tuple[str, str, Callable[[str], Callable[[Path], Any]], Callable[[str], Callable[[], Any]]]] = [
        ("ours", "zkconsumer (Python source) ", lambda t: ours(t, args.rows_per_task), ours_batch)
    ]
    if args.task_per_range:
        contenders.append(("per_range", "zkconsumer, rowsPerTask=0   ", lambda t: ours(t, 0), ours_batch))
    if args.jvm_latency:
        contenders.append(("jvm", "kafka (Spark's JVM source)", jvm, jvm_batch))
    results: dict[str, list[dict[str, float]]] = {key: [] for key, *_ in contenders}
    loads: list[float] = []
    for round_no in range(1, args.rounds + 1):
        loads.append(os.getloadavg()[0])
        print(f"round {round_no} of {args.rounds} (load average {loads[-1]:.2f})", flush=True)
        for key, title, make, warm in contenders:
            topic = f"spark-latency-{key}-{tag}-{round_no}"
            folder = workdir / f"latency-{key}-{round_no}"
            results[key].append(latency_run(spark, title, make(topic), warm(topic), bootstrap, topic, args, folder))
    if args.rounds > 1:
        print("rounds, latency ms p50 / p99:", flush=True)
        for round_no in range(args.rounds):
            cells = "  ".join(
                f"{key} {results[key][round_no]['p50']:.0f} / {results[key][round_no]['p99']:.0f}" for key in results
            )
            print(f"  {round_no + 1}: load {loads[round_no]:.2f}  {cells}", flush=True)
    medians = {key: {q: statistics.median(r[q] for r in runs) for q in ("p50", "p99")} for key, runs in results.items()}
    line = " ".join(f"{key}_p50_ms={m['p50']:.0f} {key}_p99_ms={m['p99']:.0f}" for key, m in medians.items())
    print(
        f"{line} msg_per_s={args.rate} trigger_ms={args.trigger_ms} master={label} rounds={args.rounds} "
        f"loadavg={statistics.median(loads):.2f}"
    )


if __name__ == "__main__":
    import runpy
    import sys
    from pathlib import Path

    if not any(a == "--latency" or a.startswith("--latency=") for a in sys.argv[1:]):
        sys.argv[1:1] = ["--latency", "60"]
    # Run spark_ingest.py as the main module, as if started itself: functions Spark ships to the
    # executors are then pickled by value, not as members of a module they cannot import.
    runpy.run_path(str(Path(__file__).with_name("spark_ingest.py")), run_name="__main__")
