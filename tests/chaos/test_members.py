"""Member faults under continuous production: joins, leaves, kill -9, bursts, expiry, stalls, garbage peers."""

from __future__ import annotations

import pytest

from harness import chaos_scenarios as sc

pytestmark = [pytest.mark.cluster, pytest.mark.chaos]


def test_joins_and_clean_leaves(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(8)
    env.join(2)
    env.settle()
    sc.join_members(env, 1)
    sc.join_members(env, 1, "process")
    sc.leave_member(env)
    sc.leave_member(env, env.live[-1])
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_kill_minus_9_of_members(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(8)
    env.join(1)
    victims = env.join(2, "process")
    env.settle()
    sc.kill_member(env, victims[0])
    sc.kill_member(env, victims[1])
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_ten_members_join_at_once(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(12)
    env.join(2)
    env.settle()
    sc.join_members(env, 10)
    for member in env.live[2:7]:
        sc.leave_member(env, member)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_session_expiry_of_a_member(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(8)
    env.join(2)
    env.join(1, "process")
    env.settle()
    sc.expire_member(env, env.live[0])
    sc.expire_member(env, env.live[2])
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_member_stalled_longer_than_its_session(chaos_env) -> None:  # type: ignore[no-untyped-def]
    # Woken after its session expired, the member must hand out nothing it queued before the
    # freeze (the delivery gate's lease), while the member that took its partitions delivers them.
    env = chaos_env(8)
    env.join(1)
    stalled = env.join(1, "process")[0]
    env.settle()
    sc.stall_member(env, stalled)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_zookeeper_link_of_a_member_cut(chaos_env) -> None:  # type: ignore[no-untyped-def]
    # Alive and fetching, but deaf to ZooKeeper past its session timeout: it must stop handing out
    # messages before the group gives its partitions to the other member (split brain otherwise).
    env = chaos_env(8)
    env.join(1)
    cut_off = env.join(1, proxied=True)[0]
    env.settle()
    sc.cut_member(env, cut_off)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()


def test_garbled_peer_registration(chaos_env) -> None:  # type: ignore[no-untyped-def]
    env = chaos_env(8)
    env.join(2)
    env.settle()
    sc.garble_peer(env)
    sc.join_members(env, 1)
    sc.leave_member(env)
    report = env.finish()
    print(report.describe())
    assert report.ok, report.describe()
