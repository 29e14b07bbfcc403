"""Spark ingest: our `zkconsumer` Python data source vs Spark's own JVM Kafka source, on local[2] or a cluster.

    .venv/bin/python scripts/bench/spark_ingest.py --messages 5000000                 # local[2]
    .venv/bin/python scripts/bench/spark_ingest.py --standalone --messages 2000000    # a standalone cluster
    .venv/bin/python scripts/bench/spark_ingest.py --master spark://host:7077 ...     # an existing cluster
    .venv/bin/python scripts/bench/spark_ingest.py --standalone --latency 60          # latency mode

Throughput (the default): both sources read the same 8-partition topic of 100-byte messages from
offset 0 to the end in one Spark application (spark.sql.shuffle.partitions=2), so with the same
cores, into the same sink (the `noop` format), after an untimed warm-up of each (a count() that also
checks the rows), then --rounds rounds of one timed run each, alternated (ours, Spark's, ours, ...),
each printed with the load average at its start; the medians decide. Last line:
    ratio=<median ours/median jvm> ours_rows_per_s=<median> jvm_rows_per_s=<median> rounds=<n>
    master=local|standalone loadavg=<median of the runs' load>

Latency (--latency SECONDS, or scripts/bench/spark_latency.py): a streaming query of each source into
a parquet file sink with a --trigger-ms processing-time trigger, while a producer writes --rate msg/s
(steady, round-robin over the 8 partitions) for --warmup + SECONDS seconds into a topic of its own;
--rounds (default 3) rounds, each running every source in turn (ours, Spark's, ours, Spark's, ...),
with the load average at each round's start, a table of the rounds and the medians. Both run with
spark.locality.wait=0 (a latency-minded user's setting: no task waits for a "local" core) and
otherwise their defaults.
A row's latency is the time its micro-batch was committed to the sink (the mtime of the sink's
_spark_metadata/<batch> log file, written when the batch commits) minus the message's Kafka
CreateTime (set at produce()); rows produced during the warm-up (default 20 s: the first query's
first batches also warm the executors' parquet path) do not count. Before each query a batch read
of its primer (one message per partition) through the same source, a task per partition, runs the
source on every executor; the query starts on that primer and production begins once it is in the
sink, so start-up (group join, Python workers) is not measured. Last line (medians over the rounds):
    ours_p50_ms=<n> ours_p99_ms=<n> [per_range_p50_ms= per_range_p99_ms=] jvm_p50_ms=<n> jvm_p99_ms=<n>
    msg_per_s=<n> trigger_ms=<n> master=... rounds=<n> loadavg=<median of the rounds' load>
--task-per-range also runs ours with rowsPerTask=0, a task per partition range as before packing
(side by side, same cluster); --rows-per-task N sets ours' rowsPerTask; --profile
prints our source's own phase timings per run (zkconsumer/spark/phase_timings.py: the planner's calls, each
executor read, its wait for the first message, and how many ranges it read).

--standalone starts a Spark standalone cluster from the pip pyspark install (a master and two
workers of 1 core each, harness.spark_cluster) and stops it at exit; --master URL uses
an existing one. On a cluster zkconsumer reaches the executors as users ship it: a wheel built
from this checkout (or --wheel), renamed .zip, added with SparkContext.addPyFile and put on the
PYTHONPATH of the data source's driver-side planner processes (docs/spark.md, "On a
cluster"); the script checks where the executors import it from. Spark's connector
(spark-sql-kafka-0-10_2.13 and what its POM resolves) comes from .jars/spark-kafka
(zkconsumer/testing/poms/spark-kafka/pom.xml) through spark.jars: nothing is downloaded at run time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_latency import PARTITIONS, latency  # noqa: E402

PROFILE_ENV = "ZKCONSUMER_SPARK_PROFILE"  # zkconsumer/spark/phase_timings.py


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
    """Run on an executor: where its Python worker imports zkconsumer and zkconsumer.spark from."""
    import zkconsumer
    import zkconsumer.spark

    return [zkconsumer.__file__ or "", zkconsumer.spark.__file__ or ""]


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

    from zkconsumer.spark import ZkConsumerDataSource

    builder = (
        SparkSession.builder.master(master)
        .appName("zkconsumer-spark-ingest-bench")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.streaming.fileSink.log.deletion", "false")  # latency reads the sink's log
        # What a latency-minded user of either source sets: a task starts on the first free core
        # instead of waiting up to 3 s for one "local" to its data (a Kafka source has no locality).
        .config("spark.locality.wait", "0")
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


def checked(label: str, make: Callable[[], Any], count: int) -> None:
    """The untimed warm-up: a count() that must see every row."""
    seen = make().count()
    if seen != count:
        raise AssertionError(f"{label}: read {seen} rows, expected {count}")


def timed(make: Callable[[], Any], count: int) -> float:
    """One timed noop write of the whole read, in rows/s."""
    began = time.perf_counter()
    make().write.format("noop").mode("overwrite").save()
    return count / (time.perf_counter() - began)


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

    checked("zkconsumer (Python source)", ours, args.messages)
    checked("kafka (Spark's JVM source)", jvm, args.messages)
    rates: dict[str, list[float]] = {"ours": [], "jvm": []}
    loads: list[float] = []
    for round_no in range(1, args.rounds + 1):
        for name, make in (("ours", ours), ("jvm", jvm)):
            load = os.getloadavg()[0]
            loads.append(load)
            rates[name].append(timed(make, args.messages))
            print(f"round {round_no} {name:4}  load {load:5.2f}  {rates[name][-1]:12,.0f} rows/s", flush=True)
    a, b = statistics.median(rates["ours"]), statistics.median(rates["jvm"])
    print(f"median zkconsumer source: {a:12,.0f} rows/s\nmedian Spark Kafka source: {b:12,.0f} rows/s")
    print(
        f"ratio={a / b:.3f} ours_rows_per_s={a:.0f} jvm_rows_per_s={b:.0f} rounds={args.rounds} "
        f"master={label} loadavg={statistics.median(loads):.2f}"
    )


# ---------------------------------------------------------------------------------------------- latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--size", type=int, default=100)
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
    parser.add_argument("--warmup", type=float, default=20.0, help="latency mode: seconds produced but not counted")
    parser.add_argument("--trigger-ms", type=int, default=500, help="latency mode: processing-time trigger")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running every source in turn (default 3)")
    parser.add_argument(
        "--jvm-latency",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="latency mode: also measure Spark's JVM source",
    )
    parser.add_argument(
        "--task-per-range",
        action="store_true",
        help="latency mode: also run our source with rowsPerTask=0 (a task per partition range, no packing)",
    )
    parser.add_argument(
        "--rows-per-task", type=int, help="latency mode: our source's rowsPerTask (default: the source's own)"
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
