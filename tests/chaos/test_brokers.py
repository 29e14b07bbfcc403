"""Broker kill -9 and restart under continuous production, in a 3-broker cluster with replication factor 3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness import chaos_scenarios as sc
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.probes import ClusterStartError

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


@pytest.fixture(scope="module")
def cluster3() -> Iterator[LocalCluster]:
    """Three brokers of their own (only this module pays for them)."""
    cluster = LocalCluster(
        brokers=3,
        chroot="/chaos3",
        broker_properties={"offsets.topic.replication.factor": "3", "default.replication.factor": "3"},
    )
    try:
        cluster.start()
    except ClusterStartError as exc:
        pytest.fail(f"3-broker cluster did not start:\n{exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def test_broker_kill_and_restart_with_replication(chaos_env, cluster3) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(6, on=cluster3, replication=3)
    env.join(2)
    env.join(1, "process")
    env.settle()
    sc.bounce_broker(env, 1)
    sc.bounce_broker(env, 0, down_s=1.0)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()
