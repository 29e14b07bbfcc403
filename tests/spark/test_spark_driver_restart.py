"""Issue #14 scenario 3 on the standalone cluster: the driver killed by kill -9 mid-batch, the query started again on
its checkpoint: every message once in the sink; an operator's offsets reset meanwhile loses to the checkpoint, loudly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from spark_helpers import ZKCONSUMER
from standalone_helpers import Driver, Production, ahead_of_the_sink, finish, sink_keys, wait_for, wait_gone

from harness.members import committed_offsets
from zkconsumer.spark.checkpoint import CheckpointLog, batch_ids
from zkconsumer.spark.offsets import decode_offsets

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]


def newest(folder: Path) -> int:
    """The highest batch id of a checkpoint log directory (-1: none yet)."""
    ids = batch_ids(os.listdir(folder)) if folder.exists() else []
    return ids[-1] if ids else -1


def reset(cluster, group: str, topic: str, partition: int, how: str) -> None:  # type: ignore[no-untyped-def]
    """`zkconsumer offsets reset ... --execute`, as an operator runs it while the query is down."""
    done = subprocess.run(
        [
            ZKCONSUMER,
            "offsets",
            "reset",
            "--zookeeper",
            cluster.zookeeper_connect,
            "-g",
            group,
            "-t",
            topic,
            how,
            "--partitions",
            str(partition),
            "--execute",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_killed_driver_resumes_from_its_checkpoint_exactly_once_and_the_checkpoint_beats_an_offsets_reset(
    standalone, wheel, cluster, zk, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=12)
    production = Production(cluster, topic)
    first = Driver(standalone, wheel, cluster, group_id, topic, tmp_path, log_name="driver-1.log")
    second: Driver | None = None
    offsets, commits = first.checkpoint / "offsets", first.checkpoint / "commits"
    ahead: list[str] = []
    try:
        wait_for(lambda: len(sink_keys(first.output)) > 0, 120, "no rows reached the sink", first)
        for _ in range(5):
            ahead += ahead_of_the_sink(zk, group_id, topic, first.output)
            time.sleep(1.0)
        # kill -9 the driver JVM while a batch runs: in the offset log, not yet in the commit log.
        wait_for(lambda: newest(offsets) > newest(commits), 60, "a batch in flight", first)
        os.kill(first.popen.pid, signal.SIGKILL)
        first.popen.wait(30)
        in_flight, done = newest(offsets), newest(commits)
        assert in_flight > done, "the kill landed between batches"
        # Its Python processes (the driver script, the planner holding the group member) end by themselves.
        wait_gone(first.popen.pid, 60, "the dead driver")
        deadline = time.monotonic() + 30  # and its member left (or its session expired)
        while zk.get_children(f"/consumers/{group_id}/ids") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not zk.get_children(f"/consumers/{group_id}/ids"), "the dead driver's member is still registered"
        ahead += ahead_of_the_sink(zk, group_id, topic, first.output)
        assert not ahead, f"ZooKeeper offsets ran ahead of the sink: {ahead[:3]}"

        # While the query is down an operator moves two partitions: one back, one forward.
        reset(cluster, group_id, topic, 0, "--to-earliest")
        reset(cluster, group_id, topic, 1, "--to-latest")
        operator = committed_offsets(zk, group_id, topic)
        resumes_at = decode_offsets(CheckpointLog(str(first.checkpoint)).entries(in_flight)[0])
        assert operator[0] == 0 and operator[1] > resumes_at[(topic, 1)]

        second = Driver(standalone, wheel, cluster, group_id, topic, tmp_path, log_name="driver-2.log")
        # Spark replays the batch in flight, then plans new ones: the first of those commits to ZooKeeper.
        wait_for(lambda: newest(commits) > in_flight, 120, "a batch planned by the restarted query", second)
        warned = [line for line in second.log_text().splitlines() if "the checkpoint and ZooKeeper disagree" in line]
        assert len(warned) == 1, second.log_tail()
        assert f"{topic}-0 checkpoint {resumes_at[(topic, 0)]}, ZooKeeper 0;" in warned[0]
        assert f"{topic}-1 checkpoint {resumes_at[(topic, 1)]}, ZooKeeper {operator[1]}" in warned[0]
        assert len(re.findall(rf"{topic}-\d+ checkpoint", warned[0])) == 2, "only the partitions the operator moved"
        finish(second, production, zk, group_id, topic, cluster, ahead)
    finally:
        production.stop()
        first.kill_all()
        if second is not None:
            second.kill_all()
