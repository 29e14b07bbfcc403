"""Liveness without faults: every partition of a stream keeps flowing while production continues."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


@pytest.mark.xfail(strict=False, reason=(
    "ack-to-delivery latency: with more partitions per stream than queued.max.message.chunks (2), "
    "fetcher.Fetcher._route offers fresh chunks of non-held partitions before _retry_held re-offers the "
    "held ones (retried only at the top of the next loop), so held partitions starve until production "
    "stops (seen: 6 of 8 partitions waited ~9 s, the whole run)"))
def test_every_partition_flows_under_steady_production(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(8)
    env.join(1)
    env.settle(dwell=6.0)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()
    where, latency = report.max_latency
    assert latency < 2.0, f"{where} waited {latency:.1f}s from ack to delivery\n{report.describe()}"
