"""The simulation budget: 2,000 seeded fault schedules, each checked for the group's invariants."""

from __future__ import annotations

import logging

import pytest

from harness.sim_schedule import Schedule, run_many, shrink

BUDGET = 2000
CHUNK = 100


@pytest.mark.parametrize("first_seed", range(0, BUDGET, CHUNK))
def test_schedules_keep_every_invariant(first_seed: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)  # thousands of expected warnings under faults
    _, failures = run_many(first_seed, CHUNK)
    if failures:
        small = shrink(failures[0].seed)
        trace = "\n".join(small.trace)
        pytest.fail(
            f"{len(failures)} of {CHUNK} schedules broke an invariant; first: seed {failures[0].seed}: "
            f"{failures[0].violations[0]}\nshrunk trace ({len(small.trace)} lines):\n{trace}\n"
            f"replay: scripts/simulate.py --schedules 1 --seed {failures[0].seed}"
        )


def test_a_schedule_is_deterministic() -> None:
    one, two = Schedule(7).run(), Schedule(7).run()
    assert one.trace == two.trace and one.delivered == two.delivered and one.produced == two.produced > 0


def test_the_checker_catches_a_member_that_delivers_without_owning(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the delivery gate and the lease, a member cut off from ZooKeeper goes on delivering
    # partitions a peer may already own: the invariant must say so.
    from zkconsumer.consumer.delivery import DeliveryGate
    from zkconsumer.coordinator.lease import SessionLease

    monkeypatch.setattr(DeliveryGate, "close", lambda self: None)
    monkeypatch.setattr(SessionLease, "extend", lambda self, _at, heard=False: self.gate.renew(float("inf")))
    _, failures = run_many(0, 100)
    assert failures and any("without owning it" in v for f in failures for v in f.violations)
