"""Regression (review of issue #42, finding L1) on the real cluster: the rebalance a refused fence triggers waits out auto-commit's retries.

The simulation's test is tests/sim/test_commit_backoff_outside_lock.py (finding L1): `Commits.commit` runs
OffsetStore's retries, with offsets.channel.backoff.ms between them, inside the rebalance lock. Here
a real member with the default retry settings (offsets.commit.max.retries 5, back-off 1 s) has its
fence node deleted by hand; its next auto-commit is refused, which triggers the rebalance that fences
again (finding 4's fix), and that rebalance cannot take the lock until every retry was refused.
"""

from __future__ import annotations

import time

import pytest

from harness import members
from harness.members import Recorder, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster


def test_a_fence_deleted_by_hand_is_made_again_without_waiting_out_the_commit_retries(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    """Failed on 9a44e14 (finding L1): about 5 s (the five back-offs) instead of about one commit interval."""
    topic = topic_factory(partitions=2)
    first = produce(topic, 20, partitions=2)
    conn = ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group_id,
            **members.FAST,
            "consumer.id": "c1",
            "auto.commit.enable": True,
            "auto.commit.interval.ms": 500,
            "offsets.commit.max.retries": 5,  # the defaults, written out
            "offsets.channel.backoff.ms": 1000,
        }
    )
    try:
        streams = conn.create_message_streams({topic: 1})
        recorder = Recorder()
        drain("c1", streams[topic], recorder)
        recorder.wait_for(keys_of(first), timeout=60)
        time.sleep(1.5)  # an auto-commit writes what was delivered
        old = conn.group.fence
        assert old is not None and zk.exists(old.path) is not None
        zk.delete(old.path)  # by hand, or a tool cleaning /consumers/<g>/zkconsumer
        more = produce(topic, 20, partitions=2)
        recorder.wait_for(keys_of(more), timeout=60)
        delivered = time.monotonic()  # the next auto-commit (within 0.5 s) has progress: it is refused
        fenced_again = None
        while time.monotonic() - delivered < 30:
            fence = conn.group.fence
            if fence is not None and fence.path != old.path and zk.exists(fence.path) is not None:
                fenced_again = time.monotonic() - delivered
                break
            time.sleep(0.05)
        assert fenced_again is not None, "never fenced again"
        assert fenced_again < 3.0, (
            f"fenced again {fenced_again:.1f} s after the progress to commit was delivered: the rebalance "
            "waited for the refused commit's retries and back-offs, which held the rebalance lock"
        )
        sessions = zk.get_children(znodes.zkconsumer_sessions_path(group_id))
        assert any(conn.consumer_id in child for child in sessions)
    finally:
        conn.shutdown(timeout=10)
