"""Pure: the plan to make every member of a group rebalance (the nudge it writes, the owner nodes and registrations that would defeat it).

Why a nudge of `/consumers/<group>/ids` (checked against ZookeeperConsumerConnector.scala
0.8.2.2-1.1.1): every Scala member subscribes a zkclient child listener (ZKRebalancerListener) to
the ids folder in reinitializeConsumer and never unsubscribes it; zkclient re-arms the watch on
every event, and handleChildChange only sets the flag the `<consumerId>_watcher_executor` thread
waits on, which then runs syncedRebalance. That thread catches ConsumerRebalanceFailedException
and keeps waiting, so a member that gave up after rebalance.max.retries still rebalances on the
next change of the ids' children. zkconsumer members watch the same folder (membership.py).

The other triggers are worse: a data change of `/brokers/topics/<t>` wakes every group reading
the topic and is the controller's node; expiring or deleting a member's node is the restart this
avoids. The nudge creates one ephemeral child and deletes it in the same transaction, so no
member ever reads it (they re-read the children after the event and find the list unchanged).
Its data is still a registration every release parses as a member with no threads
(TopicCount.constructTopicCount: an empty subscription map is a StaticTopicCount whatever the
pattern; the assignors only read the threads per topic, so it changes no assignment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zkconsumer.zookeeper import znodes


@dataclass(frozen=True)
class MemberFacts:
    """A registered member: the session holding its node, its threads per topic, why Scala cannot read it."""

    consumer_id: str
    session: int
    threads: Mapping[str, int]  # topic -> thread count
    zkconsumer: bool = False  # marked itself under /consumers/<g>/zkconsumer/members
    problem: str | None = None  # its registration cannot be read, or makes Scala's assignors throw


@dataclass(frozen=True)
class OwnerFacts:
    """An owner node: the thread id it holds (None: not one) and the session holding it."""

    thread_id: str | None
    session: int  # 0: a persistent node, held by no session
    czxid: int = 0
    version: int = 0


@dataclass(frozen=True)
class UnstickBlocker:
    """A node that would make the members' rebalance fail again; never deleted here (a live session holds it)."""

    node: str
    reason: str
    remedy: str

    def line(self) -> str:
        return f"{self.node}: {self.reason}; {self.remedy}"


@dataclass
class UnstickPlan:
    """What `groups rebalance` found and would do; `blockers` empty means it may nudge."""

    group: str
    members: dict[str, MemberFacts]
    partitions: dict[str, list[int]]  # subscribed topic -> partitions
    owners: dict[tuple[str, int], OwnerFacts]
    blockers: list[UnstickBlocker] = field(default_factory=list)
    nudge_parent: str = ""
    # persistent owner nodes to delete before the nudge: (path, the version the plan read)
    persistent_owners: list[tuple[str, int]] = field(default_factory=list)

    @property
    def unowned(self) -> list[tuple[str, int]]:
        return [(t, p) for t, ps in sorted(self.partitions.items()) for p in ps if (t, p) not in self.owners]

    @property
    def partition_count(self) -> int:
        return sum(len(ps) for ps in self.partitions.values())

    def owned_by(self, consumer_id: str) -> int:
        return sum(1 for o in self.owners.values() if owner_member(o) == consumer_id)

    def idle_members(self) -> list[str]:
        """Members with threads that own nothing: the ones a failed rebalance left idle, if any is unowned."""
        return [cid for cid, m in sorted(self.members.items()) if sum(m.threads.values()) and not self.owned_by(cid)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "members": [
                {
                    "consumer_id": m.consumer_id,
                    "kind": "zkconsumer" if m.zkconsumer else "scala",
                    "session": f"0x{m.session:x}",
                    "threads": sum(m.threads.values()),
                    "owned_partitions": self.owned_by(m.consumer_id),
                    "problem": m.problem,
                }
                for m in sorted(self.members.values(), key=lambda m: m.consumer_id)
            ],
            "partitions": self.partition_count,
            "unowned": [f"{t}-{p}" for t, p in self.unowned],
            "idle_members": self.idle_members(),
            "nudge": self.nudge_parent,
            "delete_persistent_owners": [path for path, _version in self.persistent_owners],
            "blockers": [{"node": b.node, "reason": b.reason, "remedy": b.remedy} for b in self.blockers],
        }


def owner_member(owner: OwnerFacts) -> str | None:
    """The consumer id of the thread an owner node holds; None if it holds no thread id."""
    if owner.thread_id is None:
        return None
    try:
        return znodes.consumer_id_of_thread(owner.thread_id)
    except ValueError:
        return None


def plan_unstick(
    group: str,
    members: Mapping[str, MemberFacts],
    partitions: Mapping[str, list[int]],
    owners: Mapping[tuple[str, int], OwnerFacts],
    *,
    delete_persistent: bool = False,
) -> UnstickPlan:
    """The plan, with every blocker: a registration Scala members cannot use (each of their
    rebalances fails on it), and an owner node of a subscribed partition held by a session that
    is no registered member's (no member releases it, so the member assigned the partition fails
    its claim and, after its retries, gives up again). Both are held by live sessions (ephemeral),
    so they are reported with what to do, never deleted.

    An owner node no session holds (ephemeralOwner 0: created persistent, e.g. restored by a
    ZooKeeper copy tool) would block the group for good, since no session's end removes it: it
    is a blocker naming --delete-persistent-owners, or, with `delete_persistent`, a node the
    plan deletes before the nudge if it is unchanged (its version)."""
    plan = UnstickPlan(
        group,
        dict(members),
        {t: sorted(ps) for t, ps in partitions.items()},
        dict(owners),
        nudge_parent=znodes.ids_path(group),
    )
    if not members:
        plan.blockers.append(
            UnstickBlocker(
                znodes.ids_path(group),
                "has no children: the group has no registered member to rebalance",
                "start the group's consumers (their first rebalance claims the partitions)",
            )
        )
    for cid, member in sorted(members.items()):
        if member.problem is not None:
            plan.blockers.append(
                UnstickBlocker(
                    znodes.member_path(group, cid),
                    f"{member.problem}: every Scala member's rebalance fails while it is registered",
                    f"not deleted (session 0x{member.session:x} holds it): stop or fix the consumer {cid}",
                )
            )
    sessions = {m.session: cid for cid, m in members.items()}
    for (topic, partition), owner in sorted(owners.items()):
        if partition not in plan.partitions.get(topic, []):
            continue
        path = znodes.owner_path(group, topic, partition)
        if owner.session == 0:
            if delete_persistent:
                plan.persistent_owners.append((path, owner.version))
                continue
            plan.blockers.append(
                UnstickBlocker(
                    path,
                    f"holds {owner.thread_id!r} as a persistent node (ephemeralOwner 0: made outside a session, "
                    "e.g. restored by a ZooKeeper copy tool): no session holds it, ZooKeeper never removes it, "
                    f"and the member assigned {topic}-{partition} cannot claim it",
                    "run again with --delete-persistent-owners: it is deleted before the nudge, only if "
                    "unchanged since this plan",
                )
            )
            continue
        holder = sessions.get(owner.session)
        if holder is not None:
            continue  # a member's own node: that member releases it when it rebalances
        named = owner_member(owner)
        if named is None:
            why = f"holds {owner.thread_id!r}, no thread id, in session 0x{owner.session:x}"
        elif named in members:
            why = (
                f"held by session 0x{owner.session:x}, not the session of {named}'s registration "
                f"(0x{members[named].session:x}): a node left by its earlier session"
            )
        else:
            why = f"owned by {owner.thread_id}, no registered member, in session 0x{owner.session:x}"
        plan.blockers.append(
            UnstickBlocker(
                path,
                f"{why}; the member assigned {topic}-{partition} cannot claim it",
                f"not deleted (a live session holds it): stop the process of session 0x{owner.session:x}, "
                "or wait until ZooKeeper expires that session, then run this again",
            )
        )
    return plan
