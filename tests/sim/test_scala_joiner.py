"""A Scala joiner with its retry budget beside members that linger: the cap leaves it its last attempt, the watchdog's nudge recovers it if it gave up (issue 51, finding 1).

The joiner (harness/sim_scala_joiner.py) makes 4 attempts 2 s apart, then owns nothing until ids/
changes. Our members linger before they delete the owner nodes they hand over: at most 3 s, half
that budget. The planted bug is the linger before the fix (10 s, the old cap): the joiner gives up;
without the watchdog's nudge its share stays unowned past the recovery bound.
"""

from __future__ import annotations

import pytest

from harness.sim_actors_schedule import ActorsSchedule
from harness.sim_scala_joiner import ScalaJoiner
from harness.sim_schedule import GROUP, TOPIC, Options
from zkconsumer.coordinator.linger import ReleaseLinger

PARTITIONS = 6


def scala_joins(linger_s: float | None) -> ActorsSchedule:
    """Two members own every partition; a Scala joiner registers; then the quiet phase (with the
    watchdog's checks) runs. `linger_s`: force every member's linger to this (the planted bug)."""
    s = ActorsSchedule(0, Options(members=0, partitions=PARTITIONS))
    members = [s.add_member(), s.add_member()]
    s.calm_rounds(members, 8)
    assert {p for m in members for (_, p) in m.assignment.owned()} == set(range(PARTITIONS))
    for p in range(PARTITIONS):
        s.log.produce((TOPIC, p), 5)
    if linger_s is not None:
        for m in members:
            m.rebalancer.linger.floor_s = m.rebalancer.linger.max_s = linger_s
    s.scala = ScalaJoiner(s.model, "scala1", GROUP, TOPIC, s.log, s.deliveries)
    s.settle()
    return s


def test_the_capped_linger_leaves_the_joiner_its_last_attempt() -> None:
    s = scala_joins(None)
    assert s.result.violations == []
    assert s.scala is not None and s.scala.gave_up == 0 and s.scala.owned


def test_a_linger_past_the_budget_strands_the_joiner_without_the_nudge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ReleaseLinger, "follow_up", lambda self, owned: None)
    s = scala_joins(10.0)
    assert s.scala is not None and s.scala.gave_up >= 1
    assert s.result.violations and "unowned for" in s.result.violations[0] and "gave up" in s.result.violations[0]


def test_the_watchdog_nudge_recovers_a_joiner_that_gave_up() -> None:
    s = scala_joins(10.0)
    assert s.scala is not None and s.scala.gave_up >= 1
    assert s.result.violations == [] and s.scala.owned
