"""Helpers of the standalone-cluster tests: the spark-submit driver, steady production, the sink's committed rows."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from spark_helpers import ROOT

from harness.members import committed_offsets
from harness.spark_cluster import SparkStandalone
from harness.spark_sink import committed_files
from zkconsumer.testing import kafka
from zkconsumer.testing.process import die_with_parent

PARTITIONS = 12


class Driver:
    """spark_driver.py run by spark-submit against the standalone master, in its own process group.
    Output and checkpoint live in `folder`, so a second Driver on the same folder resumes the first."""

    def __init__(
        self,
        spark: SparkStandalone,
        wheel: Path,
        cluster: Any,
        group: str,
        topic: str,
        folder: Path,
        *,
        log_name: str = "driver.log",
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.output, self.checkpoint, self.stop_file = folder / "out", folder / "checkpoint", folder / "stop"
        self.log_path = folder / log_name
        self.stop_file.unlink(missing_ok=True)
        cmd, env = spark.submit_command(
            [
                str(ROOT / "tests" / "harness" / "spark_driver.py"),
                "--zookeeper",
                cluster.zookeeper_connect,
                "--group",
                group,
                "--topics",
                topic,
                "--output",
                str(self.output),
                "--checkpoint",
                str(self.checkpoint),
                "--stop-file",
                str(self.stop_file),
                "--option",
                "startingOffsets=earliest",
            ],
            py_files=[wheel],
        )
        env = {**env, **(extra_env or {})}
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=folder,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        assert self.popen.stdout is not None
        # The driver's first JSON line says it started; Python warnings (pyspark's, e.g. about the
        # installed pandas) may reach the same stdout before it and are kept for the error.
        skipped: list[bytes] = []
        line = self.popen.stdout.readline()
        while line and not line.startswith(b"{") and len(skipped) < 200:
            skipped.append(line)
            line = self.popen.stdout.readline()
        if not line.startswith(b"{"):
            self.kill_all()
            printed = b"".join(skipped[-20:]).decode(errors="replace")
            raise AssertionError(f"the driver did not start:\n{printed}\n{self.log_tail()}\n{spark.log_tails()}")
        self.executor_modules: list[str] = json.loads(line)["executor_modules"]

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self, timeout: float = 90.0) -> int:
        self.stop_file.touch()
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise AssertionError(f"the driver did not stop within {timeout:.0f} s:\n{self.log_tail()}") from None

    def group_pids(self) -> list[int]:
        """Live processes of the driver's process group: the JVM, the Python driver, planner workers."""
        return process_group(self.popen.pid)

    def kill_all(self) -> None:
        """SIGKILL the whole process group (cleanup)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(30)


def process_group(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def wait_gone(pgid: int, timeout: float, what: str) -> None:
    """Wait for a killed driver's remaining processes (Python driver, planners) to end by themselves."""
    deadline = time.monotonic() + timeout
    while process_group(pgid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not process_group(pgid), f"{what}: processes linger: {process_group(pgid)}"


def sink_keys(output: Path) -> collections.Counter[tuple[int, int]]:
    """(partition, offset) of every row in the files the sink committed (harness.spark_sink)."""
    keys: collections.Counter[tuple[int, int]] = collections.Counter()
    for path in committed_files(output):
        table = pq.read_table(path, columns=["partition", "offset"])
        keys.update(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    return keys


class Production:
    """Numbered messages, 10 per partition every 0.2 s, in a thread until stop()."""

    def __init__(self, cluster: Any, topic: str, partitions: int = PARTITIONS) -> None:
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.sent: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-production", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            produced = kafka.produce_numbered(
                self.cluster.bootstrap_servers,
                self.topic,
                10 * self.partitions,
                partitions=self.partitions,
                start=len(self.sent),
                idempotent=False,
            )
            self.sent.extend((m.partition, m.offset) for m in produced)
            self._stop.wait(0.2)

    def stop(self) -> set[tuple[int, int]]:
        self._stop.set()
        self._thread.join(60)
        return set(self.sent)


def wait_for(condition: Callable[[], object], timeout: float, what: str, driver: Driver) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if driver.popen.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} (driver exit {driver.popen.poll()}):\n{driver.log_tail()}")
        time.sleep(1.0)


def ahead_of_the_sink(zk: Any, group: str, topic: str, output: Path) -> list[str]:
    """Partitions whose ZooKeeper offset covers messages the sink has not committed."""
    committed = committed_offsets(zk, group, topic)
    rows = sink_keys(output)
    found = []
    for partition, offset in sorted(committed.items()):
        missing = [o for o in range(offset) if (partition, o) not in rows]
        if missing:
            found.append(f"{topic}-{partition} committed {offset}, sink lacks {missing[:5]}")
    return found


def finish(
    driver: Driver, production: Production, zk: Any, group: str, topic: str, cluster: Any, ahead: list[str]
) -> None:
    """Stop producing, then: every message in the sink, ZooKeeper at the log end (never ahead of the
    sink meanwhile), a clean stop, every message exactly once."""
    for _ in range(8):
        ahead += ahead_of_the_sink(zk, group, topic, driver.output)
        time.sleep(1.0)
    sent = production.stop()
    wait_for(lambda: set(sink_keys(driver.output)) >= sent, 180, "not every message reached the sink", driver)
    ends = {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}
    wait_for(
        lambda: committed_offsets(zk, group, topic) == ends, 60, "ZooKeeper offsets never reached the log end", driver
    )
    ahead += ahead_of_the_sink(zk, group, topic, driver.output)
    assert driver.stop() == 0, driver.log_tail()
    assert committed_offsets(zk, group, topic) == ends, "the stop moved ZooKeeper past the log end"
    counts = sink_keys(driver.output)
    assert set(counts) == sent, "loss or strays"
    assert not {k: n for k, n in counts.items() if n > 1}, "duplicates in the sink"
    assert not ahead, f"ZooKeeper offsets ran ahead of the sink: {ahead[:3]}"
