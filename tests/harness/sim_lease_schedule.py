"""Seeded fault schedules with the lease's two actors besides the usual faults: a host suspend and a follower that lost its leader.

`LeaseSchedule` is a `Schedule` (sim_schedule) whose steps sometimes, instead of an ordinary
step, suspend a member's host past (or short of) its session, or put a member behind a follower
cut from its leader for syncLimit × tickTime. The invariants and the quiet phase are Schedule's.
The simulated members read the model's clock, which counts a suspend as CLOCK_BOOTTIME does
(tests/sim/test_host_suspend.py covers the clock itself).
"""

from __future__ import annotations

from harness.sim_follower import LostFollower
from harness.sim_host import SimHost
from harness.sim_schedule import Options, Result, Schedule
from harness.simulation import SimMember

SYNC_LIMIT_MS = 3000  # syncLimit × tickTime of the simulated ensemble
ACTOR_RATE = 0.04  # per step
# What a member behind a lost follower may still do: its own steps, not its link's (the actor owns it).
_WHILE_CUT = ("deliver", "rebalance", "consume", "commit", "lease", "health")


class LeaseSchedule(Schedule):
    """One seeded run with the lease actors; `renewal` forces Membership's renewal (None: the default)."""

    def __init__(self, seed: int, options: Options | None = None, *, renewal: str | None = None) -> None:
        super().__init__(seed, options)
        self.renewal = renewal
        self.cut: dict[str, tuple[LostFollower, int]] = {}  # member name -> (its follower, cut at ms)

    def add_member(self, *, incremental: bool = True, transaction_max_bytes: int = 1 << 19) -> SimMember:
        member = super().add_member(incremental=incremental, transaction_max_bytes=transaction_max_bytes)
        if self.renewal is not None:
            member.membership.lease.renewal = self.renewal
        return member

    def step(self) -> None:
        self._followers_give_up()
        for name in list(self.cut):
            # A real member renews every quarter session on its own thread and its application keeps
            # iterating: a member behind the follower does both here more often than a random step would.
            member = next(m for m in self.members if m.name == name)
            if member.alive and self.rng.random() < 0.5:
                member.renew_lease()
            if member.alive and self.rng.random() < 0.5:
                member.consume(3)
        if self.rng.random() >= ACTOR_RATE:
            super().step()
            return
        free = [m for m in self.live() if not m.frozen and m.name not in self.cut and m.client.connected]
        if not free:
            return
        member = self.rng.choice(free)
        if self.rng.random() < 0.5:
            self._suspend(member)
        else:
            follower = LostFollower(self.model, member.client)
            follower.cut()
            self.cut[member.name] = (follower, self.model.now_ms)
            self.note(f"{member.name}'s server lost its leader")

    def _may_hit(self, path: str) -> bool:
        """Not a node held behind a cut server: that member hears nothing the majority does, the window
        docs/design.md leaves to the lease and the commit's fresh read, which the meddlers stay out of."""
        if not super()._may_hit(path):
            return False
        owner = self.model.stat(path).ephemeralOwner
        return not any(
            m.name in self.cut and m.client._session is not None and m.client._session.id == owner for m in self.live()
        )

    def member_action(self, action: str, m: SimMember) -> None:
        if m.name in self.cut and action not in _WHILE_CUT:
            return
        super().member_action(action, m)

    def pause(self, member: SimMember, where: str) -> None:
        if member.name not in self.cut:  # no expiry or reconnect behind the follower's back
            super().pause(member, where)

    def settle(self) -> None:
        self._followers_give_up(everyone=True)
        super().settle()

    def _suspend(self, member: SimMember) -> None:
        host = SimHost(self.model)
        ms = self.rng.choice([1000, 3000, 6000, 9000])
        self.note(f"{member.name}'s host sleeps {ms} ms")
        host.suspend(member, ms)
        host.wake(member)
        member.consume(self.rng.randint(1, 6))  # its iterators may run before kazoo reads the EOF
        if member.group.session not in self.model.live_sessions() and member.client.connected:
            host.eof(member)

    def _followers_give_up(self, *, everyone: bool = False) -> None:
        for name, (follower, at) in list(self.cut.items()):
            if everyone or self.model.now_ms >= at + SYNC_LIMIT_MS:
                follower.give_up()
                del self.cut[name]
                self.note(f"{name}'s follower gave its leader up and dropped it")


def run_lease_schedules(first_seed: int, count: int, *, renewal: str | None = None) -> list[Result]:
    """The failing results of `count` LeaseSchedules from `first_seed`."""
    failures = []
    for seed in range(first_seed, first_seed + count):
        result = LeaseSchedule(seed, renewal=renewal).run()
        if result.violations:
            failures.append(result)
    return failures
