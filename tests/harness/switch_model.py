"""The live switch's protocol, both ways, as a pure transition system: members, both coordinators, the command, faults.

It follows the code (docs/live-switch.md): `SwitchFollower` and `switch_target`
(zkconsumer/coordinator/switch_follow.py), the rebalancer's release and claim
(zkconsumer/coordinator/rebalancer.py), the seat (zkconsumer/broker_coordination/shadow.py),
`plan_switch`/`plan_switch_back` (zkconsumer/migration/switch.py) and the command's read and
compare-and-set (zkconsumer/admin/live_switch.py). `switch_model_check.explore` walks it.

What it abstracts, and why that is sound for its invariants:
- An owner node is one cell per partition; its create is atomic and exclusive, and a session's
  nodes (and its registration) vanish at its expiry. A live member's expiry and its new session
  are one step: the lease (zkconsumer.consumer.delivery) ended its delivery before the expiry.
- Every commit is ZooKeeper first, fenced by the owner node (offsets.storage=zookeeper: what a
  claim reads, OffsetStore.read), then the same value to Kafka through the seat as a member of
  the current generation (Commits._mirror, SwitchFollower.mirror: best effort, from `joining` on).
  Kafka's value is therefore always one ZooKeeper held: nothing copies Kafka to ZooKeeper, on
  the way back either. Dual commit (reading the larger of the two) reads the same: not modelled.
- A release stops delivery, then (from `joining` on, with a seat) commits ZooKeeper's offset to
  Kafka as a member, reads it back and only then deletes the node (SwitchFollower.releasable);
  at `zookeeper`, or with no seat, it deletes the node at once.
- The brokers' group is its member set; any change starts a new generation, which each seat must
  fetch (`current`) before Kafka takes its commits (member id and generation; any partition:
  the coordinator checks no ownership). Its assignment is range over the members in reverse
  (the coordinator's member ids, not ours: most partitions move), shown by DescribeGroups only
  while every member has it (Stable).
- A member's marker `seen` (`acked`) is the step of its last attempt that reached its target
  (holding what the step says, nothing still releasing; from `joining` on with a seat that has
  an assignment): SwitchFollower.publish.
- The command's read (one `plan_switch`/`plan_switch_back` over one consistent snapshot) and its
  write are two steps: between them anything may happen; the write is a compare-and-set on the
  switch node's version. The operator may turn it round (`--to` the other way) whenever it is
  not running, a bounded number of times (`turns`).
- A member's attempt is split into its steps (read the step, release, claim, say the step), each
  atomic and each enabled on its own: more interleavings than the code, where an attempt whose
  release is kept (Kafka not yet equal) raises before it claims. The extra orders can only add
  violations of 1 and 2, never hide one; a completion found here may use an order the code does
  not take.

Left out: the mirror's Kafka commit is sent outside the rebalance lock (Commits.commit), so one
computed before a release can land after the next owner's commit and rewind Kafka (not
ZooKeeper, which claims read); the members' hint of what they wrote to Kafka then keeps the
partition at `offsets-differ` until it moves again. Here a mirror is one step with the value
ZooKeeper holds. Also left out: members added or restarted mid-switch (a member restarted with
zkconsumer.coordination=broker once the node says `broker` is switch_model_restart's).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

NONE = -1
ZOOKEEPER, JOINING, HANDOVER, BROKER = 0, 1, 2, 3  # the switch node's steps
STEP_NAMES = ("zookeeper", "joining", "handover", "broker")

BUGS = {
    # the way there
    "claim_without_lock": "from `handover` a claim does not wait for the owner node",
    "claim_reads_kafka": "from `handover` a claim starts from Kafka's offset, not ZooKeeper's",
    "deliver_after_expiry": "a member whose ZooKeeper session expired goes on delivering (no lease)",
    # the way back
    "broker_commits_kafka_only": "at `broker` a member commits to Kafka only (as the brokers' members do), "
    "while a claim on the way back reads ZooKeeper's offset",
    "deliver_after_back": "a member reading a step back lets go of the owner nodes of its brokers' "
    "assignment and goes on delivering them",
    "seat_leaves_before_release": "a member reading the step back to `joining` leaves the brokers' group at once, "
    "before the owner nodes it releases are gone, and sits again only at the next step",
    "seat_stays": "a member reading `zookeeper` keeps its seat in the brokers' group",
    # the last step off ZooKeeper (switch_model_restart)
    "leave_without_carry": "a member restarted at `broker` copies its final commit to Kafka once, at best, "
    "before its owner nodes go with its session",
}


class Member(NamedTuple):
    alive: bool = True
    registered: bool = True  # its registration and marker: gone when its session ends
    step: int = ZOOKEEPER  # the step its rebalance attempts act on (SwitchFollower.step)
    acked: int = ZOOKEEPER  # the step its marker says it acted on (`seen`)
    current: bool = False  # its seat holds the brokers' current generation
    assigned: frozenset[int] | None = None  # its seat's assignment (None: none yet, or no seat)
    holds: tuple[tuple[int, int], ...] = ()  # (partition, next offset): installed or releasing
    releasing: frozenset[int] = frozenset()  # stopped, its owner node still to delete
    broker_mode: bool = False  # restarted with zkconsumer.coordination=broker (switch_model_restart)
    handed_on: frozenset[int] = frozenset()  # held partitions whose revocation hold gave up (switch_model_restart)
    leaving: bool = False  # shutting down to restart with coordination=broker (switch_model_restart)


class State(NamedTuple):
    members: tuple[Member, ...]
    owner: tuple[int, ...]  # owner node per partition: the member, or NONE
    zk: tuple[int, ...]  # ZooKeeper's committed offset per partition
    kafka: tuple[int, ...]  # the brokers' committed offset per partition
    delivered: tuple[int, ...]  # the highest offset delivered per partition (NONE: none yet)
    newest: tuple[int, ...]  # the highest offset ever committed per partition, in either store
    step: int = ZOOKEEPER  # the switch node
    group: frozenset[int] = frozenset()  # the seats in the brokers' group
    direction: int = BROKER  # the command's `--to` (BROKER or ZOOKEEPER)
    command: tuple[int, int] | None = None  # (step read, step to write): between its read and its write
    kills: int = 0  # faults still allowed
    expiries: int = 0
    command_kills: int = 0
    turns: int = 0  # how many more times the operator may turn the command round
    restarts: int = 0  # members the operator may still restart with coordination=broker at `broker`
    revoke_timeouts: int = 0  # seat revocation holds that may still give up (switch_model_restart)


@dataclass(frozen=True)
class Config:
    members: int = 2
    partitions: int = 2
    messages: int = 1  # per partition
    kills: int = 0
    expiries: int = 0
    command_kills: int = 0
    turns: int = 2  # how many times the operator may turn the command round (0: the way there only)
    restarts: int = 0  # members restarted with coordination=broker once the node says `broker`
    revoke_timeouts: int = 0  # seat revocation holds that may give up (REVOKE_WAIT_S passing)
    bugs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = self.bugs - BUGS.keys()
        if unknown:
            raise ValueError(f"unknown planted bugs {sorted(unknown)}; known: {sorted(BUGS)}")


Step = tuple[str, State, str | None]  # (label, next state, violation or None)
TURN = "operator turns the command to --to "  # the label of a change of direction


def initial(config: Config) -> State:
    p = config.partitions
    return State(
        members=tuple(Member() for _ in range(config.members)),
        owner=(NONE,) * p,
        zk=(0,) * p,
        kafka=(0,) * p,
        delivered=(NONE,) * p,
        newest=(0,) * p,
        kills=config.kills,
        expiries=config.expiries,
        command_kills=config.command_kills,
        turns=config.turns,
        restarts=config.restarts,
        revoke_timeouts=config.revoke_timeouts,
    )


def _range(members: list[int], partitions: int) -> dict[int, frozenset[int]]:
    """Range: contiguous shares over `members` in the given order, the first ones larger."""
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
    """ZooKeeper's assignor: range over the registered members (a dead one until its session ends)."""
    return _range([i for i, m in enumerate(s.members) if m.registered], partitions)


def broker_assignment(s: State, partitions: int) -> dict[int, frozenset[int]]:
    """The brokers' assignment of the current generation (a restarted member has a new member id: it
    sorts first)."""
    return _range(sorted(s.group, key=lambda j: (s.members[j].broker_mode, j), reverse=True), partitions)


def described(s: State, partitions: int) -> dict[int, frozenset[int]]:
    """What DescribeGroups shows: the assignment once every seat has it (Stable), else none."""
    return broker_assignment(s, partitions) if all(s.members[j].current for j in s.group) else {}


def holding(m: Member) -> dict[int, int]:
    return dict(m.holds)


def delivering(m: Member) -> set[int]:
    return {p for p, _ in m.holds if p not in m.releasing}


def target(s: State, i: int, partitions: int) -> frozenset[int]:
    """switch_target: ZooKeeper's share up to `joining`; from `handover` the seat's assignment, or
    what the member holds while its seat has none."""
    m = s.members[i]
    if m.step <= JOINING:
        return zk_assignment(s, partitions).get(i, frozenset())
    if m.assigned is None:
        return frozenset(p for p, _ in m.holds if p not in m.releasing)
    return m.assigned


def _set(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return t[:i] + (v,) + t[i + 1 :]


def put(s: State, i: int, m: Member) -> State:
    return s._replace(members=s.members[:i] + (m,) + s.members[i + 1 :])


def regroup(s: State, group: frozenset[int]) -> State:
    """A member joins or leaves: a new generation, which no seat has yet."""
    return s._replace(group=group, members=tuple(m._replace(current=False) for m in s.members))


def accepts(s: State, i: int) -> bool:
    """Kafka takes a commit from a seat of the current generation (for any partition)."""
    return i in s.group and s.members[i].current


def successors(s: State, config: Config) -> Iterator[Step]:
    """Every transition enabled in `s`, with the violation it makes, if any."""
    for i, m in enumerate(s.members):
        if m.broker_mode or m.leaving:  # switch_model_restart's
            continue
        if m.alive:
            yield from _member_steps(s, i, m, config)
            continue
        if m.registered:  # its ZooKeeper session ends: its registration and owner nodes go
            gone = tuple(NONE if o == i else o for o in s.owner)
            yield f"m{i}'s session expires (dead)", put(s, i, m._replace(registered=False))._replace(owner=gone), None
        if i in s.group:  # the brokers' session timeout
            yield f"m{i}'s seat times out (dead)", regroup(s, s.group - {i}), None
    yield from _command_steps(s, config)


def _member_steps(s: State, i: int, m: Member, config: Config) -> Iterator[Step]:
    bugs, partitions = config.bugs, config.partitions
    if m.step != s.step:
        yield _read_step(s, i, m, config)
    if i in s.group and not m.current:
        got = broker_assignment(s, partitions).get(i, frozenset())
        yield f"m{i}'s seat gets {sorted(got)}", put(s, i, m._replace(current=True, assigned=got)), None
    goal = target(s, i, partitions)
    holds = holding(m)
    for p, pos in m.holds:
        ours = s.owner[p] == i
        if p not in m.releasing:
            if pos < config.messages:
                yield deliver(s, i, m, p, pos)
            if p not in goal:  # release: stop delivering first, the node goes in a later step
                yield f"m{i} stops p{p} to release it", put(s, i, m._replace(releasing=m.releasing | {p})), None
        elif ours:
            yield from _finish_release(s, i, m, p, holds)
        if ours and s.zk[p] != pos:  # the commit, ZooKeeper first (fenced by the owner node)
            if "broker_commits_kafka_only" in bugs and m.step == BROKER:
                if accepts(s, i) and s.kafka[p] != pos:
                    yield f"m{i} commits p{p}={pos} to Kafka only", commit(s, p, s.zk[p], pos), None
            else:
                yield f"m{i} commits p{p}={pos} to ZooKeeper", commit(s, p, pos, s.kafka[p]), None
        mirror = m.step != ZOOKEEPER and not ("broker_commits_kafka_only" in bugs and m.step == BROKER)
        if ours and mirror and s.kafka[p] != s.zk[p] and accepts(s, i):  # then the same value to Kafka
            yield f"m{i} copies p{p}={s.zk[p]} to Kafka", commit(s, p, s.zk[p], s.zk[p]), None
    for p in sorted(goal - holds.keys()):
        if s.owner[p] == NONE or ("claim_without_lock" in bugs and m.step >= HANDOVER):
            yield _claim(s, i, m, p, config)
    if m.acked != m.step and not m.releasing and holds.keys() == goal:
        if m.step == ZOOKEEPER or (i in s.group and m.assigned is not None):
            yield f"m{i}'s marker says {STEP_NAMES[m.step]}", put(s, i, m._replace(acked=m.step)), None
    if s.kills > 0:  # kill -9: delivery ends; its nodes, registration and seat stay until their sessions end
        dead = m._replace(
            alive=False, step=ZOOKEEPER, assigned=None, holds=(), releasing=frozenset(), handed_on=frozenset()
        )
        yield f"m{i} killed", put(s, i, dead)._replace(kills=s.kills - 1), None
    if s.expiries > 0 and any(o == i for o in s.owner):  # the lease stopped delivery; a new session follows
        gone = tuple(NONE if o == i else o for o in s.owner)
        kept = (
            m if "deliver_after_expiry" in bugs else m._replace(holds=(), releasing=frozenset(), handed_on=frozenset())
        )
        yield f"m{i}'s session expires", put(s, i, kept)._replace(owner=gone, expiries=s.expiries - 1), None


def _read_step(s: State, i: int, m: Member, config: Config) -> Step:
    """SwitchFollower.read_step: the new step; the seat leaves at `zookeeper`, joins from `joining`."""
    moved = m._replace(step=s.step)
    back = s.step < m.step
    if "deliver_after_back" in config.bugs and back and m.step >= HANDOVER and s.step <= JOINING:
        owner = tuple(NONE if o == i and p not in moved.releasing else o for p, o in enumerate(s.owner))
        t = put(s, i, moved)._replace(owner=owner)
        return f"m{i} sees step {STEP_NAMES[s.step]}, lets its owner nodes go, delivers on", t, None
    leave = s.step == ZOOKEEPER and "seat_stays" not in config.bugs
    if "seat_leaves_before_release" in config.bugs and back and s.step == JOINING:
        leave = True
    if leave and i in s.group:
        t = regroup(put(s, i, moved._replace(assigned=None)), s.group - {i})
        return f"m{i} sees step {STEP_NAMES[s.step]}, its seat leaves", t, None
    if s.step != ZOOKEEPER and i not in s.group and not (back and "seat_leaves_before_release" in config.bugs):
        t = regroup(put(s, i, moved._replace(assigned=None)), s.group | {i})
        return f"m{i} sees step {STEP_NAMES[s.step]}, its seat joins", t, None
    return f"m{i} sees step {STEP_NAMES[s.step]}", put(s, i, moved), None


def _finish_release(s: State, i: int, m: Member, p: int, holds: dict[int, int]) -> Iterator[Step]:
    """The node goes at once at `zookeeper` or with no seat; else once ZooKeeper's offset, committed to
    Kafka as a member, reads back equal (a refused commit keeps the node: the attempt tries again)."""
    rest = tuple((q, o) for q, o in m.holds if q != p)
    left = m._replace(holds=rest, releasing=m.releasing - {p}, handed_on=m.handed_on - {p})
    done = put(s, i, left)._replace(owner=_set(s.owner, p, NONE))
    if m.step == ZOOKEEPER or i not in s.group:
        yield f"m{i} deletes p{p}'s owner node", done, None
    elif accepts(s, i):
        label = f"m{i} commits p{p}={s.zk[p]} to Kafka, reads it back, deletes p{p}'s owner node"
        yield label, commit(done, p, s.zk[p], s.zk[p]), None


def commit(s: State, p: int, zk: int, kafka: int) -> State:
    """p's offsets in ZooKeeper and Kafka are now `zk` and `kafka`."""
    newest = _set(s.newest, p, max(s.newest[p], zk, kafka))
    return s._replace(zk=_set(s.zk, p, zk), kafka=_set(s.kafka, p, kafka), newest=newest)


def deliver(s: State, i: int, m: Member, p: int, pos: int) -> Step:
    problem = None
    if pos > s.delivered[p] + 1:
        problem = f"p{p}: m{i} delivers {pos} after {s.delivered[p]}: lost {s.delivered[p] + 1}..{pos - 1}"
    others = [j for j, o in enumerate(s.members) if j != i and p in delivering(o)]
    if others:
        problem = f"p{p}: m{i} delivers {pos} while m{others[0]} delivers it too"
    holds = tuple((q, pos + 1 if q == p else o) for q, o in m.holds)
    t = put(s, i, m._replace(holds=holds))._replace(delivered=_set(s.delivered, p, max(s.delivered[p], pos)))
    return f"m{i} delivers p{p}@{pos}", t, problem


def _claim(s: State, i: int, m: Member, p: int, config: Config) -> Step:
    """Create the owner node, then read the offset to start from: ZooKeeper's (OffsetStore.read)."""
    bugs = config.bugs
    reads_kafka = "claim_reads_kafka" in bugs and m.step >= HANDOVER
    start = s.kafka[p] if reads_kafka else s.zk[p]
    committed = s.newest[p]
    problem = None
    if start > s.delivered[p] + 1:
        problem = f"p{p}: offsets {s.delivered[p] + 1}..{start - 1} never delivered (m{i} starts at {start})"
    elif start != committed:
        problem = f"p{p}: m{i} starts at {start}, not at the committed {committed}"
    owner = _set(s.owner, p, i) if s.owner[p] == NONE else s.owner
    t = put(s, i, m._replace(holds=tuple(sorted((*m.holds, (p, start))))))._replace(owner=owner)
    return f"m{i} claims p{p}, starts at {start}", t, problem


def _command_steps(s: State, config: Config) -> Iterator[Step]:
    if s.command is not None:
        read, to = s.command
        if s.step == read:  # the compare-and-set on the switch node's version
            yield f"command writes step {STEP_NAMES[to]}", s._replace(step=to, command=None), None
        else:
            yield "command's write refused (the node changed): it reads again", s._replace(command=None), None
        if s.command_kills > 0:
            yield "command killed half-way", s._replace(command=None, command_kills=s.command_kills - 1), None
        return
    nxt = next_step(s, config)
    if nxt is not None:
        label = f"command (--to {STEP_NAMES[s.direction]}) reads step {STEP_NAMES[s.step]}, plans {STEP_NAMES[nxt]}"
        yield label, s._replace(command=(s.step, nxt)), None
    if s.turns > 0:
        other = ZOOKEEPER if s.direction == BROKER else BROKER
        yield TURN + STEP_NAMES[other], s._replace(direction=other, turns=s.turns - 1), None


def next_step(s: State, config: Config) -> int | None:
    """The step the command writes next, or None: arrived, refused or blocked (plan_switch, plan_switch_back)."""
    return _forward(s, config) if s.direction == BROKER else _back(s, config)


def _forward(s: State, config: Config) -> int | None:
    registered = [m for m in s.members if m.registered]
    if s.step == BROKER or any(m.acked < s.step for m in registered):  # arrived; member-behind
        return None
    if any(not s.members[j].registered for j in s.group):  # seat-unregistered
        return None
    if s.step == ZOOKEEPER:
        kafka_ahead = any(k > z for k, z in zip(s.kafka, s.zk, strict=True))
        return None if kafka_ahead else JOINING  # kafka-ahead is refused
    if s.step == JOINING:  # not-in-broker-group
        return HANDOVER if all(i in s.group for i, m in enumerate(s.members) if m.registered) else None
    shown = described(s, config.partitions)
    placed = all(s.owner[p] != NONE and p in shown.get(s.owner[p], ()) for p in range(config.partitions))
    return BROKER if placed and s.kafka == s.zk else None  # handover-pending, offsets-differ


def _back(s: State, config: Config) -> int | None:
    if s.step == ZOOKEEPER:
        return None
    acks = "back_before_acks" in config.bugs or all(m.acked == s.step for m in s.members if m.registered)
    if not acks:  # member-behind
        return None
    if s.step == HANDOVER:
        shown = described(s, config.partitions)
        held = all(s.owner[p] != NONE for ps in shown.values() for p in ps)
        if not held or s.kafka != s.zk:  # handover-pending, offsets-differ
            return None
    return s.step - 1
