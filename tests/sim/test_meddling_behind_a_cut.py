"""The meddlers stay out of the window the design leaves to the lease: a node held behind a cut server."""

from __future__ import annotations

from harness.sim_follower import LostFollower
from harness.sim_lease_schedule import LeaseSchedule
from harness.sim_lease_world import join, run, world
from harness.sim_schedule import GROUP
from zkconsumer.zookeeper import znodes

SESSION_MS = 6000


def test_a_node_held_behind_a_server_that_lost_its_leader_is_not_meddled_with() -> None:
    # Seed 16235 of `scripts/simulate.py --actors all` on 114113d: an operator deleted an owner node
    # whose holder sat behind a follower that had lost its leader; the holder cannot hear of it
    # (docs/design.md, "A member hears that someone else deleted ..."), which the actors are to avoid.
    s = world(SESSION_MS, 4, kind=LeaseSchedule)
    assert isinstance(s, LeaseSchedule)
    m1, m2 = join(s, "m1", SESSION_MS), join(s, "m2", SESSION_MS)
    run(s, [m1, m2], 8)
    held = {m.name: [znodes.owner_path(GROUP, *key) for key in m.assignment.owned()] for m in (m1, m2)}
    assert held["m1"] and held["m2"]
    assert all(s._may_hit(path) for paths in held.values() for path in paths)
    follower = LostFollower(s.model, m1.client)
    follower.cut()
    s.cut[m1.name] = (follower, s.model.now_ms)
    assert not any(s._may_hit(path) for path in held["m1"])
    assert all(s._may_hit(path) for path in held["m2"])
