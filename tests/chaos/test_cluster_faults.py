"""Cluster-side faults under continuous production: ZooKeeper restart, partition increase, topic re-creation."""

from __future__ import annotations

import time

import pytest

from harness import chaos_scenarios as sc
from harness.chaos_scenarios import ChaosSettings

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


def test_zookeeper_server_restart(chaos_env) -> None:  # type: ignore[no-untyped-def]
    # Connection loss with sessions that survive it (SUSPENDED, then CONNECTED): a 4 s session
    # can expire during a restart on a loaded 2-core machine, which is another scenario.
    env = chaos_env(8, settings=ChaosSettings(session_timeout_ms=10000))
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


def test_topic_recreated_while_a_member_pauses(chaos_env) -> None:  # type: ignore[no-untyped-def]
    # A member owns the topic across its deletion and re-creation (a short pause, well within its
    # session, makes it notice only afterwards). Its fetch position and consumed offsets belong to
    # the old topic; the new one outgrows them at once (a burst): resuming from them would silently
    # skip the new topic's first messages.
    env = chaos_env(
        topics={"chaos-main-pause": 2, "chaos-aux-pause": 2}, settings=ChaosSettings(deliver_timeout_s=15.0)
    )
    member = env.join(1, "process")[0]
    env.settle(dwell=3.0)
    sc.recreate_topic_during_pause(env, "chaos-aux-pause", member, burst=400)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_topic_recreated_while_the_group_was_away(chaos_env) -> None:  # type: ignore[no-untyped-def]
    # Deleting a topic leaves the group's committed offsets in /consumers/G/offsets (the brokers
    # never touch them). A member that joins once the new topic has more messages than those stale
    # offsets must not start from them: that would silently skip the new topic's first messages.
    env = chaos_env(topics={"chaos-away-recreate": 2}, settings=ChaosSettings(deliver_timeout_s=15.0))
    topic = "chaos-away-recreate"
    first = env.join(1)[0]
    env.settle(dwell=3.0)  # consumed and committed well past offset 0
    env.producer.pause(topic)
    assert not env.checker.wait_delivered(30, topic=topic)
    first.leave()  # commits where it stopped: the offsets go stale below
    sc.recreate_topic(env, topic, converge=False)
    time.sleep(4.0)  # the new topic outgrows the stale committed offsets
    sc.join_members(env, 1)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()
