"""Regression (review of issue #42): seeded schedules with more meddling than sim_schedule draws, and a Scala claimant.

`Schedule` draws its meddling actors (the stale Scala member, the operator) in about 3 % of the
steps, and after a blind delete nobody but our own members ever creates the node again. Here a
third of the steps meddle, and the stale Scala member, after deleting what its registry held, also
claims some of those partitions in its own session, as the Scala member it is would for its new
share, and lets them go at a later step (its next rebalance). Its nodes are nobody's to account for
(invariant 3 leaves its session out) and it lets go of everything before the quiet phase. Every
other invariant is Schedule's, unchanged: above all 6, no deliverable partition whose owner node
is not ours, for a member that has heard everything.
"""

from __future__ import annotations

import logging

import pytest

from harness.sim_schedule import GROUP, TOPIC, Options, Result, Schedule
from zkconsumer.zookeeper import znodes

MEDDLE_RATE = 0.33


class MeddlingSchedule(Schedule):
    def __init__(self, seed: int, options: Options | None = None) -> None:
        super().__init__(seed, options)
        self.scala = self.model.client("scala")
        self.scala.start()
        self.scala_nodes: list[str] = []

    def step(self) -> None:
        if self.rng.random() >= MEDDLE_RATE:
            super().step()
            return
        action = self.rng.choice(["operator", "scala_stale", "scala_stale", "scala_lets_go"])
        if action == "operator":
            self.operator()
        elif action == "scala_stale":
            self.scala_stale()
        else:
            self.scala_lets_go()

    def scala_stale(self) -> None:
        registry = list(self.stale_registry)
        super().scala_stale()
        if registry and not self.stale_registry:  # it acted: now it claims part of what it saw
            for path in registry:
                if not self.model.exists(path) and self.rng.random() < 0.5:
                    thread = f"{GROUP}_scala-0"
                    self._quiet(lambda p=path: self.scala.create(p, znodes.encode_owner(thread), ephemeral=True))
                    self.scala_nodes.append(path)
                    self.note(f"Scala member claimed {path}")
            self._notify()

    def scala_lets_go(self) -> None:
        for path in self.scala_nodes:
            if self.model.exists(path) and self.model.stat(path).ephemeralOwner == self.scala._session.id:
                self._quiet(lambda p=path: self.scala.delete(p))
        if self.scala_nodes:
            self.note("Scala member let go of " + ", ".join(self.scala_nodes))
        self.scala_nodes = []
        self._notify()

    def _quiet(self, op: object) -> None:
        """The Scala actor's own requests get no faults (like the admin's)."""
        faulty, self.faulty = self.faulty, False
        try:
            op()  # type: ignore[operator]
        finally:
            self.faulty = faulty

    def check_accounted(self) -> None:
        sid = self.scala._session.id
        if any(owner == sid for _, owner in self._owner_nodes().values()):
            saved = self.model.live_sessions
            self.model.live_sessions = lambda: {k: v for k, v in saved().items() if k != sid}  # type: ignore[method-assign]
            try:
                others = {p: n for p, n in self._owner_nodes().items() if n[1] != sid}
                self._check_accounted_for(others)
            finally:
                self.model.live_sessions = saved  # type: ignore[method-assign]
            return
        super().check_accounted()

    def _owner_nodes(self) -> dict[int, tuple[str, int]]:
        from harness.simulation import owner_nodes

        return owner_nodes(self.model, GROUP, TOPIC)

    def _check_accounted_for(self, nodes: dict[int, tuple[str, int]]) -> None:
        sessions = self.model.live_sessions()
        members = {m.client.name: m for m in self.members}
        for p, (thread, owner) in sorted(nodes.items()):
            member = members.get(sessions.get(owner, ""))
            if member is None:
                self.violation(f"owner node {TOPIC}-{p} ({thread}) belongs to session {owner:#x} of no member")
            elif (TOPIC, p) not in member.tracked():
                self.violation(f"owner node {TOPIC}-{p} ({thread}) of {member.name} is not accounted for")

    def settle(self) -> None:
        self.scala_lets_go()
        super().settle()


def run_meddling(first_seed: int, count: int) -> list[Result]:
    return [r for seed in range(first_seed, first_seed + count) if (r := MeddlingSchedule(seed).run()).violations]


@pytest.mark.parametrize("first_seed", [5000, 5100])
def test_heavy_meddling_with_a_scala_claimant_keeps_every_invariant(
    first_seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)
    failures = run_meddling(first_seed, 100)
    assert not failures, "\n".join(f.violations[0] + "\n  " + "\n  ".join(f.trace[-25:]) for f in failures[:2])
