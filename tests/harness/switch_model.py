"""An explicit-state model checker of the live switch's hand-over protocol (docs/live-switch.md), pure.

The model is small on purpose: a few members, partitions and messages, every interleaving of
their steps, both coordinators and the switch command, and a bounded number of faults (kill -9
of a member, a ZooKeeper session expiry, the command killed half-way and run again). Each state
is a frozen tuple; `explore` walks every reachable one breadth first and checks the invariants
on every transition, then checks that the switch can still complete from every state reached.

What is abstracted, and why it is sound for these invariants:
- ZooKeeper's owner node is one cell per partition; creating it is atomic and exclusive, and a
  session's nodes vanish at its expiry, as in ZooKeeper.
- A member's delivery gate is its local "hold": the lease (zkconsumer.consumer.delivery) ends
  delivery before the session can expire, so an expiry clears the member's holds in the same step.
- The brokers' group is its member set and generation; a commit is accepted from a member of the
  current generation for ANY partition (the classic coordinator checks no partition ownership),
  and from a non-member with generation -1 only while the group is Empty (validateOffsetCommit).
- The command's read and its write are two steps: between them anything may happen; its write is a
  compare-and-set on the switch node's version, so a command killed after reading writes nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

NONE = -1
ZOOKEEPER, JOINING, HANDOVER, BROKER = 0, 1, 2, 3  # the switch node's steps
STEP_NAMES = ("zookeeper", "joining", "handover", "broker")

BUGS = frozenset(
    {
        "claim_without_lock",  # a member takes a partition its broker assignment gives it while the owner node is held
        "claim_reads_kafka",  # a claim during the hand-over starts from Kafka's offset instead of ZooKeeper's
        "deliver_after_expiry",  # a member whose ZooKeeper session expired goes on delivering (no lease)
    }
)


@dataclass(frozen=True)
class Member:
    alive: bool = True
    seen: int = ZOOKEEPER  # the switch step this member acts on
    joined: bool = False  # in the brokers' group
    gen: int = NONE  # the generation of the assignment it holds
    assigned: frozenset[int] = frozenset()  # what the brokers' group gave it at `gen`
    holds: tuple[tuple[int, int], ...] = ()  # (partition, next offset to deliver): what it delivers now
    locked: frozenset[int] = frozenset()  # partitions whose owner node it holds


@dataclass(frozen=True)
class State:
    members: tuple[Member, ...]
    step: int = ZOOKEEPER
    owner: tuple[int, ...] = ()  # owner node per partition: the member, or NONE
    zk: tuple[int, ...] = ()  # ZooKeeper's committed offset per partition
    kafka: tuple[int, ...] = ()  # the brokers' committed offset per partition
    group: frozenset[int] = frozenset()  # the brokers' group
    gen: int = 0
    delivered: tuple[int, ...] = ()  # the highest offset delivered per partition (NONE: none yet)
    command: tuple[int, int] | None = None  # (step read, step to write): a command between its read and its write
    kills: int = 0  # faults still allowed
    expiries: int = 0
    command_kills: int = 0


@dataclass(frozen=True)
class Config:
    members: int = 2
    partitions: int = 2
    messages: int = 2  # per partition
    kills: int = 1
    expiries: int = 1
    command_kills: int = 1
    bugs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = self.bugs - BUGS
        if unknown:
            raise ValueError(f"unknown planted bugs {sorted(unknown)}; known: {sorted(BUGS)}")


@dataclass
class Result:
    states: int = 0
    transitions: int = 0
    violations: list[tuple[str, list[str]]] = field(default_factory=list)  # (what, the trace that led there)
    settled: int = 0  # states where the switch has completed and every partition is delivered by its assignee


def initial(config: Config) -> State:
    n, p = config.members, config.partitions
    return State(
        members=tuple(Member() for _ in range(n)),
        owner=(NONE,) * p,
        zk=(0,) * p,
        kafka=(0,) * p,
        delivered=(NONE,) * p,
        kills=config.kills,
        expiries=config.expiries,
        command_kills=config.command_kills,
    )


def _range(members: list[int], partitions: int) -> dict[int, frozenset[int]]:
    """Kafka's range assignor over `members` in the given order: contiguous shares, the first ones larger."""
    out: dict[int, frozenset[int]] = {}
    if not members:
        return out
    share, extra = divmod(partitions, len(members))
    start = 0
    for i, m in enumerate(members):
        size = share + (1 if i < extra else 0)
        out[m] = frozenset(range(start, start + size))
        start += size
    return out


def zk_assignment(s: State, partitions: int) -> dict[int, frozenset[int]]:
    """The ZooKeeper assignment: range over the live registered members in id order."""
    return _range([i for i, m in enumerate(s.members) if m.alive], partitions)


def broker_assignment(s: State, partitions: int) -> dict[int, frozenset[int]]:
    """The brokers' assignment: range over the group's members in the coordinator's order (its member ids,
    unrelated to ours: modelled as the reverse, so that most partitions change owner at the switch)."""
    return _range(sorted(s.group, reverse=True), partitions)


def settled(s: State, partitions: int) -> bool:
    """The switch is complete and at rest: `broker` step, seen by every live member, each holding its
    current broker assignment, every partition delivered by the live member the brokers gave it to."""
    if s.step != BROKER or s.command is not None:
        return False
    live = [i for i, m in enumerate(s.members) if m.alive]
    if any(s.members[i].seen != BROKER or s.members[i].gen != s.gen or i not in s.group for i in live):
        return False
    assigned = broker_assignment(s, partitions)
    return all(
        any(p in assigned.get(i, frozenset()) and p in _holds(s.members[i]) for i in live) for p in range(partitions)
    )


def _set(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return t[:i] + (v,) + t[i + 1 :]


def _member(s: State, i: int, m: Member) -> State:
    return replace(s, members=s.members[:i] + (m,) + s.members[i + 1 :])


def _holds(m: Member) -> dict[int, int]:
    return dict(m.holds)


def _with_holds(m: Member, holds: dict[int, int], **changes: object) -> Member:
    return replace(m, holds=tuple(sorted(holds.items())), **changes)  # type: ignore[arg-type]


def _target(s: State, i: int, config: Config) -> frozenset[int]:
    m = s.members[i]
    if m.seen >= HANDOVER:
        # As SwitchFollower: before its first assignment from the brokers a member keeps what it holds.
        return m.assigned if m.gen != NONE else frozenset(p for p, _ in m.holds)
    return zk_assignment(s, config.partitions).get(i, frozenset())


def successors(s: State, config: Config) -> Iterator[tuple[str, State, str | None]]:
    """(label, next state, violation or None) for every transition enabled in `s`."""
    bugs = config.bugs
    for i, m in enumerate(s.members):
        if not m.alive:
            if any(o == i for o in s.owner):  # its ZooKeeper session expires: its owner nodes go
                yield (
                    f"m{i} session of the dead expires",
                    replace(s, owner=tuple(NONE if o == i else o for o in s.owner)),
                    None,
                )
            if i in s.group:  # its broker session times out
                yield f"m{i} dead, leaves the brokers' group", replace(s, group=s.group - {i}, gen=s.gen + 1), None
            continue
        yield from _member_steps(s, i, m, config, bugs)
    yield from _command_steps(s, config, bugs)


def _member_steps(
    s: State, i: int, m: Member, config: Config, bugs: frozenset[str]
) -> Iterator[tuple[str, State, str | None]]:
    holds = _holds(m)
    if m.seen < s.step:  # a watch fires: the member reads the switch node
        yield f"m{i} sees step {STEP_NAMES[s.step]}", _member(s, i, replace(m, seen=s.step)), None
    if m.seen >= JOINING and not m.joined:
        yield (
            f"m{i} joins the brokers' group",
            replace(_member(s, i, replace(m, joined=True)), group=s.group | {i}, gen=s.gen + 1),
            None,
        )
    if m.joined and i in s.group and m.gen != s.gen:
        got = broker_assignment(s, config.partitions).get(i, frozenset())
        yield f"m{i} gets generation {s.gen}: {sorted(got)}", _member(s, i, replace(m, gen=s.gen, assigned=got)), None
    target = _target(s, i, config)
    for p in range(config.partitions):
        if p in holds:
            pos = holds[p]
            if pos < config.messages:
                yield from _deliver(s, i, m, p, pos)
            if s.owner[p] == i and s.zk[p] != pos:  # the commit's write is fenced by the owner node
                yield f"m{i} commits p{p}={pos} to ZooKeeper", replace(s, zk=_set(s.zk, p, pos)), None
            if s.kafka[p] != pos and _kafka_accepts(s, i, m):
                yield f"m{i} commits p{p}={pos} to Kafka", replace(s, kafka=_set(s.kafka, p, pos)), None
            both = s.zk[p] == pos and (m.seen == ZOOKEEPER or s.kafka[p] == pos)
            if p not in target and p in m.locked and both:  # hand over: committed to both stores, then let go
                del holds[p]
                yield (
                    f"m{i} releases p{p} at {pos}",
                    replace(_member(s, i, _with_holds(m, holds, locked=m.locked - {p})), owner=_set(s.owner, p, NONE)),
                    None,
                )
                holds = _holds(m)
        elif p in target:
            free = s.owner[p] == NONE
            if free or ("claim_without_lock" in bugs and m.seen >= HANDOVER):
                read_kafka = "claim_reads_kafka" in bugs and m.seen >= HANDOVER
                start = s.kafka[p] if read_kafka else s.zk[p]
                problem = None
                if start > s.delivered[p] + 1:
                    problem = (
                        f"p{p}: offsets {s.delivered[p] + 1}..{start - 1} never delivered (m{i} starts at {start})"
                    )
                elif start != s.zk[p]:
                    problem = f"p{p}: m{i} starts at {start}, not at the committed {s.zk[p]}"
                holds[p] = start
                owner = _set(s.owner, p, i) if free else s.owner
                locked = m.locked | {p} if free else m.locked
                yield (
                    f"m{i} claims p{p}, starts at {start}",
                    replace(_member(s, i, _with_holds(m, holds, locked=locked)), owner=owner),
                    problem,
                )
                holds = _holds(m)
    if s.kills > 0:  # kill -9: it delivers nothing more; its nodes and broker membership stay until their sessions end
        yield (
            f"m{i} killed",
            replace(_member(s, i, replace(m, alive=False, holds=(), locked=frozenset())), kills=s.kills - 1),
            None,
        )
    if s.expiries > 0 and m.locked:  # ZooKeeper session expiry: the lease stopped delivery first; a new session follows
        owner = tuple(NONE if o == i else o for o in s.owner)
        kept = m.holds if "deliver_after_expiry" in bugs else ()
        expired = replace(m, holds=kept, locked=frozenset())
        yield f"m{i} session expires", replace(_member(s, i, expired), owner=owner, expiries=s.expiries - 1), None


def _deliver(s: State, i: int, m: Member, p: int, pos: int) -> Iterator[tuple[str, State, str | None]]:
    problem = None
    if pos > s.delivered[p] + 1:
        problem = f"p{p}: m{i} delivers {pos} after {s.delivered[p]}: lost {s.delivered[p] + 1}..{pos - 1}"
    others = [j for j, o in enumerate(s.members) if j != i and o.alive and any(q == p for q, _ in o.holds)]
    if others:
        problem = f"p{p}: m{i} delivers {pos} while m{others[0]} delivers it too"
    holds = _holds(m)
    holds[p] = pos + 1
    delivered = _set(s.delivered, p, max(s.delivered[p], pos))
    yield f"m{i} delivers p{p}@{pos}", replace(_member(s, i, _with_holds(m, holds)), delivered=delivered), problem


def _kafka_accepts(s: State, i: int, m: Member) -> bool:
    """The classic coordinator's rule: a member of the current generation (any partition), or generation
    -1 from a non-member while the group is Empty (dual commit before the switch)."""
    if m.joined:
        return i in s.group and m.gen == s.gen
    return not s.group


def _command_steps(s: State, config: Config, bugs: frozenset[str]) -> Iterator[tuple[str, State, str | None]]:
    if s.command is None:
        nxt = _next_step(s, config, bugs)
        if nxt is not None:
            yield (
                f"command reads step {STEP_NAMES[s.step]}, plans {STEP_NAMES[nxt]}",
                replace(s, command=(s.step, nxt)),
                None,
            )
        return
    read, to = s.command
    if s.step == read:  # the compare-and-set on the switch node's version
        yield f"command writes step {STEP_NAMES[to]}", replace(s, step=to, command=None), None
    else:
        yield "command's write refused (version moved)", replace(s, command=None), None
    if s.command_kills > 0:
        yield "command killed half-way", replace(s, command=None, command_kills=s.command_kills - 1), None


def _next_step(s: State, config: Config, bugs: frozenset[str]) -> int | None:
    live = [i for i, m in enumerate(s.members) if m.alive]
    if s.step == ZOOKEEPER:
        return JOINING
    if s.step == JOINING:
        # every live member is in the brokers' group and has seen `joining`
        return HANDOVER if all(i in s.group and s.members[i].seen >= JOINING for i in live) else None
    if s.step == HANDOVER:
        acked = all(s.members[i].seen >= HANDOVER for i in live) or "advance_without_acks" in bugs
        assigned = broker_assignment(s, config.partitions)
        settled = all(
            s.owner[p] != NONE and p in assigned.get(s.owner[p], frozenset()) and s.kafka[p] == s.zk[p]
            for p in range(config.partitions)
        )
        return BROKER if acked and settled else None
    return None


def explore(config: Config, *, max_states: int = 2_000_000) -> Result:
    """Every state reachable from the initial one; the invariants on every transition, and from every
    state a path on which the switch completes (faults may stop, the protocol must not)."""
    start = initial(config)
    parent: dict[State, tuple[State, str] | None] = {start: None}
    edges: dict[State, list[State]] = {}
    queue = deque([start])
    result = Result()
    while queue:
        s = queue.popleft()
        nexts = []
        for label, t, problem in successors(s, config):
            result.transitions += 1
            if problem is not None and len(result.violations) < 20:
                result.violations.append((problem, trace(parent, s) + [label]))
            if t not in parent:
                if len(parent) >= max_states:
                    raise RuntimeError(f"more than {max_states} states: make the model smaller")
                parent[t] = (s, label)
                queue.append(t)
            nexts.append(t)
        edges[s] = nexts
        if settled(s, config.partitions):
            result.settled += 1
    result.states = len(parent)
    stuck = _cannot_settle(edges, config.partitions)
    if stuck is not None:
        result.violations.append(("the switch can no longer complete", trace(parent, stuck)))
    return result


def _cannot_settle(edges: dict[State, list[State]], partitions: int) -> State | None:
    """A state from which no path reaches a settled switch (or a group with no live member), if any:
    once the switch completes, no partition may stay without a deliverer."""
    reverse: dict[State, list[State]] = {s: [] for s in edges}
    for s, nexts in edges.items():
        for t in nexts:
            reverse[t].append(s)
    good = {s for s in edges if settled(s, partitions) or not any(m.alive for m in s.members)}
    queue = deque(good)
    while queue:
        t = queue.popleft()
        for s in reverse[t]:
            if s not in good:
                good.add(s)
                queue.append(s)
    bad = [s for s in edges if s not in good]
    return min(bad, key=lambda s: (s.step, s.gen)) if bad else None


def trace(parent: dict[State, tuple[State, str] | None], s: State) -> list[str]:
    labels: list[str] = []
    link = parent[s]
    while link is not None:
        s, label = link
        labels.append(label)
        link = parent[s]
    return labels[::-1]
