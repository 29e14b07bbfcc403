"""Cluster-side faults under continuous production: ZooKeeper restart, partition increase, topic re-creation."""
from __future__ import annotations

import pytest

from zkconsumer.testing import chaos_scenarios as sc

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


def test_zookeeper_server_restart(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(8)
    env.join(2)
    env.join(1, "process")
    env.settle()
    sc.restart_zookeeper(env)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_partition_count_increase(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(4)
    env.join(2)
    env.settle()
    topic = next(iter(env.topics))
    sc.add_partitions(env, topic, 2)
    sc.add_partitions(env, topic, 3)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_topic_deleted_and_created_again(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(topics={"chaos-main-recreate": 4, "chaos-aux-recreate": 4})
    env.join(2)
    env.settle()
    sc.recreate_topic(env, "chaos-aux-recreate")
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()
