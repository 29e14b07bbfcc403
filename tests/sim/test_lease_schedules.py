"""Seeded fault schedules with the lease's actors (host suspends, followers that lost their leader): the invariants hold.

With the renewal before issue #42 (a read the follower answers alone) some schedules break
"delivery only under ownership": 4 of the 2,500 seeds from 1000 on (2194, 2405, 2426, 2820 with the switch node read in each attempt), with the members built by
GroupMember (issue 51; 3 on the hand-built members of 945d8eb), found by running them all: the
actors draw differently whenever the harness changes, so the seeds are pinned here, not the rate. With the default renewal (sync, then the read) and with the check
renewal those same schedules keep every invariant.
"""

from __future__ import annotations

import logging

import pytest

from harness.sim_lease_schedule import run_lease_schedules

SEEDS = range(100, 200)
READ_RENEWAL_FAILS = (2194, 2405, 2426)


def test_lease_schedules_keep_every_invariant(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)
    failures = run_lease_schedules(SEEDS.start, len(SEEDS))
    assert [f.violations[0] for f in failures] == []


def test_with_the_read_renewal_these_seeds_deliver_without_owning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)
    for seed in READ_RENEWAL_FAILS:
        (failure,) = run_lease_schedules(seed, 1, renewal="read")
        assert "without owning it" in failure.violations[0]


@pytest.mark.parametrize("renewal", [None, "check"])
def test_the_leader_confirmed_renewals_keep_those_seeds_safe(
    renewal: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)
    for seed in READ_RENEWAL_FAILS:
        assert run_lease_schedules(seed, 1, renewal=renewal) == []
