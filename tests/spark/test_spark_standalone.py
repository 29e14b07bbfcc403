"""The zkconsumer stream on a real Spark standalone cluster (a master, two 1-core workers), zkconsumer shipped
to the executors as a wheel: every message once in the sink, lag 0, and an executor killed mid-batch."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest
from spark_helpers import ROOT
from standalone_helpers import Driver, Production, finish, sink_keys, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]


def check_run(
    driver: Driver,
    production: Production,
    zk,
    group: str,
    topic: str,
    cluster,  # type: ignore[no-untyped-def]
    during: Any = None,
) -> None:
    """Produce for a while (calling `during` once rows arrive), then: every message once, lag 0."""
    wait_for(lambda: len(sink_keys(driver.output)) > 0, 120, "no rows reached the sink", driver)
    if during is not None:
        during()
    finish(driver, production, zk, group, topic, cluster, [])


def test_a_stream_on_the_cluster_writes_every_message_once_and_reaches_lag_zero(
    standalone, wheel, cluster, zk, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=12)
    production = Production(cluster, topic)
    driver = Driver(standalone, wheel, cluster, group_id, topic, tmp_path)
    try:
        assert driver.executor_modules and all(str(ROOT) not in p for p in driver.executor_modules), (
            f"executors imported the checkout, not the wheel: {driver.executor_modules}"
        )
        check_run(driver, production, zk, group_id, topic, cluster)
    finally:
        production.stop()
        driver.kill_all()


def test_an_executor_killed_mid_batch_loses_and_repeats_nothing(
    standalone, wheel, cluster, zk, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=12)
    production = Production(cluster, topic)
    driver = Driver(standalone, wheel, cluster, group_id, topic, tmp_path)
    killed: list[int] = []

    def kill_an_executor() -> None:
        """kill -9 an executor while its own log shows a task started and not ended, until the driver
        logs a task as lost. Killing blind (any executor, then waiting) was a flake on a loaded
        machine: an idle executor or a replacement not yet registered loses no task."""
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            busy = [pid for pid in standalone.executor_pids() if pid not in killed and standalone.tasks_running(pid)]
            if not busy:
                time.sleep(0.02)
                continue
            os.kill(busy[0], signal.SIGKILL)
            killed.append(busy[0])
            lost_by = time.monotonic() + 15
            while time.monotonic() < lost_by:
                if "Lost task" in driver.log_text():
                    return
                time.sleep(0.5)
        raise AssertionError(f"{len(killed)} executors killed, none while it ran a task:\n{driver.log_tail()}")

    try:
        check_run(driver, production, zk, group_id, topic, cluster, during=kill_an_executor)
    finally:
        production.stop()
        driver.kill_all()
    assert killed
