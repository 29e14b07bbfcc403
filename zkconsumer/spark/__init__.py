"""PySpark 4 ingestion for zkconsumer groups: the `zkconsumer` data source and the batch ingest (needs the [spark] extra).

    from zkconsumer.spark import ZkConsumerDataSource
    spark.dataSource.register(ZkConsumerDataSource)
    df = (spark.readStream.format("zkconsumer")
          .option("zookeeper.connect", "zk:2181/kafka").option("group.id", "billing")
          .option("topics", "orders").load())

See docs/spark.md for the options, offset precedence and how to ship it to a cluster; the
runnable ingest job is spark_jobs/ingest.py in the repository.
"""

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # the base install has no pyspark: say which extra brings it
    raise ImportError("zkconsumer.spark needs PySpark 4: pip install 'zkconsumer[spark]' (or pyspark>=4.0,<5)") from exc

from zkconsumer.spark.source import ZkConsumerDataSource

__all__ = ["ZkConsumerDataSource"]
