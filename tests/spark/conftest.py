"""Spark test setup: one local[2] SparkSession for the whole run (zkconsumer source registered), the standalone cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import FAST, ROOT, spark_environment

from harness.spark_cluster import SparkStandalone, build_wheel
from zkconsumer.testing.probes import ClusterStartError


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    spark_environment()
    from pyspark.sql import SparkSession

    from zkconsumer.spark import ZkConsumerDataSource

    session = (
        SparkSession.builder.master("local[2]")
        .appName("zkconsumer-spark-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "768m")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(ZkConsumerDataSource)
    yield session
    session.stop()


@pytest.fixture
def stream_reader(spark, cluster) -> Callable[..., Any]:  # type: ignore[no-untyped-def]
    """stream_reader(group, topics, **options) -> a streaming DataFrame of the zkconsumer source."""

    def make(group: str, topics: str, **options: object) -> Any:
        reader = (
            spark.readStream.format("zkconsumer")
            .option("zookeeper.connect", cluster.zookeeper_connect)
            .option("group.id", group)
            .option("topics", topics)
        )
        for key, value in {**FAST, **options}.items():
            reader = reader.option(key, str(value))
        return reader.load()

    return make


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    """A master and two 1-core workers shared by the standalone tests (each submits its own
    application, whose executors end with it; starting a cluster per module cost ~25 s each)."""
    try:
        spark = SparkStandalone(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g").start()
    except ClusterStartError as exc:
        pytest.fail(f"the Spark standalone cluster did not start:\n{exc}", pytrace=False)
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """zkconsumer (with zkconsumer.spark) as users ship it: a wheel built from this checkout, named .zip."""
    return build_wheel(tmp_path_factory.mktemp("wheel"), ROOT)
