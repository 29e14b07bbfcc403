"""Seeded fault schedules with the lease's actors (host suspends, followers that lost their leader): the invariants hold.

The same 100 seeds run with the renewal before issue #42 (a read the follower answers alone)
break "delivery only under ownership"; with the default renewal (sync, then the read) none does.
"""

from __future__ import annotations

import logging

import pytest

from harness.sim_lease_schedule import run_lease_schedules

SEEDS = range(100, 200)


def test_lease_schedules_keep_every_invariant(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)
    failures = run_lease_schedules(SEEDS.start, len(SEEDS))
    assert [f.violations[0] for f in failures] == []


def test_with_the_read_renewal_the_same_seeds_deliver_without_owning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)
    failures = run_lease_schedules(SEEDS.start, len(SEEDS), renewal="read")
    assert failures
    assert all("without owning it" in f.violations[0] for f in failures)
