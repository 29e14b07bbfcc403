"""Un-stick a group: read its plan from ZooKeeper, nudge its ids folder so every member (Scala ones too) rebalances, wait for every partition to have an owner.

Why the nudge works: the plan's module. Nothing here deletes or changes a node that
exists: the one write is a transaction that creates a child of `/consumers/<group>/ids` and
deletes it again, which no reader ever sees.

Example::

    client = connect("zk:2181/kafka", session_timeout_s=10, connect_timeout_s=10)
    plan = read_plan(client, "billing")
    if not plan.blockers:
        result = unstick(client, plan, timeout_s=60)
        print(result.owned_after_s)   # seconds from the nudge until every partition had an owner
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.unstick_plan import (
    MemberFacts,
    OwnerFacts,
    UnstickPlan,
    owner_member,
    plan_unstick,
)
from zkconsumer.cluster.broker_nodes import decode_topic_partitions
from zkconsumer.coordinator.peers import registration_problem
from zkconsumer.coordinator.subscription import from_registration, thread_ids_for
from zkconsumer.errors import AdminRefused, AdminUnavailable, UnknownGroup, ZkDataError
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.nudge import NudgeOutcomeUnknown, nudge_group
from zkconsumer.zookeeper.watched import Entry, WatchedFolder
from zkconsumer.zookeeper.znodes import Registration

SETTLE_S = 2.0  # owners unchanged this long after every partition has one: the members are done
POLL_S = 0.05


@dataclass
class UnstickResult:
    """What the nudge did: its child, the zxid the members' watches fired at, and the owners after."""

    nudged: str  # the path created and deleted
    zxid: int  # the ids folder's pzxid right after the nudge
    owners: dict[tuple[str, int], OwnerFacts]
    unowned: list[tuple[str, int]]
    owned_after_s: float | None  # None: some partition still had no owner at the timeout
    waited_s: float
    claimed: dict[str, int] = field(default_factory=dict)  # consumer id -> owner nodes created after the nudge

    def as_dict(self) -> dict[str, Any]:
        return {
            "nudged": self.nudged,
            "zxid": f"0x{self.zxid:x}",
            "owned_after_s": None if self.owned_after_s is None else round(self.owned_after_s, 3),
            "waited_s": round(self.waited_s, 3),
            "unowned": [f"{t}-{p}" for t, p in self.unowned],
            "claimed_after_nudge": dict(sorted(self.claimed.items())),
        }


@admin_errors
def read_plan(
    client: KazooClient,
    group: str,
    *,
    exclude_internal: bool = True,
    request_timeout_s: float = 10.0,
    identity: str = "this client",
    delete_persistent: bool = False,
) -> UnstickPlan:
    """The group's members, subscribed partitions and their owner nodes, and the plan over them
    (UnknownGroup if /consumers/<group> does not exist). Every ZooKeeper request waits at most
    `request_timeout_s`; `identity` is who we are to ZooKeeper, named if it refuses us."""
    io = ZkIO(client, timeout_s=request_timeout_s, identity=identity)
    if io.exists(znodes.group_path(group)) is None:
        raise UnknownGroup(f"unknown group {group!r}: no {znodes.group_path(group)}")
    all_topics = _children(io, znodes.BROKER_TOPICS)
    marked = set(_children(io, znodes.zkconsumer_members_path(group)))
    members = {
        cid: _member(group, cid, data, stat.ephemeralOwner, cid in marked, all_topics, exclude_internal)
        for cid, (data, stat) in WatchedFolder(io, znodes.ids_path(group)).read().items()
    }
    topics = sorted({t for m in members.values() for t in m.threads})
    partitions = {t: _partitions(io, t) for t in topics}
    owners = _owners(group, {t: WatchedFolder(io, znodes.owners_path(group, t)) for t in topics})
    return plan_unstick(group, members, partitions, owners, delete_persistent=delete_persistent)


@admin_errors
def unstick(
    client: KazooClient,
    plan: UnstickPlan,
    *,
    timeout_s: float = 60.0,
    settle_s: float = SETTLE_S,
    request_timeout_s: float = 10.0,
    identity: str = "this client",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> UnstickResult:
    """Nudge the group's ids folder, then wait until every subscribed partition has an owner and
    the owner nodes stayed unchanged for `settle_s` (or `timeout_s` passed). Refuses a plan with
    blockers (AdminRefused): the members would only fail their claims again. ZooKeeper requests
    as read_plan's."""
    if plan.blockers:
        raise AdminRefused(f"the plan has {len(plan.blockers)} blockers: {plan.blockers[0].line()}")
    io = ZkIO(client, timeout_s=request_timeout_s, identity=identity)
    folders = {t: WatchedFolder(io, znodes.owners_path(plan.group, t)) for t in plan.partitions}
    for folder in folders.values():
        folder.read()  # watches armed before the nudge: the first reads after it cost only changes
    for path, version in plan.persistent_owners:
        try:
            io.delete(path, version)  # fenced: only the node the plan read, unchanged
        except (BadVersionError, NoNodeError):
            raise AdminRefused(
                f"{path} changed since the plan was read (nothing more deleted, no nudge): run the command again"
            ) from None
    started = clock()
    child, stat = _nudge(io, plan)
    wanted = {(t, p) for t, ps in plan.partitions.items() for p in ps}
    last: dict[tuple[str, int], int] | None = None
    complete_since: float | None = None
    while True:
        now = clock()
        owners = _owners(plan.group, folders)
        seen = {key: owner.czxid for key, owner in owners.items()}
        complete = wanted <= seen.keys()
        if seen != last:
            last, complete_since = seen, (now if complete else None)
        if complete_since is not None and now - complete_since >= settle_s:
            return _result(plan, child, stat.pzxid, owners, complete_since - started, now - started)
        if now - started >= timeout_s:
            return _result(plan, child, stat.pzxid, owners, None, now - started)
        sleep(POLL_S)


def _nudge(io: ZkIO, plan: UnstickPlan) -> tuple[str, Any]:
    try:
        return nudge_group(io, plan.group)
    except NudgeOutcomeUnknown as exc:
        raise AdminUnavailable(
            f"{exc}; look at the group (zkconsumer groups status) before running this again"
        ) from None
    except NodeExistsError:  # the text the command line gives any kazoo error it did not expect
        raise AdminUnavailable(
            f"ZooKeeper request failed: {plan.nudge_parent}: three nudge names in a row were taken"
        ) from None


def _result(
    plan: UnstickPlan,
    child: str,
    zxid: int,
    owners: dict[tuple[str, int], OwnerFacts],
    owned_after: float | None,
    waited: float,
) -> UnstickResult:
    claimed: dict[str, int] = {}
    for owner in owners.values():
        cid = owner_member(owner)
        if cid is not None and owner.czxid > zxid:
            claimed[cid] = claimed.get(cid, 0) + 1
    unowned = [(t, p) for t, ps in sorted(plan.partitions.items()) for p in ps if (t, p) not in owners]
    return UnstickResult(child, zxid, owners, unowned, owned_after, waited, claimed)


def _member(
    group: str,
    cid: str,
    data: bytes,
    session: int,
    marked: bool,
    all_topics: list[str],
    exclude_internal: bool,
) -> MemberFacts:
    try:
        registration = Registration.decode(data, znodes.member_path(group, cid))
    except ZkDataError as exc:
        return MemberFacts(cid, session, {}, marked, f"unreadable registration ({exc.reason})")
    problem = registration_problem(registration)
    if problem is not None:
        # A regex Java accepts but we cannot evaluate is no problem for Scala members: only its topics are unknown here.
        return MemberFacts(cid, session, {}, marked, None if "cannot be evaluated here" in problem else problem)
    threads = thread_ids_for(cid, from_registration(registration), all_topics, exclude_internal=exclude_internal)
    return MemberFacts(cid, session, {t: len(ids) for t, ids in threads.items()}, marked)


def _partitions(io: ZkIO, topic: str) -> list[int]:
    """The partitions in /brokers/topics/<topic> (none if it is missing or garbled, as members read it)."""
    try:
        data, _ = io.get(znodes.topic_path(topic))
        return sorted(decode_topic_partitions(data, znodes.topic_path(topic)))
    except (NoNodeError, ZkDataError):
        return []


def _owners(group: str, folders: dict[str, WatchedFolder]) -> dict[tuple[str, int], OwnerFacts]:
    out = {}
    for topic, folder in folders.items():
        for name, entry in folder.read().items():
            if name.isascii() and name.isdigit():
                out[(topic, int(name))] = _owner(znodes.owner_path(group, topic, int(name)), entry)
    return out


def _owner(path: str, entry: Entry) -> OwnerFacts:
    data, stat = entry
    try:
        thread: str | None = znodes.decode_owner(data, path)
    except ZkDataError:
        thread = None
    return OwnerFacts(thread, stat.ephemeralOwner, stat.czxid, stat.version)


def _children(io: ZkIO, path: str) -> list[str]:
    try:
        return sorted(io.children(path))
    except NoNodeError:
        return []
