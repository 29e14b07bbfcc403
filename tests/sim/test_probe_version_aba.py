"""The one-round-trip window of a version-fenced write on an owner node (A-B-A), closed against Scala re-creators.

A blind delete (a stale Scala member, a tool) followed by another claimant's create between our
fresh read and our write used to pass our `check(owner, version)`: an owner node's version was 0
whoever created it (review of issue #42; issue 51, finding 7). Our claim now moves our nodes to
version 1 in the claim's own transaction, and a node a Scala member (or a tool) creates stays at
0, so the commit's fenced multi fails on it. Was a strict xfail until that change.
"""

from __future__ import annotations

from typing import Any

from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Schedule
from harness.simulation import committed
from harness.zkmodel import Fault
from zkconsumer.zookeeper import znodes

KEY = (TOPIC, 0)


def test_a_commit_never_lands_while_a_scala_member_holds_the_re_created_owner_node() -> None:
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    for _ in range(8):
        s.model.advance(ROUND_MS)
        s.model.deliver(m1.client)
        m1.renew_lease()
        m1.rebalance()
        m1.consume(50)
    s.log.produce(KEY, 8)
    m1.consume(50)
    owner = znodes.owner_path(GROUP, *KEY)
    scala = s.model.client("scala")
    scala.start()
    held_at_write: list[int] = []

    def hook(client: Any, op: str, path: str) -> Fault | None:
        # The commit's only transaction is its fenced write (the model names a multi by its first
        # operation, our fence node): between the commit's fresh read of the owner node and it, a
        # blind delete, and a Scala member's claim of the partition (version 0 again).
        if client is m1.client and op == "multi" and not held_at_write:
            s.admin.delete(owner)
            scala.create(owner, znodes.encode_owner(f"{GROUP}_scala-0"), ephemeral=True)
            held_at_write.append(s.model.stat(owner).ephemeralOwner)
        return None

    s.model.set_fault_hook(hook)
    m1.commit()
    assert held_at_write, "the window was never opened"
    assert committed(s.model, GROUP, KEY) is None, (
        f"our commit wrote {committed(s.model, GROUP, KEY)} while session {held_at_write[0]:#x} held the owner node"
    )
