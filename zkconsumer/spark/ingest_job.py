"""The ingest job's command line: `spark-submit` this file, or spark_jobs/ingest.py of a checkout.

    spark-submit --py-files zkconsumer.zip spark_jobs/ingest.py \\
        --zookeeper zk:2181/kafka --group billing --topic orders --output hdfs:///data/orders [--format parquet]

With the wheel installed on the driver host instead, submit this module's own file:
`spark-submit $(python -c 'import zkconsumer.spark.ingest_job as m; print(m.__file__)') ...`
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from zkconsumer.spark import ingest as library
from zkconsumer.spark.ingest import EXIT_OK, ingest_topic


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ingest.py",
        description=f"{__doc__}\n{library.__doc__}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--zookeeper", required=True, help="zookeeper.connect, e.g. zk:2181/kafka")
    parser.add_argument("--group", required=True, help="consumer group (group.id) whose offsets advance")
    parser.add_argument("--topic", required=True, action="append", help="topic to ingest (repeatable)")
    parser.add_argument("--output", required=True, help="output root; each run goes to OUTPUT/run=<topic>-<hash>")
    parser.add_argument("--format", default="parquet", help="Spark file format (default parquet)")
    parser.add_argument(
        "--starting",
        default="earliest",
        choices=("earliest", "latest"),
        help="where partitions without a committed offset start (default earliest)",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="legacy consumer property or zkconsumer source option (repeatable)",
    )
    args = parser.parse_args(argv)
    for item in args.property:
        if "=" not in item:
            parser.error(f"--property {item!r}: expected KEY=VALUE")
    return args


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    args = parse_args(argv)
    props = dict(item.split("=", 1) for item in args.property)
    from pyspark.sql import SparkSession

    from zkconsumer.spark import ZkConsumerDataSource

    session = spark or SparkSession.builder.appName(f"zkconsumer-ingest-{args.group}").getOrCreate()
    session.dataSource.register(ZkConsumerDataSource)
    status = EXIT_OK
    for topic in args.topic:
        status = max(status, ingest_topic(session, args, topic, props))
    return status


if __name__ == "__main__":
    sys.exit(main())
