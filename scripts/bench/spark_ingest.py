"""Spark ingest: our `zkconsumer` Python data source vs Spark's own JVM Kafka source, on local[2] or a cluster.

    .venv/bin/python scripts/bench/spark_ingest.py --messages 5000000                 # local[2]
    .venv/bin/python scripts/bench/spark_ingest.py --standalone --messages 2000000    # a standalone cluster
    .venv/bin/python scripts/bench/spark_ingest.py --master spark://host:7077 ...     # an existing cluster
    .venv/bin/python scripts/bench/spark_ingest.py --standalone --latency 60          # latency mode

Throughput (the default): both sources read the same 8-partition topic of 100-byte messages from
offset 0 to the end in one Spark application (spark.sql.shuffle.partitions=2), so with the same
cores, into the same sink (the `noop` format), one after the other, best of --repeat runs each
after an untimed warm-up (a count() that also checks the rows). Last line:
    ratio=<ours/jvm> ours_rows_per_s=<n> jvm_rows_per_s=<n> master=local|standalone

Latency (--latency SECONDS): a streaming query of each source (ours, then Spark's) into a parquet
file sink with a --trigger-ms processing-time trigger, while a producer writes --rate msg/s
(steady, round-robin over the 8 partitions) for --warmup + SECONDS seconds into a topic of its own.
A row's latency is the time its micro-batch was committed to the sink (the mtime of the sink's
_spark_metadata/<batch> log file, written when the batch commits) minus the message's Kafka
CreateTime (set at produce()); rows produced during the warm-up do not count. Each query starts
on a primer (one message per partition) and production begins once that primer is in the sink, so
start-up (group join, Python workers) is not measured. Last line:
    ours_p50_ms=<n> ours_p99_ms=<n> [fresh_p50_ms= fresh_p99_ms=] jvm_p50_ms=<n> jvm_p99_ms=<n> msg_per_s=<n> trigger_ms=<n> master=...
--fresh-consumers also runs ours with reuseConsumers=false (side by side, same cluster); --profile
prints our source's own phase timings per run (spark_jobs/profile.py: the planner's calls, each
executor read, its wait for the first message, and whether its consumer was reused).

--standalone starts a Spark standalone cluster from the pip pyspark install (a master and two
workers of 1 core each, harness.spark_cluster) and stops it at exit; --master URL uses
an existing one. On a cluster zkconsumer reaches the executors as users ship it: a wheel built
from this checkout (or --wheel), renamed .zip, added with SparkContext.addPyFile and put on the
PYTHONPATH of the data source's driver-side planner processes (spark_jobs/README.md, "On a
cluster"); the script checks where the executors import it from. Spark's connector
(spark-sql-kafka-0-10_2.13 and what its POM resolves) comes from .jars/spark-kafka
(zkconsumer/testing/poms/spark-kafka/pom.xml) through spark.jars: nothing is downloaded at run time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test harness: tests/harness

from harness.spark_cluster import build_wheel  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, TEST_JVM_OPTS, LocalCluster  # noqa: E402
from zkconsumer.testing.jars import jar_dir  # noqa: E402

PARTITIONS = 8
PROFILE_ENV = "ZKCONSUMER_SPARK_PROFILE"  # spark_jobs/profile.py


def produce(bootstrap: str, topic: str, count: int, size: int) -> None:
    kafka.produce_bulk(bootstrap, topic, count, size, PARTITIONS)


def connector_jars() -> list[str]:
    """Spark's Kafka connector jars, minus any artifact pyspark already ships (its copy wins)."""
    import pyspark

    shipped = {re.sub(r"-\d[\w.\-]*\.jar$", "", p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(jar_dir("spark-kafka").glob("*.jar"))
    return [str(p) for p in jars if re.sub(r"-\d[\w.\-]*\.jar$", "", p.name) not in shipped]


def master_label(master: str) -> str:
    if master.startswith("local"):
        return "local"
    return "standalone" if master.startswith("spark://") else re.split(r"[:/]", master)[0]


def module_paths(_: object) -> list[str]:
    """Run on an executor: where its Python worker imports zkconsumer and spark_jobs from."""
    import spark_jobs
    import zkconsumer

    return [zkconsumer.__file__ or "", spark_jobs.__file__ or ""]


def spark_session(
    master: str, jars: list[str], driver_memory: str, executor_memory: str, wheel: Path | None, profile: Path | None
) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # Python workers need pyarrow and confluent-kafka
    if profile is not None:  # before the JVM starts: its planner processes inherit its environment
        os.environ[PROFILE_ENV] = str(profile)
    if wheel is None:  # local: the executors are in the driver's JVM; everything imports this checkout
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    else:  # the driver JVM's planner processes take its PYTHONPATH, not py-files: the wheel there too
        os.environ["PYTHONPATH"] = str(wheel)
    from pyspark.sql import SparkSession

    from spark_jobs import ZkConsumerDataSource

    builder = (
        SparkSession.builder.master(master)
        .appName("zkconsumer-spark-ingest-bench")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.streaming.fileSink.log.deletion", "false")  # latency reads the sink's log
        .config("spark.jars", ",".join(jars))
    )  # set before the JVM starts; no spark.jars.packages
    if not master.startswith("local"):
        builder = builder.config("spark.executor.memory", executor_memory).config(
            "spark.pyspark.python", sys.executable
        )
        if profile is not None:
            builder = builder.config(f"spark.executorEnv.{PROFILE_ENV}", str(profile))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if wheel is not None:
        spark.sparkContext.addPyFile(str(wheel))
        cores = spark.sparkContext.defaultParallelism
        seen = spark.sparkContext.parallelize(range(cores), cores).map(module_paths).collect()
        where = sorted({p for paths in seen for p in paths})
        print(f"executors import zkconsumer from: {', '.join(where)}", flush=True)
        if not all(wheel.name in p for p in where):
            raise SystemExit(f"the executors did not import the shipped wheel {wheel.name}: {where}")
    spark.dataSource.register(ZkConsumerDataSource)
    return spark


def timed(label: str, make: Callable[[], Any], count: int, repeat: int) -> float:
    """Untimed warm-up count() (checked), then the best of `repeat` timed noop writes."""
    seen = make().count()
    if seen != count:
        raise AssertionError(f"{label}: read {seen} rows, expected {count}")
    best = 0.0
    for run in range(1, repeat + 1):
        began = time.perf_counter()
        make().write.format("noop").mode("overwrite").save()
        rate = count / (time.perf_counter() - began)
        print(f"  {label} run {run}: {rate:12,.0f} rows/s", flush=True)
        best = max(best, rate)
    return best


def throughput(spark: Any, zookeeper: str, bootstrap: str, args: argparse.Namespace, label: str) -> None:
    topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(bootstrap, topic, PARTITIONS)
    began = time.perf_counter()
    produce(bootstrap, topic, args.messages, args.size)
    print(
        f"produced {args.messages:,} x {args.size} B into {PARTITIONS} partitions in "
        f"{time.perf_counter() - began:.1f}s",
        flush=True,
    )

    def ours() -> Any:
        return (
            spark.read.format("zkconsumer")
            .option("zookeeper.connect", zookeeper)
            .option("group.id", f"bench-{topic}")
            .option("topics", topic)
            .load()
        )

    def jvm() -> Any:
        return (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
        )

    a = timed("zkconsumer (Python source) ", ours, args.messages, args.repeat)
    b = timed("kafka (Spark's JVM source)", jvm, args.messages, args.repeat)
    print(f"zkconsumer source: {a:12,.0f} rows/s\nSpark Kafka source: {b:12,.0f} rows/s\nratio {a / b:.2f}")
    print(f"ratio={a / b:.3f} ours_rows_per_s={a:.0f} jvm_rows_per_s={b:.0f} master={label}")


# ---------------------------------------------------------------------------------------------- latency


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
    """Our source's own phase timings between two wall-clock times (spark_jobs/profile.py records):
    the planner's calls per trigger and the executors' reads, with how long a read waited for its
    first message and whether its consumer was reused."""
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
            if name == "read_range":
                name = f"read_range ({'reused' if rec.get('reused') else 'new'} consumer)"
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
    bootstrap: str,
    topic: str,
    args: argparse.Namespace,
    folder: Path,
) -> dict[str, float]:
    """One streaming query of a source into parquet under steady production; latency per row."""
    kafka.create_topic(bootstrap, topic, PARTITIONS)
    kafka.produce_bulk(bootstrap, topic, PARTITIONS, args.size, PARTITIONS)  # the primer: one per partition
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

    def ours(checkpoint: Path, reuse: bool = True) -> Any:
        suffix = "" if reuse else "-fresh"
        return (
            spark.readStream.format("zkconsumer")
            .option("zookeeper.connect", zookeeper)
            .option("group.id", f"bench-latency-{tag}{suffix}")
            .option("topics", f"spark-latency-ours-{tag}{suffix}")
            .option("startingOffsets", "earliest")
            .option("checkpointLocation", str(checkpoint))
            .option("reuseConsumers", str(reuse).lower())
            .load()
        )

    def jvm(_: Path) -> Any:
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", f"spark-latency-jvm-{tag}")
            .option("startingOffsets", "earliest")
            .load()
        )

    a = latency_run(
        spark,
        "zkconsumer (Python source) ",
        ours,
        bootstrap,
        f"spark-latency-ours-{tag}",
        args,
        workdir / "latency-ours",
    )
    line = f"ours_p50_ms={a['p50']:.0f} ours_p99_ms={a['p99']:.0f}"
    if args.fresh_consumers:
        c = latency_run(
            spark,
            "zkconsumer, a new consumer per task",
            lambda checkpoint: ours(checkpoint, reuse=False),
            bootstrap,
            f"spark-latency-ours-{tag}-fresh",
            args,
            workdir / "latency-ours-fresh",
        )
        line += f" fresh_p50_ms={c['p50']:.0f} fresh_p99_ms={c['p99']:.0f}"
    if args.jvm_latency:
        b = latency_run(
            spark,
            "kafka (Spark's JVM source)",
            jvm,
            bootstrap,
            f"spark-latency-jvm-{tag}",
            args,
            workdir / "latency-jvm",
        )
        line += f" jvm_p50_ms={b['p50']:.0f} jvm_p99_ms={b['p99']:.0f}"
    print(f"{line} msg_per_s={args.rate} trigger_ms={args.trigger_ms} master={label}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per source (best counts)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    where.add_argument(
        "--standalone",
        action="store_true",
        help="start a standalone cluster (master + 2 workers of 1 core) for the run",
    )
    parser.add_argument("--wheel", type=Path, help="zkconsumer wheel (renamed .zip) to ship (default: build one)")
    parser.add_argument("--executor-memory", default="1g", help="per executor, off local (workers get as much)")
    parser.add_argument(
        "--latency",
        type=float,
        metavar="SECONDS",
        help="latency mode: measure produce -> sink for SECONDS of steady production",
    )
    parser.add_argument("--rate", type=int, default=5000, help="latency mode: messages per second")
    parser.add_argument("--warmup", type=float, default=5.0, help="latency mode: seconds produced but not counted")
    parser.add_argument("--trigger-ms", type=int, default=500, help="latency mode: processing-time trigger")
    parser.add_argument(
        "--jvm-latency",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="latency mode: also measure Spark's JVM source",
    )
    parser.add_argument(
        "--fresh-consumers",
        action="store_true",
        help="latency mode: also run our source with reuseConsumers=false (a new consumer per task)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="latency mode: print our source's own phase timings (planner calls, executor reads) per run",
    )
    parser.add_argument("--zookeeper", help="use this cluster (with --bootstrap) instead of starting one")
    parser.add_argument("--bootstrap")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--smoke", action="store_true", help="small heaps (for the test suite)")
    args = parser.parse_args()
    import pyspark

    jars = connector_jars()
    version = next((m.group(1) for j in jars if (m := re.search(r"spark-sql-kafka-0-10_2\.13-(.+)\.jar$", j))), "?")
    print(f"pyspark {pyspark.__version__}; Spark's Kafka connector {version}: {', '.join(Path(j).name for j in jars)}")
    if version != pyspark.__version__:
        print(f"note: connector {version} != pyspark {pyspark.__version__} (the newest Maven Central has here)")
    workdir = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    failed = True
    cluster = standalone = spark = None
    try:
        if args.zookeeper and args.bootstrap:
            zookeeper, bootstrap = args.zookeeper, args.bootstrap
        else:
            cluster = LocalCluster(
                brokers=1, chroot="/bench", jvm_opts=TEST_JVM_OPTS if args.smoke else SERVER_JVM_OPTS
            )
            cluster.start()
            zookeeper, bootstrap = cluster.zookeeper_connect, cluster.bootstrap_servers
        master = args.master
        wheel = None
        if not master.startswith("local") or args.standalone:
            wheel = args.wheel.resolve() if args.wheel else build_wheel(workdir / "wheel", ROOT)
            os.environ["PYTHONPATH"] = str(wheel)  # also what the workers (and so the executors) inherit
        executor_memory = "512m" if args.smoke else args.executor_memory
        if args.standalone:
            from harness.spark_cluster import SparkStandalone

            standalone = SparkStandalone(workdir / "standalone", workers=2, cores=1, memory=executor_memory)
            standalone.start()
            master = standalone.url
        label = master_label(master)
        args.profile_dir = None
        if args.profile:
            args.profile_dir = workdir / "profile"
            args.profile_dir.mkdir()
        spark = spark_session(
            master, jars, "768m" if args.smoke else args.driver_memory, executor_memory, wheel, args.profile_dir
        )
        print(f"master {master} ({label}), {spark.sparkContext.defaultParallelism} cores", flush=True)
        if args.latency:
            latency(spark, zookeeper, bootstrap, args, label, workdir)
        else:
            throughput(spark, zookeeper, bootstrap, args, label)
        failed = False
    finally:
        if spark is not None:
            spark.stop()
        if standalone is not None:
            standalone.stop()
        if cluster is not None:
            cluster.stop()
        if failed:
            print(f"kept {workdir} (logs, sinks)", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
