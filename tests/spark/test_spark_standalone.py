"""The zkconsumer stream on a real Spark standalone cluster (a master, two 1-core workers), zkconsumer shipped
to the executors as a wheel: every message once in the sink, lag 0, and an executor killed mid-batch."""
from __future__ import annotations

import collections
import json
import os
import signal
import sys
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq
import pytest
from spark_helpers import ROOT

from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import ClusterStartError
from zkconsumer.testing.members import committed_offsets
from zkconsumer.testing.process import _die_with_parent
from zkconsumer.testing.spark_cluster import SparkStandalone

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]
PARTITIONS = 12


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    try:
        spark = SparkStandalone(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g").start()
    except ClusterStartError as exc:
        pytest.fail(f"the Spark standalone cluster did not start:\n{exc}", pytrace=False)
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """zkconsumer (with spark_jobs) as users ship it: a wheel built from this checkout, named .zip."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                           "-q", "-w", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("zkconsumer-*.whl")
    # PySpark puts only .zip, .egg and .jar --py-files on the executors' sys.path (PACKAGE_EXTENSIONS);
    # a pure-Python wheel is a zip: ship it under that name.
    shipped = built.with_suffix(".zip")
    built.rename(shipped)
    return shipped


class Driver:
    """spark_driver.py run by spark-submit against the standalone master, in its own process group."""

    def __init__(self, spark: SparkStandalone, wheel: Path, cluster: Any, group: str, topic: str,
                 folder: Path) -> None:
        self.output, self.stop_file = folder / "out", folder / "stop"
        self.log_path = folder / "driver.log"
        cmd, env = spark.submit_command(
            [str(ROOT / "zkconsumer" / "testing" / "spark_driver.py"), "--zookeeper", cluster.zookeeper_connect,
             "--group", group, "--topics", topic, "--output", str(self.output),
             "--checkpoint", str(folder / "checkpoint"), "--stop-file", str(self.stop_file),
             "--option", "startingOffsets=earliest"], py_files=[wheel])
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, cwd=folder,
                                          start_new_session=True, preexec_fn=_die_with_parent)
        assert self.popen.stdout is not None
        line = self.popen.stdout.readline()
        if not line.startswith(b"{"):
            raise AssertionError(f"the driver did not start:\n{self.log_tail()}\n{spark.log_tails()}")
        self.executor_modules: list[str] = json.loads(line)["executor_modules"]

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 90.0) -> int:
        self.stop_file.touch()
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(30)
            raise AssertionError(f"the driver did not stop within {timeout:.0f} s:\n{self.log_tail()}")


def sink_keys(output: Path) -> collections.Counter[tuple[int, int]]:
    """(partition, offset) of every row in the files the sink committed (its _spark_metadata log):
    files a failed task attempt left behind are not part of the output."""
    meta = output / "_spark_metadata"
    files: set[str] = set()
    if meta.exists():
        for entry in sorted(meta.iterdir()):
            if entry.name.startswith("."):
                continue
            for line in entry.read_text().splitlines()[1:]:  # the first line is the log's version
                record = json.loads(line)
                path = record["path"].removeprefix("file://")
                files.add(path) if record.get("action", "add") == "add" else files.discard(path)
    keys: collections.Counter[tuple[int, int]] = collections.Counter()
    for path in files:
        table = pq.read_table(path, columns=["partition", "offset"])
        keys.update(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    return keys


class Production:
    """Numbered messages, 10 per partition every 0.2 s, in a thread until stop()."""

    def __init__(self, cluster: Any, topic: str) -> None:
        self.cluster, self.topic = cluster, topic
        self.sent: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-production", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            produced = kafka.produce_numbered(self.cluster.bootstrap_servers, self.topic, 10 * PARTITIONS,
                                              partitions=PARTITIONS, start=len(self.sent), idempotent=False)
            self.sent.extend((m.partition, m.offset) for m in produced)
            self._stop.wait(0.2)

    def stop(self) -> set[tuple[int, int]]:
        self._stop.set()
        self._thread.join(60)
        return set(self.sent)


def wait_for(condition, timeout: float, what: str, driver: Driver) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if driver.popen.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} (driver exit {driver.popen.poll()}):\n{driver.log_tail()}")
        time.sleep(1.0)


def check_run(driver: Driver, production: Production, zk, group: str, topic: str, cluster,  # type: ignore[no-untyped-def]
              during: Any = None) -> None:
    """Produce for a while (calling `during` once rows arrive), then: every message once, lag 0."""
    ahead: list[str] = []

    def offsets_never_ahead_of_the_sink() -> None:
        committed = committed_offsets(zk, group, topic)
        rows = sink_keys(driver.output)
        for partition, offset in committed.items():
            missing = [o for o in range(offset) if (partition, o) not in rows]
            if missing:
                ahead.append(f"{topic}-{partition} committed {offset}, sink lacks {missing[:5]}")

    wait_for(lambda: len(sink_keys(driver.output)) > 0, 120, "no rows reached the sink", driver)
    if during is not None:
        during()
    for _ in range(8):
        offsets_never_ahead_of_the_sink()
        time.sleep(1.0)
    sent = production.stop()
    wait_for(lambda: set(sink_keys(driver.output)) >= sent, 180, "not every message reached the sink", driver)
    ends = {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}
    wait_for(lambda: committed_offsets(zk, group, topic) == ends, 60, "ZooKeeper offsets never reached the log end",
             driver)
    offsets_never_ahead_of_the_sink()
    assert driver.stop() == 0, driver.log_tail()
    counts = sink_keys(driver.output)
    assert set(counts) == sent, "loss or strays"
    assert not {k: n for k, n in counts.items() if n > 1}, "duplicates in the sink"
    assert not ahead, f"ZooKeeper offsets ran ahead of the sink: {ahead[:3]}"


def test_a_stream_on_the_cluster_writes_every_message_once_and_reaches_lag_zero(
        standalone, wheel, cluster, zk, topic_factory, group_id, tmp_path) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    production = Production(cluster, topic)
    driver = Driver(standalone, wheel, cluster, group_id, topic, tmp_path)
    try:
        assert driver.executor_modules and all(str(ROOT) not in p for p in driver.executor_modules), \
            f"executors imported the checkout, not the wheel: {driver.executor_modules}"
        check_run(driver, production, zk, group_id, topic, cluster)
    finally:
        production.stop()
        if driver.popen.poll() is None:
            os.killpg(driver.popen.pid, signal.SIGKILL)


def test_an_executor_killed_mid_batch_loses_and_repeats_nothing(standalone, wheel, cluster, zk, topic_factory,
                                                                group_id, tmp_path) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    production = Production(cluster, topic)
    driver = Driver(standalone, wheel, cluster, group_id, topic, tmp_path)
    killed: list[int] = []

    def kill_an_executor() -> None:
        """kill -9 until one kill lands in the middle of a task (the driver logs the task as lost)."""
        for _ in range(4):
            pids = standalone.executor_pids()
            assert pids, f"no executor found:\n{standalone.log_tails()}"
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            time.sleep(4.0)
            if "Lost task" in driver.log_path.read_text(errors="replace"):
                return
        raise AssertionError(f"{len(killed)} executors killed, none while it ran a task:\n{driver.log_tail()}")

    try:
        check_run(driver, production, zk, group_id, topic, cluster, during=kill_an_executor)
    finally:
        production.stop()
        if driver.popen.poll() is None:
            os.killpg(driver.popen.pid, signal.SIGKILL)
    assert killed
