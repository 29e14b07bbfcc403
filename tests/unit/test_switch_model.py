"""The live switch's protocol, both ways, model-checked (tests/harness/switch_model.py; docs/live-switch.md)."""

from __future__ import annotations

import functools
import time
from dataclasses import replace

import pytest

from harness.switch_model import BUGS, Config
from harness.switch_model_check import Result, explore

# Each fault in its own small world (two members, one message per partition): together they multiply
# the states past what the suite can afford. `turns` is how often the operator turns the command round
# (--to zookeeper, then --to broker again, ...). The worlds the suite cannot afford are in
# docs/live-switch.md ("The model"), with their state counts, to run by hand after a change.
WORLDS = {
    "there-and-back": Config(partitions=2, turns=1),
    "kill": Config(partitions=1, turns=1, kills=1),
    "session-expiry": Config(partitions=1, turns=2, expiries=1),
    "command-killed-and-rerun": Config(partitions=1, turns=2, command_kills=1),
}
SMALL = Config(partitions=1, turns=2)


@functools.cache
def explored(config: Config) -> Result:
    began = time.perf_counter()
    result = explore(config, max_states=200_000)
    print(f"{config}: {result.states} states, {result.transitions} transitions, {time.perf_counter() - began:.1f} s")
    return result


@pytest.mark.parametrize("world", list(WORLDS))
def test_the_protocol_keeps_every_invariant(world: str) -> None:
    result = explored(WORLDS[world])
    assert result.violations == []
    # both ways completed somewhere, after faults and turns: the model explores what it should
    assert result.settled["broker"] > 0 and result.settled["zookeeper"] > 0, result.settled
    assert result.states > 2000


def test_the_way_back_is_explored_from_every_step() -> None:
    """The command is turned back at each step, `broker` included, and the way back completes; turned
    forward again after a way back, the way there completes too (states hold no history: a completed
    switch reached by a long journey is the state a short one reaches, so these are checked by step)."""
    result = explored(SMALL)
    assert result.violations == []  # from every state reached, the switch completes the way the command points
    assert {step for step, direction, turns in result.reached if direction == "zookeeper" and turns == 1} == {
        "zookeeper",
        "joining",
        "handover",
        "broker",
    }
    assert {("broker", 0), ("zookeeper", 1), ("broker", 2)} <= result.completed
    there = explored(replace(SMALL, turns=0))
    assert there.completed == {("broker", 0)}


# The last step off ZooKeeper, as docs/live-switch.md describes it: at `broker`, restart the members one
# at a time with zkconsumer.coordination=broker (switch_model_restart). One restart: the seat's
# revocation hold keeps the broker-coordinated member out until the owner node is released, and a release
# carries ZooKeeper's offset to Kafka first. Two restarts: the second member's shutdown runs during the
# first one's rebalance, its seat not in the current generation; it carries its final offsets to Kafka,
# trying again, before its owner nodes go (planted bug `leave_without_carry`: the shutdown before that).
RESTART = Config(partitions=1, turns=0, restarts=1)
RESTARTS = Config(partitions=1, turns=0, restarts=2)


PLANTED = [
    # (bug, the smallest world that shows it, words the violation must contain)
    ("claim_without_lock", SMALL, "delivers it too"),
    ("claim_reads_kafka", WORLDS["kill"], "not at the committed"),
    ("deliver_after_expiry", WORLDS["session-expiry"], "delivers it too"),
    ("broker_commits_kafka_only", SMALL, "not at the committed"),
    ("deliver_after_back", SMALL, "delivers it too"),
    ("seat_leaves_before_release", SMALL, "can no longer complete --to zookeeper"),
    ("seat_stays", SMALL, "can no longer complete --to zookeeper"),
    ("leave_without_carry", RESTARTS, "not at the committed"),
]


@pytest.mark.parametrize(("bug", "world", "words"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_bug_is_found(bug: str, world: Config, words: str) -> None:
    result = explore(replace(world, bugs=frozenset({bug})), max_states=200_000, first_only="complete" not in words)
    assert result.violations, f"planted bug {bug} not found"
    problem, steps = result.violations[0]
    assert words in problem, problem
    assert steps, "a violation comes with the trace that reaches it"
    # the same world without the bug is clean: the violation is the bug's, not the world's
    assert explored(world).violations == []


def test_every_planted_bug_has_a_test() -> None:
    assert {bug for bug, _, _ in PLANTED} == BUGS.keys()


def test_an_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown planted bugs"):
        Config(bugs=frozenset({"typo"}))


def _kinds(result: Result) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"overlap": [], "rewind": [], "other": []}
    for what, _ in result.violations:
        kind = "overlap" if "delivers it too" in what else "rewind" if "not at the committed" in what else "other"
        out[kind].append(what)
    return out


def test_a_restart_with_broker_coordination_never_overlaps() -> None:
    for world in (RESTART, RESTARTS):
        assert _kinds(explored(world))["overlap"] == [], world


def test_a_restart_with_broker_coordination_starts_at_the_committed_offset() -> None:
    result = explored(RESTART)
    assert result.violations == []
    assert result.settled["broker"] > 0


def test_a_rolling_restart_with_broker_coordination_starts_at_the_committed_offset() -> None:
    result = explored(RESTARTS)
    assert result.violations == []
    assert result.settled["broker"] > 0


def test_a_revocation_hold_that_gives_up_is_what_lets_two_deliver() -> None:
    """The hold's 30 s give-up (ShadowGroupMember.REVOKE_WAIT_S) trades the invariants for progress: a
    ZooKeeper-mode member that has not stopped the partition by then (its rebalance thread stuck) delivers
    beside the broker-coordinated one, or one that has not carried its offset leaves Kafka behind."""
    kinds = _kinds(explored(replace(RESTART, revoke_timeouts=1)))
    assert kinds["overlap"] and kinds["rewind"] and not kinds["other"], kinds
