"""spark-submit job: write a group's new messages (committed -> log end) to files, then commit the offsets.

    spark-submit --py-files zkconsumer.zip spark_jobs/ingest.py \\
        --zookeeper zk:2181/kafka --group billing --topic orders --output hdfs:///data/orders [--format parquet]

The job is zkconsumer.spark.ingest_job (what it writes and commits, its exit codes: docs/spark.md,
"The ingest job"). zkconsumer comes from --py-files or the driver's environment; run from a
checkout without either, the checkout is used.
"""

import os
import sys

if __package__ in (None, ""):  # run as a file: --py-files / the wheel come first, else this checkout
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zkconsumer.spark.ingest_job import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
