"""PySpark ingestion for zkconsumer groups: the `zkconsumer` data source and the batch ingest job.

    from spark_jobs import ZkConsumerDataSource
    spark.dataSource.register(ZkConsumerDataSource)
    df = (spark.readStream.format("zkconsumer")
          .option("zookeeper.connect", "zk:2181/kafka").option("group.id", "billing")
          .option("topics", "orders").load())

See docs/spark.md for the options, offset precedence and how to ship it to a cluster.
"""

from spark_jobs.source import ZkConsumerDataSource

__all__ = ["ZkConsumerDataSource"]
