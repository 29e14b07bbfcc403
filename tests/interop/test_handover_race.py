"""The read-offsets-then-claim race at a hand-over, seen with real Scala joiners, pinned down for ours.

A Scala joiner reads the committed offsets of its new partitions (step 7) before it creates
their owner nodes (step 9); zkconsumer used to do the same. If the old owner commits and
releases in between, the joiner's claim succeeds but it starts from the stale offset and
re-delivers everything since the previous commit. test_mixed_group's join test saw a Scala
joiner do exactly that (3 of about 26 joins, all on the partition zkconsumer handed over: it
commits 55-255 ms after the joiner registers, a Scala member 20-130 ms; the joiner claims at
200-300 ms).

Scala joiners cannot be changed; zkconsumer joiners read the offsets only after a successful
claim (Coordinator._attempt), and since the old owner always commits before it releases, they
never see a stale value. This test forces the interleaving that bit the Scala joiner.
"""

from __future__ import annotations

import time

import pytest

from zkconsumer.coordinator.subscription import StaticSubscription, encode_registration
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def test_joiner_starts_at_the_offset_committed_just_before_the_release(
    mixed, cluster, topic_factory, produce, monkeypatch
) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 60, partitions=2)  # 30 per partition
    g = mixed.group
    old_owner = cluster.zk_client()  # plays a member that owns both partitions and read up to 20
    try:
        stamp = int(time.time() * 1000)
        old_owner.create(
            znodes.member_path(g, f"{g}_a-old"),
            ephemeral=True,
            makepath=True,
            value=encode_registration(StaticSubscription.of({topic: 1}), stamp),
        )
        for p in (0, 1):
            old_owner.create(znodes.owner_path(g, topic, p), f"{g}_a-old-0".encode(), ephemeral=True, makepath=True)
            old_owner.create(znodes.offset_path(g, topic, p), b"5", makepath=True)  # an earlier commit

        handed_over: list[bool] = []
        real_claim = GroupZk.claim

        def claim(self: GroupZk, owners, **kwargs):  # type: ignore[no-untyped-def]
            # The old owner finishes its rebalance (commit 20, then release) just as we claim.
            if (topic, 1) in owners and not handed_over:
                old_owner.set(znodes.offset_path(g, topic, 1), b"20")
                old_owner.delete(znodes.owner_path(g, topic, 1))
                handed_over.append(True)
            return real_claim(self, owners, **kwargs)

        monkeypatch.setattr(GroupZk, "claim", claim)
        mixed.add_py("b-py", {topic: 1})  # range: a-old-0 keeps 0, b-py-0 takes 1
        mixed.wait_for({(topic, 1, o) for o in range(20, 30)}, timeout=30)
        assert handed_over
        assert min(o for _, p, o in mixed.deliveries("b-py") if p == 1) == 20, "re-delivered from a stale offset"
    finally:
        old_owner.stop()
        old_owner.close()
