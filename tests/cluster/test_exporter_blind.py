"""The exporter's log-end reads on a real broker with an offline partition: it blinds only itself, within the time bound."""

from __future__ import annotations

import json
import time

import pytest

from zkconsumer.exporter.log_ends import LogEnds
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]


def test_an_offline_partition_blinds_only_itself_within_the_bound(cluster, zk, topic_factory, produce) -> None:  # type: ignore[no-untyped-def]
    healthy = topic_factory(partitions=2)
    produce(healthy, 6)
    # A topic whose only replica is a broker that does not exist: never led, so the brokers'
    # metadata leaves it out (a dead leader's partition shows leader -1 there: the same path).
    offline = f"{healthy}-offline"
    zk.create(znodes.topic_path(offline), json.dumps({"version": 1, "partitions": {"0": [99]}}).encode())
    keys = [(healthy, 0), (healthy, 1), (offline, 0)]
    with LogEnds(cluster.bootstrap_servers, timeout_s=2.0) as ends:
        ends.read([(healthy, 0)])  # the first read connects
        began = time.monotonic()
        found = ends.read(keys)
        took = time.monotonic() - began
    assert sorted(found) == [(healthy, 0), (healthy, 1)] and sum(found.values()) == 6, found
    assert ends.missing == 1 and ends.reason is not None and f"{offline}-0" in ends.reason, ends.reason
    # not asked at all: the time bound is for a leader that does not answer, not for one that is not there
    assert took < 1.0, f"a read took {took:.1f} s ({ends.reason})"


def test_a_retired_group_expires_and_a_stopped_or_live_one_does_not(cluster, zk, topic_factory, group_id) -> None:  # type: ignore[no-untyped-def]
    """Burrow's expire-group: ZkConsumerGroupStopped fired forever for every retired group."""
    import re

    from zkconsumer.exporter.view import ClusterView
    from zkconsumer.zookeeper.client import ZkIO

    topic = topic_factory()
    retired, live = f"{group_id}-retired", f"{group_id}-live"
    for group in (retired, live):
        zk.create(znodes.offset_path(group, topic, 0), b"0", makepath=True)
    registration = json.dumps({"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"})
    zk.create(znodes.member_path(live, f"{live}_m"), registration.encode(), ephemeral=True, makepath=True)
    pattern = re.compile(re.escape(group_id) + ".*")
    week = 7 * 86_400.0
    now = ClusterView(ZkIO(zk, 10.0), None, window_s=10, interval_s=1, groups=pattern, expire_group_after_s=week)
    assert sorted(now.refresh().groups) == [live, retired]  # stopped a moment ago: not retired
    later = ClusterView(
        ZkIO(zk, 10.0), None, window_s=10, interval_s=1, groups=pattern, expire_group_after_s=week,
        clock=lambda: time.time() + week + 60,
    )  # fmt: skip
    state = later.refresh()
    assert sorted(state.groups) == [live] and state.expired == (retired,)
    never = ClusterView(
        ZkIO(zk, 10.0), None, window_s=10, interval_s=1, groups=pattern, expire_group_after_s=None,
        clock=lambda: time.time() + week + 60,
    )  # fmt: skip
    assert sorted(never.refresh().groups) == [live, retired]
