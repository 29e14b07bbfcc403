"""spark-submit driver for cluster tests: a zkconsumer stream into parquet until a stop file appears.

    spark-submit --master spark://... --py-files zkconsumer.whl tests/harness/spark_driver.py \\
        --zookeeper zk:2181/kafka --group g --topics orders --output OUT --checkpoint CKPT --stop-file STOP

Prints one JSON line {"executor_modules": [...]} once the query runs: where the executors import
zkconsumer and zkconsumer.spark from (the shipped wheel, not the checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def module_paths(_: object) -> list[str]:
    import zkconsumer
    import zkconsumer.spark

    return [zkconsumer.__file__ or "", zkconsumer.spark.__file__ or ""]


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--zookeeper", "--group", "--topics", "--output", "--checkpoint", "--stop-file"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--trigger", default="1 second")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from zkconsumer.spark import ZkConsumerDataSource

    spark = SparkSession.builder.appName(f"zkconsumer-test-{args.group}").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(ZkConsumerDataSource)
    # The reader gets the checkpoint too: stop() commits the last batch its commit log says completed.
    reader = (
        spark.readStream.format("zkconsumer")
        .option("zookeeper.connect", args.zookeeper)
        .option("group.id", args.group)
        .option("topics", args.topics)
        .option("checkpointLocation", args.checkpoint)
    )
    for item in args.option:
        key, _, value = item.partition("=")
        reader = reader.option(key, value)
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime=args.trigger)
        .start()
    )
    seen = spark.sparkContext.parallelize(range(2), 2).map(module_paths).collect()
    print(json.dumps({"executor_modules": sorted({p for paths in seen for p in paths})}), flush=True)
    while not os.path.exists(args.stop_file):
        if query.awaitTermination(0.5):
            break
    if query.exception() is not None:
        print(f"query failed: {query.exception()}", file=sys.stderr, flush=True)
        return 1
    query.stop()
    time.sleep(0.5)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
