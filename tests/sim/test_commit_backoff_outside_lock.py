"""Regressions (review of issue #42, finding L1): the rebalance lock, taken per step, against a commit's own retries.

Issue #42 made attempts take the rebalance lock one step at a time, never across a wait, so that a
commit waits for one step at most. A commit with retries (auto-commit: offsets.commit.max.retries,
5 by default) retries inside `OffsetStore.commit` with offsets.channel.backoff.ms (1 s) between
tries, inside `Commits._step`, which holds that lock: the rebalance then waits behind the commit's
back-offs. These tests run the rebalance the refused write triggered while the commit backs off.
"""

from __future__ import annotations

import threading
import types
from typing import Any

import pytest

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, committed
from zkconsumer.offsets import store

KEY = (TOPIC, 0)


def _settle(s: Schedule, members: list[SimMember], rounds: int = 8) -> None:
    s.calm_rounds(members, rounds)


def test_a_rebalance_runs_while_a_commit_backs_off_between_its_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed on 9a44e14 (finding L1). Someone deletes our fence node by hand. Auto-commit's first try
    is refused on it (SessionLost, retriable); the refusal triggers the rebalance that fences again
    (finding 4's fix). The commit then sleeps offsets.channel.backoff.ms before its next try, still
    holding the rebalance lock (Commits._step around OffsetStore.commit's tenacity loop): the
    rebalance cannot take its first step until every retry has been refused the same way. With the
    defaults that is 5 back-offs of 1 s, plus each try's ZooKeeper round trips (up to the session
    timeout each when ZooKeeper is slow): the re-fencing, a reconnect's re-read of our owner nodes
    and the resolution of a doubt all wait that long. Here the rebalance gets 2 s to take its step
    during the first back-off."""
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    _settle(s, [m1])
    s.log.produce(KEY, 6)
    _settle(s, [m1], 2)
    fence = m1.group.fence
    assert fence is not None
    s.admin.delete(fence.path)  # by hand, or a tool cleaning /consumers/<g>/zkconsumer
    s.model.deliver(m1.client)
    m1.pending.clear()

    rebalanced: list[bool] = []
    runs: list[threading.Thread] = []

    def sleep(seconds: float) -> None:  # the commit's back-off between two tries
        if runs:
            return
        run = threading.Thread(target=m1.rebalancer.synced_rebalance, args=("a fenced write was refused",), daemon=True)
        runs.append(run)
        run.start()
        run.join(2.0)
        rebalanced.append(not run.is_alive())

    monkeypatch.setattr(store, "time", types.SimpleNamespace(sleep=sleep, monotonic=store.time.monotonic))
    m1.offsets._backoff_s = 1.0  # offsets.channel.backoff.ms's default (the simulation's members use 0)
    m1.streams.mark_consumed()
    try:
        m1.rebalancer.commit(retries=2)  # auto-commit's call (offsets.commit.max.retries)
    except Exception as exc:  # noqa: BLE001 - refused every time while the lock keeps the rebalance out
        outcome: Any = exc
    else:
        outcome = "written"
    for run in runs:
        run.join(10.0)  # it goes on once the commit lets go: nothing runs behind the test's back
    assert rebalanced, "the commit never backed off: its first try was not refused"
    assert rebalanced == [True], (
        f"the rebalance could not take the rebalance lock during the commit's back-off (commit: {outcome!r})"
    )
    assert committed(s.model, GROUP, KEY) == 6  # the retry after the re-fencing went through
