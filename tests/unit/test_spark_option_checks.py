"""Source options checked on the driver (the batch option pinning a read's partitions, offset storage and dual commit), and module names safe for spark-submit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zkconsumer.spark.options import OptionError, parse_options

ROOT = Path(__file__).resolve().parents[2]
BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}


def test_partitions_pins_a_batch_read() -> None:
    opts = parse_options({**BASE, "partitions": "t/0, t/3,my/topic/2"}, streaming=False)
    assert opts.partitions == {("t", 0), ("t", 3), ("my/topic", 2)}
    assert parse_options(BASE, streaming=False).partitions is None


def test_rows_per_task_packs_small_ranges_by_default_and_zero_keeps_a_task_per_range() -> None:
    assert parse_options(BASE, streaming=True).rows_per_task == 20000
    assert parse_options({**BASE, "rowsPerTask": "0"}, streaming=False).rows_per_task == 0
    with pytest.raises(OptionError, match="'rowspertask' must be >= 0"):
        parse_options({**BASE, "rowsPerTask": "-1"}, streaming=True)


def test_a_batch_size_consume_would_refuse_is_refused_when_the_options_are_read() -> None:
    assert parse_options({**BASE, "batchSize": "1000000"}, streaming=True).batch_size == 1_000_000
    with pytest.raises(OptionError, match="'batchSize' must be <= 1,000,000"):
        parse_options({**BASE, "batchSize": "1000001"}, streaming=True)


def test_the_removed_pool_option_is_refused_by_name() -> None:
    with pytest.raises(OptionError, match="'reuseConsumers' is gone.*rowsPerTask"):
        parse_options({**BASE, "reuseConsumers": "true"}, streaming=True)


@pytest.mark.parametrize(
    ("value", "streaming", "message"),
    [
        ("t/0", True, "applies to batch reads"),
        ("t", False, "is not topic/partition"),
        ("t/x", False, "is not topic/partition"),
        (" , ", False, "names no partition"),
    ],
)
def test_bad_partitions_name_the_option(value: str, streaming: bool, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options({**BASE, "partitions": value}, streaming=streaming)


@pytest.mark.parametrize("streaming", [True, False])
def test_a_group_keeping_offsets_in_kafka_only_is_refused_by_batch_and_stream(streaming: bool) -> None:
    with pytest.raises(OptionError, match="offsets.storage=kafka with dual.commit.enabled=false"):
        parse_options({**BASE, "offsets.storage": "kafka", "dual.commit.enabled": "false"}, streaming=streaming)
    assert not parse_options({**BASE, "offsets.storage": "zookeeper"}, streaming=streaming).dual_commit


@pytest.mark.parametrize("extra", [{}, {"dual.commit.enabled": "true"}])
def test_dual_commit_is_a_streams_option(extra: dict) -> None:
    """offsets.storage=kafka turns dual commit on (the legacy default), for streams; batch reads and
    the ingest job (streaming=False) read and commit ZooKeeper offsets only, and say so."""
    assert parse_options({**BASE, "offsets.storage": "kafka", **extra}, streaming=True).dual_commit
    with pytest.raises(OptionError, match=r"applies to streaming reads \(spark.readStream\) only"):
        parse_options({**BASE, "offsets.storage": "kafka", **extra}, streaming=False)


@pytest.mark.parametrize("streaming", [True, False])
def test_dual_commit_enabled_without_kafka_storage_is_refused_not_ignored(streaming: bool) -> None:
    with pytest.raises(OptionError, match="option 'dual.commit.enabled': true takes effect only with offsets.storage"):
        parse_options({**BASE, "dual.commit.enabled": "true"}, streaming=streaming)
    assert not parse_options({**BASE, "dual.commit.enabled": "false"}, streaming=streaming).dual_commit


def test_executor_reads_use_the_fetch_properties_the_connector_maps() -> None:
    """One mapping of the legacy fetch properties (FetchSettings.from_config) for the connector's
    fetcher and Spark's executor reads; the reader adds its own forced settings on top."""
    from zkconsumer.config.consumer_config import ConsumerConfig
    from zkconsumer.consumer.fetcher import FetchSettings
    from zkconsumer.spark.options import READER_FORCED

    props = {"fetch.message.max.bytes": "2097152", "fetch.wait.max.ms": "250", "librdkafka.check.crcs": "true"}
    opts = parse_options({**BASE, **props}, streaming=True)
    config = ConsumerConfig.from_mapping({"zookeeper.connect": "zk:2181", "group.id": "g", **props})
    fetcher_side = FetchSettings.from_config(config, "", config.librdkafka_overrides).consumer_config()
    assert fetcher_side["max.partition.fetch.bytes"] == 2097152 and fetcher_side["fetch.wait.max.ms"] == 250
    assert fetcher_side["check.crcs"] == "true"
    assert opts.reader_config() == {**fetcher_side, **READER_FORCED}


def test_no_module_beside_a_submitted_job_shadows_the_standard_library() -> None:
    # spark-submit runs a job file as a script, so its folder is first on sys.path (spark_jobs/ for
    # spark_jobs/ingest.py, zkconsumer/spark/ for an installed ingest_job.py): a profile.py there once
    # replaced the stdlib's `profile`, and pyspark's own import of cProfile failed before the job began.
    folders = (ROOT / "spark_jobs", ROOT / "zkconsumer" / "spark")
    shadowing = sorted(p.name for f in folders for p in f.glob("*.py") if p.stem in sys.stdlib_module_names)
    assert shadowing == []
