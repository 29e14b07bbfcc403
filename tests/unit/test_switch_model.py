"""The live switch's hand-over protocol, model-checked (tests/harness/switch_model.py; docs/live-switch.md)."""

from __future__ import annotations

import pytest

from harness.switch_model import BUGS, Config, explore

# Each fault in its own small world: together they multiply the states past what the suite can afford
# (all three at once, one partition, two messages: 90,000 states, 15 s; run it by hand after a change).
CORRECT = [
    pytest.param(Config(messages=1, kills=0, expiries=0, command_kills=0), id="no-faults"),
    pytest.param(Config(partitions=1, messages=2, kills=1, expiries=0, command_kills=1), id="kill-and-command-kill"),
    pytest.param(Config(messages=1, kills=0, expiries=1, command_kills=0), id="session-expiry"),
    pytest.param(Config(messages=1, kills=0, expiries=0, command_kills=1), id="command-killed-and-rerun"),
]


@pytest.mark.parametrize("config", CORRECT)
def test_the_protocol_keeps_every_invariant(config: Config) -> None:
    result = explore(config, max_states=200_000)
    assert result.violations == []
    assert result.settled > 0, "no interleaving completed the switch: the model explores nothing useful"
    assert result.states > 1000


PLANTED = [
    # (bug, the smallest world that shows it, words the violation must contain)
    ("claim_without_lock", Config(messages=1, kills=0, expiries=0, command_kills=0), "delivers it too"),
    (
        "claim_reads_kafka",
        Config(partitions=1, messages=1, kills=1, expiries=0, command_kills=0),
        "not at the committed",
    ),
    ("deliver_after_expiry", Config(messages=1, kills=0, expiries=1, command_kills=0), "delivers it too"),
]


@pytest.mark.parametrize(("bug", "config", "words"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_bug_is_found(bug: str, config: Config, words: str) -> None:
    buggy = Config(**{**config.__dict__, "bugs": frozenset({bug})})
    result = explore(buggy, max_states=200_000)
    assert result.violations, f"planted bug {bug} not found"
    problem, steps = result.violations[0]
    assert words in problem, problem
    assert steps, "a violation comes with the trace that reaches it"
    # the same world without the bug is clean: the violation is the bug's, not the world's
    assert explore(config, max_states=200_000).violations == []


def test_every_planted_bug_has_a_test() -> None:
    assert {bug for bug, _, _ in PLANTED} == BUGS


def test_an_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown planted bugs"):
        Config(bugs=frozenset({"typo"}))
