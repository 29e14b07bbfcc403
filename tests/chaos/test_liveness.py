"""Liveness without faults: every partition of a stream keeps flowing while production continues."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


def test_every_partition_flows_under_steady_production(chaos_env) -> None:  # type: ignore[no-untyped-def]
    # 8 partitions on one stream (queued.max.message.chunks=2): partitions whose chunks the full
    # queue refused must not wait behind fresh chunks of the others (they starved for the whole run).
    env = chaos_env(8)
    env.join(1)
    env.settle(dwell=6.0)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()
    where, latency = report.max_latency
    assert latency < 3.0, f"{where} waited {latency:.1f}s from ack to delivery\n{report.describe()}"
