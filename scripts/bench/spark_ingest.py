"""Spark ingest throughput: our `zkconsumer` Python data source vs Spark's own JVM Kafka source.

    .venv/bin/python scripts/bench/spark_ingest.py --messages 5000000

Both read the same 8-partition topic of 100-byte messages from offset 0 to the end in one local[2]
SparkSession (spark.sql.shuffle.partitions=2) into the same sink (the `noop` format), one after the
other, best of --repeat runs each after an untimed warm-up (a count() that also checks the rows).
Spark's connector (spark-sql-kafka-0-10_2.13 and what its POM resolves) comes from .jars/spark-kafka
(scripts/jars/spark-kafka/pom.xml) through spark.jars: nothing is downloaded at run time.
The last line is machine-readable: ratio=<ours/jvm> ours_rows_per_s=<n> jvm_rows_per_s=<n>
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, TEST_JVM_OPTS, LocalCluster  # noqa: E402
from zkconsumer.testing.jars import jar_dir  # noqa: E402

PARTITIONS = 8


def produce(bootstrap: str, topic: str, count: int, size: int) -> None:
    kafka.produce_bulk(bootstrap, topic, count, size, PARTITIONS)


def connector_jars() -> list[str]:
    """Spark's Kafka connector jars, minus any artifact pyspark already ships (its copy wins)."""
    import pyspark
    shipped = {re.sub(r"-\d[\w.\-]*\.jar$", "", p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = sorted(jar_dir("spark-kafka").glob("*.jar"))
    return [str(p) for p in jars if re.sub(r"-\d[\w.\-]*\.jar$", "", p.name) not in shipped]


def spark_session(jars: list[str], driver_memory: str) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers need pyarrow and confluent-kafka
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    from pyspark.sql import SparkSession

    from spark_jobs import ZkConsumerDataSource
    spark = (SparkSession.builder.master("local[2]").appName("zkconsumer-spark-ingest-bench")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", driver_memory)
             .config("spark.jars", ",".join(jars))  # set before the JVM starts; no spark.jars.packages
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per source (best counts)")
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
    cluster = None
    if args.zookeeper and args.bootstrap:
        zookeeper, bootstrap = args.zookeeper, args.bootstrap
    else:
        cluster = LocalCluster(brokers=1, chroot="/bench", jvm_opts=TEST_JVM_OPTS if args.smoke else SERVER_JVM_OPTS)
        cluster.start()
        zookeeper, bootstrap = cluster.zookeeper_connect, cluster.bootstrap_servers
    try:
        topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
        kafka.create_topic(bootstrap, topic, PARTITIONS)
        began = time.perf_counter()
        produce(bootstrap, topic, args.messages, args.size)
        print(f"produced {args.messages:,} x {args.size} B into {PARTITIONS} partitions in "
              f"{time.perf_counter() - began:.1f}s", flush=True)
        spark = spark_session(jars, "768m" if args.smoke else args.driver_memory)
        try:
            def ours() -> Any:
                return (spark.read.format("zkconsumer").option("zookeeper.connect", zookeeper)
                        .option("group.id", f"bench-{topic}").option("topics", topic).load())

            def jvm() -> Any:
                return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                        .option("subscribe", topic).option("startingOffsets", "earliest")
                        .option("endingOffsets", "latest").load())
            a = timed("zkconsumer (Python source) ", ours, args.messages, args.repeat)
            b = timed("kafka (Spark's JVM source)", jvm, args.messages, args.repeat)
        finally:
            spark.stop()
        print(f"zkconsumer source: {a:12,.0f} rows/s\nSpark Kafka source: {b:12,.0f} rows/s\nratio {a / b:.2f}")
        print(f"ratio={a / b:.3f} ours_rows_per_s={a:.0f} jvm_rows_per_s={b:.0f}")
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
