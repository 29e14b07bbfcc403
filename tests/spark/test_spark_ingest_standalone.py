"""Issue #14 scenario 5 on the standalone cluster: the ingest job's driver killed by kill -9 in the middle of its
write, then run again: every message exactly once in the output, nothing committed before the rerun, lag 0 after it."""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from spark_helpers import ROOT
from standalone_helpers import wait_gone

from harness.members import committed_offsets
from harness.spark_cluster import SparkStandalone
from zkconsumer.spark import ingest
from zkconsumer.testing import kafka
from zkconsumer.testing.process import die_with_parent
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]
PARTITIONS = 12
# Some tasks done, some not: the write is under way (ingest.py prints the stage's task counts).
PART_WAY = re.compile(r"stage \d+: (\d+)/(\d+) tasks")


def submit_ingest(
    spark: SparkStandalone, wheel: Path, cluster: Any, group: str, topic: str, output: Path, log_path: Path
) -> subprocess.Popen[bytes]:
    """spark-submit spark_jobs/ingest.py to the standalone master (zkconsumer from the wheel only)."""
    cmd, env = spark.submit_command(
        [
            str(ROOT / "spark_jobs" / "ingest.py"),
            "--zookeeper",
            cluster.zookeeper_connect,
            "--group",
            group,
            "--topic",
            topic,
            "--output",
            str(output),
        ],
        py_files=[wheel],
    )
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=log_path.parent,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def part_way(log_path: Path) -> bool:
    return any(0 < int(done) < int(total) for done, total in PART_WAY.findall(log_path.read_text(errors="replace")))


def output_keys(output: Path) -> collections.Counter[tuple[int, int]]:
    """(partition, offset) of every row in the runs the job completed (their marker written)."""
    keys: collections.Counter[tuple[int, int]] = collections.Counter()
    for run in output.glob("run=*"):
        if (run / ingest.MARKER).exists():
            for path in run.glob("part-*.parquet"):
                table = pq.read_table(path, columns=["partition", "offset"])
                keys.update(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    return keys


def test_an_ingest_killed_mid_write_and_run_again_writes_every_message_once(
    standalone, wheel, cluster, zk, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    kafka.produce_bulk(cluster.bootstrap_servers, topic, 600_000, 100, PARTITIONS)  # a write of many seconds
    output, first_log = tmp_path / "out", tmp_path / "ingest-1.log"
    first = submit_ingest(standalone, wheel, cluster, group_id, topic, output, first_log)
    try:
        deadline = time.monotonic() + 180
        while not part_way(first_log) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert part_way(first_log), f"the write was never seen under way (exit {first.poll()}):\n" + "\n".join(
            first_log.read_text(errors="replace").splitlines()[-40:]
        )
        os.kill(first.pid, signal.SIGKILL)  # the driver JVM, mid-write
        first.wait(30)
        wait_gone(first.pid, 60, "the killed ingest driver")
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(30)
    (killed_run,) = [p.name for p in output.glob("run=*")]
    assert not (output / killed_run / ingest.MARKER).exists(), "killed before its marker"
    assert committed_offsets(zk, group_id, topic) == {}, "nothing committed"
    deadline = time.monotonic() + 30  # the lock is ephemeral: it went with the dead driver's session
    while zk.exists(znodes.ingest_lock_path(group_id, topic)) and time.monotonic() < deadline:
        time.sleep(0.5)

    kafka.produce_numbered(cluster.bootstrap_servers, topic, 10 * PARTITIONS, partitions=PARTITIONS)
    second_log = tmp_path / "ingest-2.log"
    second = submit_ingest(standalone, wheel, cluster, group_id, topic, output, second_log)
    try:
        assert second.wait(300) == 0, "\n".join(second_log.read_text(errors="replace").splitlines()[-40:])
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait(30)
    assert f"deleting incomplete {killed_run}" in second_log.read_text(errors="replace")
    assert not (output / killed_run).exists()
    ends = {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}
    counts = output_keys(output)
    assert set(counts) == {(p, o) for p, end in ends.items() for o in range(end)}, "loss or strays"
    assert not {k: n for k, n in counts.items() if n > 1}, "duplicates in the output"
    assert committed_offsets(zk, group_id, topic) == ends
