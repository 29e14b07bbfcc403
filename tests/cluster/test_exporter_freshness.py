"""A commit shows in the exporter's /metrics and on its page within a second, long before its next tick, for one ZooKeeper request."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from harness.chromium import Chromium
from zkconsumer.exporter.exporter import Exporter
from zkconsumer.exporter.log_ends import LogEnds
from zkconsumer.testing.probes import ClusterStartError
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]
INTERVAL_S = 30.0  # a tick far off: only the commit's watch can show it in time


def _committed_0(port: int, group: str, topic: str) -> str | None:
    """Partition 0's committed offset line in /metrics (its lag would move with a late producer retry)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    head = f'zkconsumer_partition_committed_offset{{group="{group}",topic="{topic}",partition="0"}} '
    return next((line[len(head) :] for line in text.splitlines() if line.startswith(head)), None)


def test_a_commit_shows_before_the_next_tick_for_the_one_node_it_changed(
    cluster, zk, topic_factory, produce, group_id, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    topic = topic_factory(partitions=2)
    produce(topic, 20)  # 10 a partition
    for partition in (0, 1):
        zk.create(znodes.offset_path(group_id, topic, partition), b"2", makepath=True)
    other = f"{group_id}-other"  # no commit: left as the tick sampled it
    zk.create(znodes.offset_path(other, topic, 0), b"1", makepath=True)
    client = cluster.zk_client()
    with LogEnds(cluster.bootstrap_servers, timeout_s=2.0) as ends:
        exporter = Exporter(
            client, ends, host="127.0.0.1", port=0, interval_s=INTERVAL_S, window_s=300.0,
            groups=re.compile(re.escape(group_id) + ".*"),
        )  # fmt: skip
        exporter.start()
        try:
            first = exporter.wait_for_refresh(0, 30.0)
            assert _committed_0(exporter.port, group_id, topic) == "2.0"
            requests, samples = exporter.view.requests, len(first.groups[group_id].window.times)
            zk.set(znodes.offset_path(group_id, topic, 0), b"7")
            committed = time.monotonic()
            shown = None
            while time.monotonic() - committed < 5.0 and shown is None:
                if _committed_0(exporter.port, group_id, topic) == "7.0":
                    shown = time.monotonic() - committed
                time.sleep(0.02)
            assert shown is not None and shown < 2.0, f"the commit showed after {shown} s (the tick: {INTERVAL_S:g} s)"
            state = exporter.view.state
            # the sample between ticks took the newest one's place: the window keeps one per interval
            assert len(state.groups[group_id].window.times) == samples
            assert state.groups[group_id].window.times[-1] > first.at_ms
            assert exporter.view.requests - requests == 1  # the offset node that changed, nothing else
            assert state.groups[other] is first.groups[other]  # only the group whose node changed was sampled
            _check_the_page(exporter.port, zk, znodes.offset_path(group_id, topic, 1), group_id, tmp_path)
        finally:
            assert exporter.stop(10)
            client.stop()
            client.close()


def _check_the_page(port: int, zk, path: str, group: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The group's page, open in Chromium, shows a commit within a second or two, not at the tick."""
    try:
        browser = Chromium(tmp_path / "chromium").start()
    except ClusterStartError as exc:
        pytest.fail(f"Chromium did not start:\n{exc}", pytrace=False)
    # partition 1's committed offset as the page has it (its lag would move with a late producer retry)
    committed_1 = (
        "window.zkPage && window.zkPage.overview && window.zkPage.overview.group === " + json.dumps(group)
        + " && window.zkPage.overview.topics[0].committed[window.zkPage.overview.topics[0].partition.indexOf(1)]"
    )  # fmt: skip
    try:
        with browser.page() as page:
            page.navigate(f"http://127.0.0.1:{port}/#group={group}")
            began = time.monotonic()
            while page.evaluate(committed_1) != 2:
                assert time.monotonic() - began < 30, f"the page never showed offset 2 ({page.evaluate(committed_1)})"
                time.sleep(0.1)
            zk.set(path, b"8")
            committed = time.monotonic()
            while (seen := page.evaluate(committed_1)) != 8:
                assert time.monotonic() - committed < 5.0, f"the page still shows offset {seen} 5 s after the commit"
                time.sleep(0.05)
            took = time.monotonic() - committed
            assert took < 2.0, f"the page showed the commit after {took:.2f} s (the tick: {INTERVAL_S:g} s)"
    finally:
        browser.stop()


def test_a_commit_made_while_the_connection_was_down_shows_after_the_reconnect(cluster, zk, group_id) -> None:  # type: ignore[no-untyped-def]
    """The exporter's ZooKeeper link drops (the same session comes back): kazoo fires every watch
    with no event and re-arms none, so the cache must not keep what it read before; a commit made
    while the link was down shows within one interval of the reconnect."""
    from zkconsumer.testing.probes import free_port
    from zkconsumer.testing.relay import RelayProcess
    from zkconsumer.zookeeper.client import close_quietly, connect

    hosts, slash, chroot = cluster.zookeeper_connect.partition("/")
    port = free_port()

    def relay() -> RelayProcess:  # the exporter's only way to ZooKeeper: stopping it drops the link
        return RelayProcess(list, port, target=hosts.split(",")[0], name="zk-relay").start()

    link = relay()
    path = znodes.offset_path(group_id, "gone-topic", 0)
    zk.create(path, b"3", makepath=True)
    client = connect(f"127.0.0.1:{port}{slash}{chroot}", session_timeout_s=30.0, connect_timeout_s=10.0)
    interval_s = 2.0
    exporter = Exporter(
        client, None, host="127.0.0.1", port=0, interval_s=interval_s, window_s=60.0,
        groups=re.compile(re.escape(group_id)),
    )  # fmt: skip
    exporter.start()
    try:
        state = exporter.wait_for_refresh(0, 30.0)
        assert state.groups[group_id].last.sample.partitions[("gone-topic", 0)].committed == 3
        session = client.client_id
        link.stop()
        began = time.monotonic()
        while exporter.health().connected:
            assert time.monotonic() - began < 10, "the exporter never noticed the link drop"
            time.sleep(0.05)
        zk.set(path, b"8")  # while the exporter cannot see
        time.sleep(1.0)
        link = relay()
        began = time.monotonic()
        while not exporter.health().connected:
            assert time.monotonic() - began < 20, "the exporter never reconnected"
            time.sleep(0.05)
        assert client.client_id == session  # the same session: no LOST, only the watches gone
        reconnected = time.monotonic()
        while (
            exporter.wait_for_refresh(0, 10.0).groups[group_id].last.sample.partitions[("gone-topic", 0)].committed != 8
        ):
            took = time.monotonic() - reconnected
            assert took < 2 * interval_s + 1, f"the commit made while disconnected not shown {took:.1f} s later"
            time.sleep(0.05)
    finally:
        assert exporter.stop(10)
        link.stop()
        close_quietly(client, 10)
