"""Pure: the live switch's steps (docs/live-switch.md): the switch node's codec, who can switch, what blocks the next step."""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping
from dataclasses import dataclass

from zkconsumer.errors import ZkDataError
from zkconsumer.migration.model import Blocker, KafkaSide
from zkconsumer.partitions import TopicPartition

ZOOKEEPER, JOINING, HANDOVER, BROKER = "zookeeper", "joining", "handover", "broker"
SWITCH_STEPS = (ZOOKEEPER, JOINING, HANDOVER, BROKER)  # in order, towards the brokers
SWITCH_PROTOCOL = 1  # the members' marker field `switch.protocol` this planner understands
SWITCH_NODE_VERSION = 1
SEAT_CLIENT_SUFFIX = "-switch"  # a switching member's client.id in the brokers' group: <consumer id>-switch
# Blockers that only a person can lift (stop or upgrade a member, look at the group's Kafka offsets):
# `migrate switch` refuses on them at once; on every other blocker it waits.
SWITCH_REFUSALS = ("scala-member", "old-member", "spark-ingest", "foreign-broker-member", "kafka-ahead")


class SwitchNodeError(ZkDataError):
    """The switch node holds what no zkconsumer writes; `path` names it. Not retriable: someone must look."""

    retriable = False


def encode_switch_node(step: str, by: str, at_ms: int) -> bytes:
    """The switch node's data: which step the group is at, who wrote it, when."""
    if step not in SWITCH_STEPS:
        raise ValueError(f"unknown switch step {step!r}; one of {', '.join(SWITCH_STEPS)}")
    node = {"version": SWITCH_NODE_VERSION, "step": step, "by": by, "at": at_ms}
    return json.dumps(node, separators=(",", ":")).encode()


def decode_switch_node(data: bytes | None, path: str) -> str:
    """The step a switch node says; no node (None) is `zookeeper`. Anything else is refused, naming the node."""
    if data is None:
        return ZOOKEEPER
    try:
        node = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SwitchNodeError(path, f"not JSON ({exc})") from None
    if not isinstance(node, dict) or node.get("version") != SWITCH_NODE_VERSION:
        raise SwitchNodeError(path, f"not a version {SWITCH_NODE_VERSION} switch node: {data[:200]!r}")
    step = node.get("step")
    if step not in SWITCH_STEPS:
        raise SwitchNodeError(path, f"unknown step {step!r}; one of {', '.join(SWITCH_STEPS)}")
    return str(step)


@dataclass(frozen=True)
class SwitchMember:
    """A registered member as the switch sees it, from its registration and its zkconsumer marker.

    marker: the marker's JSON (None: no marker, i.e. a Scala member); its `switch` field, which a
    member that can switch writes: {"protocol": 1, "seen": <step>, "broker_member_id": <id or null>}.
    """

    consumer_id: str
    marker: Mapping[str, object] | None

    @property
    def kind(self) -> str:
        """`scala`, `old-zkconsumer` (no switch protocol, or an older one) or `switchable`."""
        if self.marker is None:
            return "scala"
        return "switchable" if self.protocol >= SWITCH_PROTOCOL else "old-zkconsumer"

    @property
    def _switch(self) -> Mapping[str, object]:
        found = (self.marker or {}).get("switch")
        return found if isinstance(found, Mapping) else {}

    @property
    def protocol(self) -> int:
        value = self._switch.get("protocol")
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def seen(self) -> str:
        value = self._switch.get("seen")
        return value if isinstance(value, str) and value in SWITCH_STEPS else ZOOKEEPER

    @property
    def broker_member_id(self) -> str | None:
        value = self._switch.get("broker_member_id")
        return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class SwitchPlan:
    """Where a live switch stands: the step, the next one (None: complete), and what blocks it."""

    step: str
    next: str | None
    blockers: tuple[Blocker, ...]


def plan_switch(
    step: str,
    members: tuple[SwitchMember, ...],
    owners: Mapping[TopicPartition, str],
    zk_offsets: Mapping[TopicPartition, int],
    kafka: KafkaSide,
    partitions: tuple[TopicPartition, ...],
    *,
    ingest_topics: tuple[str, ...] = (),
) -> SwitchPlan:
    """The next step towards broker coordination and every blocker of it (the command advances only
    with none). `owners`: partition -> the owning thread id (`<consumer id>-<n>`). `ingest_topics`:
    the topics a Spark ingest job of the group holds a lock for (it follows no switch)."""
    if step not in SWITCH_STEPS:
        raise ValueError(f"unknown switch step {step!r}")
    if step == BROKER:
        return SwitchPlan(step, None, ())
    nxt = SWITCH_STEPS[SWITCH_STEPS.index(step) + 1]
    blockers: list[Blocker] = []
    for kind, code, why in (
        ("scala", "scala-member", "a Scala consumer cannot switch: stop it or move it first"),
        ("old-zkconsumer", "old-member", "a zkconsumer without the switch protocol: upgrade it first"),
    ):
        named = sorted(m.consumer_id for m in members if m.kind == kind)
        if named:
            blockers.append(Blocker(code, f"{why}: {', '.join(named)}"))
    if ingest_topics:
        blockers.append(
            Blocker(
                "spark-ingest",
                f"a Spark ingest job of the group runs for {', '.join(sorted(ingest_topics))} (its lock under "
                "zkconsumer/ingest) and cannot switch: stop it first",
            )
        )
    ours = {m.broker_member_id for m in members if m.broker_member_id}
    # A member's seat joins before its marker can name it: its client id (SEAT_CLIENT_SUFFIX) says
    # whose it is, so the command waits for the marker (not-in-broker-group) rather than refusing.
    seats = {f"{m.consumer_id}{SEAT_CLIENT_SUFFIX}" for m in members if m.kind == "switchable"}
    unknown = [m for m in kafka.members if m.member_id not in ours and m.client_id not in seats]
    # A seat whose member is not registered right now (its session expired and it registers again, or
    # it was killed and the brokers drop the seat at their session timeout) is waited for, not refused.
    unregistered = sorted(
        f"{m.member_id} ({m.client_id}@{m.host})" for m in unknown if m.client_id.endswith(SEAT_CLIENT_SUFFIX)
    )
    foreign = sorted(
        f"{m.member_id} ({m.client_id}@{m.host})" for m in unknown if not m.client_id.endswith(SEAT_CLIENT_SUFFIX)
    )
    if foreign:
        blockers.append(
            Blocker("foreign-broker-member", f"the brokers' group has members that are not ours: {', '.join(foreign)}")
        )
    if unregistered:
        blockers.append(
            Blocker(
                "seat-unregistered",
                f"seats in the brokers' group whose member is not registered now: {', '.join(unregistered)}",
            )
        )
    ahead = tuple(tp for tp in partitions if tp in kafka.offsets and kafka.offsets[tp] > zk_offsets.get(tp, -1))
    if step == ZOOKEEPER and ahead:
        blockers.append(
            Blocker(
                "kafka-ahead",
                "Kafka holds offsets ahead of ZooKeeper's (an earlier use of the group id?)",
                partitions=ahead,
            )
        )
    lagging = sorted(m.consumer_id for m in members if m.kind == "switchable" and _before(m.seen, step))
    if lagging:
        blockers.append(Blocker("member-behind", f"members not yet at step {step}: {', '.join(lagging)}"))
    if nxt == HANDOVER:
        joined = {m.member_id for m in kafka.members}
        outside = sorted(m.consumer_id for m in members if m.broker_member_id not in joined)
        if outside:
            blockers.append(
                Blocker("not-in-broker-group", f"members not in the brokers' group yet: {', '.join(outside)}")
            )
        elif any(m.kind == "switchable" for m in members):  # no member: no brokers' group to settle
            blockers += _settling_blockers(kafka, partitions)
    if nxt == BROKER:
        blockers += _handover_blockers(members, owners, zk_offsets, kafka, partitions)
    return SwitchPlan(step, nxt, tuple(blockers))


def _settling_blockers(kafka: KafkaSide, partitions: tuple[TopicPartition, ...]) -> list[Blocker]:
    """Before `handover`: the brokers' group done rebalancing, every partition assigned to one seat.
    Cooperative-sticky moves a partition in two rebalances (revoked, then assigned), and a hand-over
    started between them has the members release towards an assignment about to change while their
    commits as group members are refused (ILLEGAL_GENERATION): each such release waits a back-off."""
    if kafka.state != "Stable":
        return [Blocker("broker-group-settling", f"the brokers' group is {kafka.state}, not Stable: rebalancing")]
    seats = collections.Counter(tp for m in kafka.members for tp in m.assignment)
    unsettled = tuple(tp for tp in partitions if seats[tp] != 1)
    if unsettled:
        return [
            Blocker(
                "broker-group-settling",
                "partitions the brokers' group assigns to no seat yet (a cooperative rebalance's second half)",
                partitions=unsettled,
            )
        ]
    return []


def plan_switch_back(
    step: str,
    members: tuple[SwitchMember, ...],
    owners: Mapping[TopicPartition, str],
    zk_offsets: Mapping[TopicPartition, int],
    kafka: KafkaSide,
    partitions: tuple[TopicPartition, ...],
) -> SwitchPlan:
    """The previous step, back towards ZooKeeper coordination, and every blocker of it (`next` None:
    back at `zookeeper`). Nothing is refused on the way back: ZooKeeper coordination is what every
    member, Scala's too, can run. Each step back waits until every member that can switch has acted
    on the current one (its marker says it); `handover` -> `joining` also until every partition the
    brokers assign has its owner node held again, and Kafka's committed offset equals ZooKeeper's for
    every partition, so ZooKeeper's assignment takes over from where the brokers' members delivered
    up to (a group whose members all left has Kafka's offsets copied by `migrate offsets`)."""
    if step not in SWITCH_STEPS:
        raise ValueError(f"unknown switch step {step!r}")
    if step == ZOOKEEPER:
        return SwitchPlan(step, None, ())
    previous = SWITCH_STEPS[SWITCH_STEPS.index(step) - 1]
    blockers: list[Blocker] = []
    elsewhere = sorted(m.consumer_id for m in members if m.kind == "switchable" and m.seen != step)
    if elsewhere:
        blockers.append(Blocker("member-behind", f"members not yet at step {step}: {', '.join(elsewhere)}"))
    if previous == JOINING:
        assigned = {tp for m in kafka.members for tp in m.assignment}
        unheld = tuple(tp for tp in partitions if tp in assigned and tp not in owners)
        if unheld:
            blockers.append(
                Blocker("handover-pending", "partitions the brokers assign with no owner node yet", partitions=unheld)
            )
        differ = tuple(tp for tp in partitions if zk_offsets.get(tp) != kafka.offsets.get(tp))
        if differ:
            blockers.append(Blocker("offsets-differ", "Kafka's committed offset is not ZooKeeper's", partitions=differ))
    return SwitchPlan(step, previous, tuple(blockers))


def _handover_blockers(
    members: tuple[SwitchMember, ...],
    owners: Mapping[TopicPartition, str],
    zk_offsets: Mapping[TopicPartition, int],
    kafka: KafkaSide,
    partitions: tuple[TopicPartition, ...],
) -> list[Blocker]:
    """Before `broker`: each partition's owner node held by the member the brokers assigned it to, and
    Kafka's committed offset equal to ZooKeeper's."""
    consumer_of = {m.broker_member_id: m.consumer_id for m in members if m.broker_member_id}
    assignee = {tp: consumer_of.get(m.member_id) for m in kafka.members for tp in m.assignment}
    misplaced = tuple(
        tp
        for tp in partitions
        if tp not in owners or assignee.get(tp) is None or not _owned_by(owners[tp], assignee[tp])
    )
    differ = tuple(tp for tp in partitions if zk_offsets.get(tp) != kafka.offsets.get(tp))
    out = []
    if misplaced:
        out.append(
            Blocker(
                "handover-pending",
                "partitions not yet held by the member the brokers assigned them to",
                partitions=misplaced,
            )
        )
    if differ:
        out.append(Blocker("offsets-differ", "Kafka's committed offset is not ZooKeeper's", partitions=differ))
    return out


def _owned_by(thread_id: str, consumer_id: str | None) -> bool:
    return consumer_id is not None and thread_id.rsplit("-", 1)[0] == consumer_id


def _before(seen: str, step: str) -> bool:
    return SWITCH_STEPS.index(seen) < SWITCH_STEPS.index(step)
