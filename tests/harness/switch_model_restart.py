"""The live switch's last step as switch_model sees it: a member restarted with zkconsumer.coordination=broker once the node says `broker`.

docs/live-switch.md: "the last step off ZooKeeper is a rolling restart with
zkconsumer.coordination=broker". The restarted process is a broker-coordinated member
(zkconsumer/broker_coordination/member.py): it delivers what the brokers assign it, from Kafka's
committed offset, and commits to Kafka only; it knows no owner node. The members not yet
restarted stay ZooKeeper-mode members at `broker` (switch_model), whose seats learn of each
reassignment; a seat's revocation (ShadowGroupMember._on_revoke) only triggers the member's
next rebalance attempt, it does not wait for that member to stop delivering.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.switch_model import (
    BROKER,
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
    """The operator's restarts at `broker`, and the restarted members' own steps."""
    for i, m in enumerate(s.members):
        if m.broker_mode:
            yield from _broker_member_steps(s, i, m, config)
        elif m.alive and s.step == BROKER and s.restarts > 0 and s.command is None:
            yield _restart(s, i, m)


def _restart(s: State, i: int, m: Member) -> Step:
    """A clean shutdown (the final commit, ZooKeeper then Kafka through the seat; the session closes,
    taking the owner nodes and the registration; the seat leaves), then the same process back as a
    broker-coordinated member: a new member of the brokers' group."""
    t = s
    for p, pos in m.holds:
        if s.owner[p] == i:
            t = commit(t, p, pos, pos if accepts(s, i) else t.kafka[p])
    owner = tuple(NONE if o == i else o for o in s.owner)
    restarted = Member(registered=False, step=BROKER, acked=BROKER, broker_mode=True)
    t = regroup(put(t, i, restarted)._replace(owner=owner, restarts=s.restarts - 1), s.group | {i})
    return f"m{i} restarted with coordination=broker", t, None


def _broker_member_steps(s: State, i: int, m: Member, config: Config) -> Iterator[Step]:
    if not m.alive:
        if i in s.group:  # the brokers' session timeout
            yield f"m{i}'s broker member times out (dead)", regroup(s, s.group - {i}), None
        return
    if i in s.group and not m.current:
        got = broker_assignment(s, config.partitions).get(i, frozenset())
        yield f"m{i} (broker) is assigned {sorted(got)}", put(s, i, m._replace(current=True, assigned=got)), None
    assigned = m.assigned or frozenset()
    held = dict(m.holds)
    for p, pos in m.holds:
        if pos < config.messages:
            yield deliver(s, i, m, p, pos)
        if s.kafka[p] != pos and accepts(s, i):
            yield f"m{i} (broker) commits p{p}={pos} to Kafka", commit(s, p, s.zk[p], pos), None
        if p not in assigned:  # revoked: it stops
            rest = tuple((q, o) for q, o in m.holds if q != p)
            yield f"m{i} (broker) stops p{p}", put(s, i, m._replace(holds=rest)), None
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
