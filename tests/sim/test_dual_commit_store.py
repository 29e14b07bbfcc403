"""Dual commit against the in-memory Kafka offset store: no write rewinds a partition's owner (issue 51, finding 3).

m1 commits t-0 to ZooKeeper and Kafka; its server loses its leader (reads answered, writes
and syncs not), the leader expires its session, m2 claims t-0, consumes 10 more and commits to both stores. m1,
idle, commits again. The fix sends Kafka only what moved since this ownership's last Kafka write,
under a holding lease and for owner nodes that are ours; the planted bug is the commit before it:
the full map, ungated (every position counts as moved, no vouching).
"""

from __future__ import annotations

import pytest

from harness.sim_follower import LostFollower
from harness.sim_kafka_offsets import KafkaOffsetStore
from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Schedule
from harness.simulation import SimMember
from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.offsets.store import OffsetStore

KEY = (TOPIC, 0)


def dual(m: SimMember, kafka: KafkaOffsetStore) -> None:
    m.offsets.use_zookeeper = m.offsets.use_kafka = True  # offsets.storage=kafka, dual.commit.enabled
    m.fetcher.consumer = kafka.view(m)  # type: ignore[assignment]


def stale_member_commits() -> tuple[Schedule, KafkaOffsetStore, int, int]:
    """(schedule, store, m1's Kafka offset, m2's)."""
    s = Schedule(0, Options(members=0, partitions=1, session_timeout_ms=4000))
    kafka = KafkaOffsetStore(GROUP, s.violation)
    m1 = s.add_member()
    dual(m1, kafka)
    s.calm_rounds([m1], 8)
    s.log.produce(KEY, 10)
    s.calm_rounds([m1], 2)
    m1.commit()
    ours = kafka.offsets[KEY]
    assert ours > 0
    follower = LostFollower(s.model, m1.client)
    follower.cut()
    for _ in range(20):  # 5 s: renewals go unanswered, the leader expires m1's session
        s.model.advance(ROUND_MS)
        m1.renew_lease()
    assert m1.group.session not in s.model.live_sessions()
    m2 = s.add_member()
    dual(m2, kafka)
    s.log.produce(KEY, 10)
    s.calm_rounds([m2], 8)
    m2.commit()
    theirs = kafka.offsets[KEY]
    assert theirs > ours, "m2 did not take over and commit"
    m1.commit()  # idle: its position is where it was
    return s, kafka, ours, theirs


def test_a_stale_member_s_dual_commit_leaves_the_owner_s_kafka_offset() -> None:
    s, kafka, _ours, theirs = stale_member_commits()
    assert kafka.offsets[KEY] == theirs and s.result.violations == []


def test_the_full_ungated_map_rewinds_the_owner_and_the_store_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # The planted bug: every position counts as moved (no Kafka checkpoint), nothing vouched for.
    monkeypatch.setattr(PartitionTopicInfo, "kafka_offset", property(lambda self: -1, lambda self, value: None))
    monkeypatch.setattr(OffsetStore, "_vouched", lambda self, pairs, vouch, *, fenced_now: pairs)
    s, kafka, ours, theirs = stale_member_commits()
    assert kafka.offsets[KEY] == ours
    assert s.result.violations and f"rewound Kafka's offset of t-0 from {theirs} to {ours}" in s.result.violations[0]
