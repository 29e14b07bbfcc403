"""Burrow, the lag monitor ops teams point at legacy groups, reads a live zkconsumer group's lag right."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.burrow import Burrow
from harness.members import Recorder, committed_offsets, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.testing.probes import ClusterStartError

pytestmark = [pytest.mark.cluster, pytest.mark.ecosystem]


@pytest.fixture(scope="module")
def burrow(cluster, tmp_path_factory) -> Iterator[Burrow]:  # type: ignore[no-untyped-def]
    try:
        monitor = Burrow(
            cluster.zookeeper_connect, cluster.bootstrap_servers, tmp_path_factory.mktemp("burrow")
        ).start()
    except ClusterStartError as exc:
        pytest.fail(f"Burrow did not start:\n{exc}", pytrace=False)
    yield monitor
    monitor.stop()


def partition_lags(answer: dict[str, Any], topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (committed offset Burrow last saw, its current lag), from a /lag answer."""
    partitions = (answer.get("status") or {}).get("partitions") or []
    return {
        p["partition"]: ((p.get("end") or {}).get("offset", -1), p["current_lag"])
        for p in partitions
        if p["topic"] == topic
    }


def wait_for_lag(
    burrow: Burrow, group: str, topic: str, want: dict[int, tuple[int, int]], timeout: float = 90.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    answer: dict[str, Any] = {}
    while time.monotonic() < deadline:
        answer = burrow.group_lag(group)
        if not answer.get("error") and partition_lags(answer, topic) == want:
            return answer
        time.sleep(0.5)
    raise AssertionError(
        f"Burrow never reported {want} for {group}; its last answer: {answer}\n"
        f"groups it knows: {burrow.groups()}\nlog tail:\n{burrow.log_tail()}"
    )


def test_burrow_reports_a_live_zkconsumer_groups_lag(burrow, cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=4)
    recorder = Recorder()
    first = produce(topic, 40, partitions=4)  # 10 per partition
    burrow.wait_for_topic(topic, 4)  # Burrow drops offsets of topics it does not know yet
    settings = {
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": group_id,
        "auto.commit.enable": False,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 200,
        "zookeeper.session.timeout.ms": 6000,
    }
    with ConsumerConnector(settings) as member:
        drain("m1", member.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(first), timeout=60)
        member.commit_offsets()
        assert committed_offsets(zk, group_id, topic) == {p: 10 for p in range(4)}
        wait_for_lag(burrow, group_id, topic, {p: (10, 0) for p in range(4)})

        # Three more into each of partitions 0 and 1: read but not committed, so they are lag.
        recorder.wait_for(keys_of(produce(topic, 6, partitions=2, start=40)), timeout=60)
        answer = wait_for_lag(burrow, group_id, topic, {0: (10, 3), 1: (10, 3), 2: (10, 0), 3: (10, 0)})
        assert answer["status"]["totallag"] == 6
        assert group_id in burrow.groups()

        member.commit_offsets()
        answer = wait_for_lag(burrow, group_id, topic, {0: (13, 0), 1: (13, 0), 2: (10, 0), 3: (10, 0)})
        assert answer["status"]["totallag"] == 0
    assert not recorder.errors
