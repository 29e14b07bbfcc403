"""Spark test setup: one local[2] SparkSession for the whole run, with the zkconsumer source registered."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest
from spark_helpers import FAST, spark_environment


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    spark_environment()
    from pyspark.sql import SparkSession

    from spark_jobs import ZkConsumerDataSource
    session = (SparkSession.builder.master("local[2]").appName("zkconsumer-spark-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "768m")
               .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(ZkConsumerDataSource)
    yield session
    session.stop()


@pytest.fixture
def stream_reader(spark, cluster) -> Callable[..., Any]:  # type: ignore[no-untyped-def]
    """stream_reader(group, topics, **options) -> a streaming DataFrame of the zkconsumer source."""

    def make(group: str, topics: str, **options: object) -> Any:
        reader = (spark.readStream.format("zkconsumer").option("zookeeper.connect", cluster.zookeeper_connect)
                  .option("group.id", group).option("topics", topics))
        for key, value in {**FAST, **options}.items():
            reader = reader.option(key, str(value))
        return reader.load()
    return make


