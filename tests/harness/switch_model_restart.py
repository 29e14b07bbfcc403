"""The live switch's last step as switch_model sees it: a member restarted with zkconsumer.coordination=broker once the node says `broker`.

docs/live-switch.md: "the last step off ZooKeeper is a rolling restart with
zkconsumer.coordination=broker". The restarted process is a broker-coordinated member
(zkconsumer/broker_coordination/member.py): it delivers what the brokers assign it, from Kafka's
committed offset, and commits to Kafka only; it knows no owner node. Its shutdown first (`_leave`,
`_leaving_steps`): delivery stops, the final commit goes to ZooKeeper, ZooKeeper's offsets are
carried to Kafka through the seat and read back (a refusal tried again), and only then do the
session (with the owner nodes) and the seat go. The members not yet restarted stay
ZooKeeper-mode members at `broker` (switch_model), whose seats learn of each reassignment. A seat's revocation (ShadowGroupMember._on_revoke, _wait_released) holds, from
`handover` on, until its member no longer holds the partition's owner node (SwitchFollower.holding:
installed or releasing); the brokers hand a partition on only once its seat rejoins after the
revocation (cooperative-sticky). Here: the brokers withhold from a broker-coordinated member what
another member was assigned and has not revoked, and what a seated ZooKeeper-mode member at
`handover`/`broker` holds (`withheld`); a release lifts the hold and the brokers rebalance. The hold gives up after REVOKE_WAIT_S (30 s) and hands
the partition on, named in a warning: a bounded number of nondeterministic "timeout" steps
(Config.revoke_timeouts), each enabled at any moment a hold is in force. The hold is modelled only
where it matters, towards a broker-coordinated member: between ZooKeeper-mode members the owner
node keeps a claim out, and the hold only delays it.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.switch_model import (
    BROKER,
    HANDOVER,
    NONE,
    Config,
    Member,
    State,
    Step,
    accepts,
    broker_assignment,
    commit,
    deliver,
    put,
    regroup,
)


def restart_steps(s: State, config: Config) -> Iterator[Step]:
    """The operator's restarts at `broker`, the restarted members' own steps, and the seats' revocation
    holds giving up."""
    yield from _hold_timeouts(s, config)
    for i, m in enumerate(s.members):
        if m.broker_mode:
            yield from _broker_member_steps(s, i, m, config)
        elif m.leaving:
            yield from _leaving_steps(s, i, m, config)
        elif m.alive and s.step == BROKER and s.restarts > 0 and s.command is None:
            yield _restart(s, i, m) if "leave_without_carry" in config.bugs else _leave(s, i, m)


def _leave(s: State, i: int, m: Member) -> Step:
    """The shutdown's first part (Rebalancer.shutdown): delivery stops, the final commit goes to ZooKeeper
    (fenced; Commits.final copies nothing to Kafka under the lock); the owner nodes and the seat stay."""
    t = s
    for p, pos in m.holds:
        if s.owner[p] == i:
            t = commit(t, p, pos, t.kafka[p])
    stopped = m._replace(leaving=True, releasing=frozenset(p for p, _ in m.holds))
    t = put(t, i, stopped)._replace(restarts=s.restarts - 1)
    return f"m{i} shuts down to restart: stops, commits to ZooKeeper", t, None


def _leaving_steps(s: State, i: int, m: Member, config: Config) -> Iterator[Step]:
    """The shutdown's carry (GroupMember._carry_on_leaving, SwitchFollower.carry_on_leaving): ZooKeeper's
    offsets committed to Kafka through the seat, a refused commit tried again (its seat fetching the
    current generation meanwhile); once Kafka reads them all back, the session closes (the owner nodes
    and the registration go), the seat leaves, and the process comes back broker-coordinated. Its
    deadline passing is not modelled: the partitions are named, and delivered again from Kafka's offset."""
    if i in s.group and not m.current:
        got = broker_assignment(s, config.partitions).get(i, frozenset())
        yield f"m{i}'s seat gets {sorted(got)}", put(s, i, m._replace(current=True, assigned=got)), None
    ours = [p for p, _ in m.holds if s.owner[p] == i]
    behind = [p for p in ours if s.kafka[p] != s.zk[p]]
    if behind and accepts(s, i):
        label = f"m{i} (leaving) carries {', '.join(f'p{p}={s.zk[p]}' for p in behind)} to Kafka, reads it back"
        t = s
        for p in behind:
            t = commit(t, p, t.zk[p], t.zk[p])
        yield label, t, None
    if not behind:
        yield _restart(s, i, m)


def _restart(s: State, i: int, m: Member) -> Step:
    """The session closes, taking the owner nodes and the registration; the seat leaves; the same process
    comes back as a broker-coordinated member: a new member of the brokers' group. With the planted bug
    `leave_without_carry`, the shutdown as it was: the final commit, ZooKeeper then Kafka through the seat
    once (refused outside the current generation), straight before."""
    t = s
    if not m.leaving:
        for p, pos in m.holds:
            if s.owner[p] == i:
                t = commit(t, p, pos, pos if accepts(s, i) else t.kafka[p])
    owner = tuple(NONE if o == i else o for o in s.owner)
    restarted = Member(registered=False, step=BROKER, acked=BROKER, broker_mode=True)
    restarts = s.restarts if m.leaving else s.restarts - 1  # counted when the shutdown began
    t = regroup(put(t, i, restarted)._replace(owner=owner, restarts=restarts), s.group | {i})
    return f"m{i} restarted with coordination=broker", t, None


def withheld(s: State, i: int) -> frozenset[int]:
    """What the brokers do not hand to member `i` yet (cooperative-sticky): what another member of the
    group was last assigned and has not revoked (a seat fetches its revocation with the generation); and
    what a ZooKeeper-mode member still holds while it follows the brokers (its seat's revocation is held),
    unless that hold gave up."""
    out: set[int] = set()
    for j, o in enumerate(s.members):
        if j == i or not o.alive or j not in s.group:
            continue
        out |= o.assigned or frozenset()  # cooperative-sticky: a partition moves once its owner revoked it
        if o.broker_mode:  # it stops what it is revoked in the same poll
            out |= {p for p, _ in o.holds}
        elif o.step >= HANDOVER:  # the seat's revocation is held while the owner node is
            out |= {p for p, _ in o.holds if p not in o.handed_on}
    return frozenset(out)


def _hold_timeouts(s: State, config: Config) -> Iterator[Step]:
    """A seat's revocation hold gives up (REVOKE_WAIT_S passed with the node still held) and the brokers
    may hand the partition on: any time a hold is in force, towards a broker-coordinated member."""
    if s.revoke_timeouts <= 0 or not any(m.broker_mode and m.alive for m in s.members):
        return
    for j, m in enumerate(s.members):
        if not m.alive or m.broker_mode or j not in s.group or m.step < HANDOVER or m.assigned is None:
            continue
        for p, _ in m.holds:
            if p not in m.assigned and p not in m.handed_on:
                t = put(s, j, m._replace(handed_on=m.handed_on | {p}))._replace(revoke_timeouts=s.revoke_timeouts - 1)
                yield f"m{j}'s seat gives up holding p{p} after 30 s", t, None


def _broker_member_steps(s: State, i: int, m: Member, config: Config) -> Iterator[Step]:
    if not m.alive:
        if i in s.group:  # the brokers' session timeout
            yield f"m{i}'s broker member times out (dead)", regroup(s, s.group - {i}), None
        return
    share = broker_assignment(s, config.partitions).get(i, frozenset())
    if i in s.group and not m.current:  # on_revoke runs in the poll that brings the assignment: commit, stop
        got = share - withheld(s, i)
        t = s
        for p, pos in m.holds:
            if p not in got:
                t = commit(t, p, t.zk[p], pos)
        kept = tuple((p, pos) for p, pos in m.holds if p in got)
        t = put(t, i, m._replace(current=True, assigned=got, holds=kept))
        yield f"m{i} (broker) is assigned {sorted(got)}", t, None
    elif i in s.group and (share - withheld(s, i)) - (m.assigned or frozenset()):  # a held revocation ended
        yield "the brokers rebalance: a seat's held revocation ended", regroup(s, s.group), None
    assigned = m.assigned or frozenset()
    held = dict(m.holds)
    for p, pos in m.holds:
        if pos < config.messages:
            yield deliver(s, i, m, p, pos)
        if s.kafka[p] != pos and accepts(s, i):
            yield f"m{i} (broker) commits p{p}={pos} to Kafka", commit(s, p, s.zk[p], pos), None
    for p in sorted(assigned - held.keys()):
        start = s.kafka[p]
        problem = None
        if start > s.delivered[p] + 1:
            problem = f"p{p}: offsets {s.delivered[p] + 1}..{start - 1} never delivered (m{i} starts at {start})"
        elif start != s.newest[p]:
            problem = f"p{p}: m{i} starts at {start}, not at the committed {s.newest[p]}"
        holds = tuple(sorted((*m.holds, (p, start))))
        yield f"m{i} (broker) starts p{p} at Kafka's {start}", put(s, i, m._replace(holds=holds)), problem
    if s.kills > 0:
        dead = m._replace(alive=False, holds=())
        yield f"m{i} (broker) killed", put(s, i, dead)._replace(kills=s.kills - 1), None
