"""An explicit-state model checker of the live switch, both ways (switch_model): every interleaving, the invariants on each transition, completion from every state."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import chain

from harness.switch_model import (
    BROKER,
    STEP_NAMES,
    TURN,
    ZOOKEEPER,
    Config,
    State,
    broker_assignment,
    delivering,
    initial,
    successors,
    zk_assignment,
)
from harness.switch_model_restart import restart_steps


@dataclass
class Result:
    states: int = 0
    transitions: int = 0
    violations: list[tuple[str, list[str]]] = field(default_factory=list)  # (what, the trace that led there)
    settled: dict[str, int] = field(default_factory=dict)  # direction -> states where the switch completed it
    # (step, direction, turns made) of every state: which parts of which journeys were explored
    reached: set[tuple[str, str, int]] = field(default_factory=set)
    completed: set[tuple[str, int]] = field(default_factory=set)  # (direction, turns made) of completed switches


def settled(s: State, direction: int, partitions: int) -> bool:
    """The switch is complete in `direction` and at rest: the node at its end, every live member acting on
    it and saying so, each partition delivered by the live member whose share it is (the brokers' current
    assignment at `broker`, ZooKeeper's with no seat left at `zookeeper`)."""
    if s.step != direction or s.command is not None:
        return False
    live = [i for i, m in enumerate(s.members) if m.alive]
    for i in live:
        m = s.members[i]
        if m.step != direction or m.acked != direction or m.releasing:
            return False
        seated = i in s.group and m.current
        if seated != (direction == BROKER):
            return False
    share = broker_assignment(s, partitions) if direction == BROKER else zk_assignment(s, partitions)
    return all(any(p in share.get(i, ()) and p in delivering(s.members[i]) for i in live) for p in range(partitions))


def explore(config: Config, *, max_states: int = 2_000_000, first_only: bool = False) -> Result:
    """Every state reachable from the initial one, the invariants on every transition (no loss, no skip,
    no rewind of a committed offset, never two deliverers); then, for each direction the command may be
    turned to, that from every state a path completes the switch that way (faults may stop, the protocol
    must not). The first violations found come with the trace that reaches them; `first_only` stops at
    the first violation of a transition (no completion check then)."""
    start = initial(config)
    parent: dict[State, tuple[State, str] | None] = {start: None}
    reverse: dict[State, list[tuple[State, bool]]] = {start: []}  # predecessors, and whether by a turn
    queue = deque([start])
    result = Result()
    while queue:
        s = queue.popleft()
        for label, t, problem in chain(successors(s, config), restart_steps(s, config)):
            result.transitions += 1
            if problem is not None and len(result.violations) < 20:
                result.violations.append((problem, trace(parent, s) + [label]))
                if first_only:
                    result.states = len(parent)
                    return result
            if t not in parent:
                if len(parent) >= max_states:
                    raise RuntimeError(f"more than {max_states} states: make the model smaller")
                parent[t] = (s, label)
                reverse[t] = []
                queue.append(t)
            reverse[t].append((s, label.startswith(TURN)))
    result.states = len(parent)
    for direction in (BROKER, ZOOKEEPER):
        done = [s for s in parent if s.direction == direction and settled(s, direction, config.partitions)]
        result.settled[STEP_NAMES[direction]] = len(done)
        result.completed |= {(STEP_NAMES[direction], config.turns - s.turns) for s in done}
    result.reached = {(STEP_NAMES[s.step], STEP_NAMES[s.direction], config.turns - s.turns) for s in parent}
    stuck = _cannot_complete(reverse, config.partitions)
    if stuck is not None:
        name = STEP_NAMES[stuck.direction]
        result.violations.append((f"the switch can no longer complete --to {name}", trace(parent, stuck)))
    return result


def _cannot_complete(reverse: dict[State, list[tuple[State, bool]]], partitions: int) -> State | None:
    """A state from which no path completes the switch in the direction the command points (or ends
    with no live member), without turning it, if any. The states before each turn are checked in the
    direction they pointed, so from every state the switch can complete the way the node last moved
    too: the members' steps do not depend on the command's direction."""
    good = {s for s in reverse if settled(s, s.direction, partitions) or not any(m.alive for m in s.members)}
    queue = deque(good)
    while queue:
        t = queue.popleft()
        for s, turn in reverse[t]:
            if s not in good and not turn:
                good.add(s)
                queue.append(s)
    return next((s for s in reverse if s not in good), None)  # in breadth-first order: the shortest trace


def trace(parent: dict[State, tuple[State, str] | None], s: State) -> list[str]:
    labels: list[str] = []
    link = parent[s]
    while link is not None:
        s, label = link
        labels.append(label)
        link = parent[s]
    return labels[::-1]
