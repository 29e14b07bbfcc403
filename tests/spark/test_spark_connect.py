"""The zkconsumer source from Spark Connect clients: what works, and the exact errors where Spark 4.3 falls short."""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import FAST, describe, sink_rows, source_end, wait_until

from harness.members import committed_offsets
from harness.spark_connect import SparkConnectServer
from zkconsumer.spark import ZkConsumerDataSource
from zkconsumer.testing import kafka
from zkconsumer.testing.probes import ClusterStartError
from zkconsumer.zookeeper.guarded_write import write_offset_guarded

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(420)]
HIDDEN = ("zkconsumer",)  # the venv's editable install of the checkout: invisible to the server
NO_MODULE = "ModuleNotFoundError: No module named 'zkconsumer'"


def started(server: SparkConnectServer) -> SparkConnectServer:
    try:
        return server.start(timeout=120)
    except ClusterStartError as exc:
        pytest.fail(f"the Spark Connect server did not start:\n{exc}", pytrace=False)


def counts(rows: list[tuple[str, int, int, bytes]]) -> collections.Counter[tuple[str, int, int]]:
    return collections.Counter((t, p, o) for t, p, o, _ in rows)


def worker_imports(spark: Any) -> list[str]:
    """Where the session's Python workers (a UDF) import zkconsumer.spark and zkconsumer from."""
    from pyspark.sql.functions import udf
    from pyspark.sql.types import StringType

    @udf(StringType())
    def where(_):  # type: ignore[no-untyped-def]  # no type hints: they would ask for a pandas UDF
        import zkconsumer
        import zkconsumer.spark

        return f"{zkconsumer.spark.__file__}|{zkconsumer.__file__}"

    return str(spark.range(1).select(where("id")).collect()[0][0]).split("|")


def batch_reader(spark: Any, cluster: Any, group: str, topic: str) -> Any:
    return (
        spark.read.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", group)
        .option("topics", topic)
    )


def stream(spark: Any, cluster: Any, group: str, topic: str, out: Path) -> Any:
    reader = (
        spark.readStream.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", group)
        .option("topics", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in FAST.items():
        reader = reader.option(key, value)
    return (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(out / "sink"))
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


@pytest.fixture(scope="class")
def shipped_server(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkConnectServer]:
    """The wheel as the server's --py-files; no Python worker reuse (a worker that imported zkconsumer
    for one session must not serve another)."""
    server = SparkConnectServer(
        tmp_path_factory.mktemp("connect-client-shipped"),
        py_files=[wheel],
        hide_installed=HIDDEN,
        conf={"spark.python.worker.reuse": "false"},
    )
    yield started(server)
    server.stop()


@pytest.fixture(scope="class")
def path_server(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkConnectServer]:
    """The wheel on the server's PYTHONPATH."""
    server = SparkConnectServer(
        tmp_path_factory.mktemp("connect-server-path"), python_path=[wheel], hide_installed=HIDDEN
    )
    yield started(server)
    server.stop()


class TestCodeShippedByTheClient:
    """A server started with the wheel as --py-files; the venv's own zkconsumer hidden from it. Clients
    register the source with spark.dataSource.register() and ship the wheel with addArtifacts(pyfile=True)."""

    def test_server_py_files_do_not_reach_the_python_workers_of_connect_sessions(
        self, shipped_server, cluster, topic_factory, group_id
    ) -> None:
        """spark.submit.pyFiles is applied by a Python driver's SparkContext; the Connect server's driver is
        the JVM, so its sessions' Python workers never see them. Registering works (the class travels
        pickled by reference), resolving it on the server does not."""
        topic = topic_factory(partitions=1)
        with shipped_server.session() as spark:
            spark.dataSource.register(ZkConsumerDataSource)
            with pytest.raises(Exception) as failure:
                batch_reader(spark, cluster, group_id, topic).load().collect()
        text = str(failure.value)
        assert type(failure.value).__name__ == "AnalysisException", text
        assert "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance" in text, text
        assert NO_MODULE in text, text

    def test_batch_read_with_group_offsets(self, shipped_server, wheel, cluster, zk, topic_factory, group_id) -> None:
        topic = topic_factory(partitions=3)
        sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 150, partitions=3)
        for partition in (0, 1):  # partition 2 has no committed offset: a batch read starts it at earliest
            assert write_offset_guarded(zk, group_id, topic, partition, 30) is None
        with shipped_server.session(artifacts=[wheel]) as spark:
            imported = worker_imports(spark)
            assert all(f"/{wheel.name}/" in path for path in imported), imported
            spark.dataSource.register(ZkConsumerDataSource)
            rows = [
                (r.topic, r.partition, r.offset, bytes(r.value))
                for r in batch_reader(spark, cluster, group_id, topic).load().collect()
            ]
            assert counts(rows) == {
                (m.topic, m.partition, m.offset): 1 for m in sent if m.partition == 2 or m.offset >= 30
            }
            by_key = {(m.topic, m.partition, m.offset): m.value for m in sent}
            assert all(by_key[(t, p, o)] == v for t, p, o, v in rows)
            pinned = (
                batch_reader(spark, cluster, group_id, topic)
                .option("startingOffsets", json.dumps({f"{topic}/0": 45}))
                .option("endingOffsets", json.dumps({f"{topic}/0": 47, f"{topic}/1": 30, f"{topic}/2": 1}))
                .load()
                .select("partition", "offset")
                .collect()
            )
            assert sorted((r.partition, r.offset) for r in pinned) == [(0, 45), (0, 46), (2, 0)]
        assert zk.exists(f"/consumers/{group_id}/ids") is None, "a batch read never joins the group"
        assert committed_offsets(zk, group_id, topic) == {0: 30, 1: 30}, "nor commits"

    def test_streaming_planner_does_not_see_the_session_artifacts(
        self, shipped_server, wheel, cluster, zk, topic_factory, group_id, tmp_path
    ) -> None:
        """The query starts (its schema comes from a planner that gets the session's py-files), then the
        long-lived streaming planner fails to unpickle the source: PythonStreamingSourceRunner sends the
        job artifact id "streaming_job" instead of the session's, so its Python process looks for the
        py-files in <SparkFiles root>/streaming_job/, where Connect never puts them. When this test
        fails, Spark fixed it: update the "Spark Connect" section of docs/spark.md."""
        topic = topic_factory(partitions=2)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 10, partitions=2)
        with shipped_server.session(artifacts=[wheel]) as spark:
            spark.dataSource.register(ZkConsumerDataSource)
            assert all(f"/{wheel.name}/" in path for path in worker_imports(spark))  # the artifact is there
            query = stream(spark, cluster, group_id, topic, tmp_path)
            try:
                deadline = time.monotonic() + 90
                while query.exception() is None and time.monotonic() < deadline:
                    time.sleep(0.5)
                error = query.exception()
                progress = query.recentProgress
            finally:
                query.stop()
        assert error is not None, f"the query ran over Connect with client-shipped code: {progress}"
        text = str(error)
        assert type(error).__name__ == "StreamingQueryException", text
        assert text.startswith(
            "(STREAM_FAILED) [PYTHON_DATA_SOURCE_ERROR] Failed to plan Python data source initialize source: Traceback"
        ), text
        assert "pyspark/sql/streaming/python_streaming_source_runner.py" in text, text
        assert NO_MODULE in text, text
        shipped = list((shipped_server.workdir / "local").glob(f"spark-*/userFiles-*/*/{wheel.name}"))
        assert shipped and not list((shipped_server.workdir / "local").glob("spark-*/userFiles-*/streaming_job"))
        assert zk.exists(f"/consumers/{group_id}/ids") is None, "the planner never got as far as joining"


class TestCodeOnTheServersPythonPath:
    """The workaround: zkconsumer importable by the server's Python itself (here the wheel on the server's
    PYTHONPATH, which all its Python workers inherit; the venv's own copy still hidden)."""

    def test_streaming_query_is_a_member_and_its_sink_gets_every_message_once(
        self, path_server, wheel, cluster, zk, topic_factory, group_id, tmp_path
    ) -> None:
        topic = topic_factory(partitions=4)
        sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 200, partitions=4)
        with path_server.session() as spark:
            imported = worker_imports(spark)
            assert all(path.startswith(f"{wheel}/") for path in imported), imported
            spark.dataSource.register(ZkConsumerDataSource)
            query = stream(spark, cluster, group_id, topic, tmp_path)
            try:
                wait_until(lambda: source_end(query) is not None, 90, "the first micro-batch", query)
                for round_ in range(4):  # more messages while the query runs
                    sent += kafka.produce_numbered(
                        cluster.bootstrap_servers, topic, 100, partitions=4, start=200 + 100 * round_
                    )
                    time.sleep(0.5)
                ends = {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}
                want = {(topic, p): o for p, o in ends.items()}
                wait_until(lambda: (source_end(query) or {}) == want, 90, "the query to reach the log end", query)
                wait_until(lambda: committed_offsets(zk, group_id, topic) == ends, 30, "offsets in ZooKeeper", query)
                report = describe(cluster, group_id)
                (member,) = report["members"]
                assert member["owned_partitions"] == 4 and report["total_lag"] == 0, report
                assert {row["consumer_id"] for row in report["partitions"]} == {member["consumer_id"]}
            finally:
                query.stop()
            wait_until(
                lambda: zk.get_children(f"/consumers/{group_id}/ids") == [], 20, "the stopped query to leave the group"
            )
            rows = sink_rows(spark, str(tmp_path / "sink"))  # read back over Connect, through the sink's log
        assert counts(rows) == {(m.topic, m.partition, m.offset): 1 for m in sent}, "every message exactly once"
        by_key = {(m.topic, m.partition, m.offset): m.value for m in sent}
        assert all(by_key[(t, p, o)] == v for t, p, o, v in rows)
        assert committed_offsets(zk, group_id, topic) == ends
        from pyspark.sql.utils import is_remote

        assert not is_remote(), "a Connect session left this process in Connect mode (the classic tests' session)"
