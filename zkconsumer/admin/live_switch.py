"""`migrate switch`'s work: move a group's switch node step by step towards a coordination, each step written by compare-and-set once nothing blocks it."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.log_offsets import BrokerAccess, Warn, log_warning
from zkconsumer.admin.migration_evidence import gather
from zkconsumer.admin.switch_status import switch_members
from zkconsumer.errors import AdminUnavailable
from zkconsumer.migration import (
    SWITCH_REFUSALS,
    SWITCH_STEPS,
    SwitchMember,
    SwitchPlan,
    decode_switch_node,
    encode_switch_node,
    plan_switch,
    plan_switch_back,
)
from zkconsumer.zookeeper.switch_node import SwitchNode, read_switch_node, registrations_version, replace_switch_node

ZOOKEEPER, BROKER = SWITCH_STEPS[0], SWITCH_STEPS[-1]
SWITCH_TARGETS = (BROKER, ZOOKEEPER)  # `--to`
COMPLETE, REFUSED, TIMED_OUT = "complete", "refused", "timed-out"


@dataclass
class SwitchRun:
    """What one run of the switch did: the step it found and left, the steps it wrote, and the last
    plan it read (its blockers are why it stopped when `outcome` is not `complete`)."""

    group: str
    target: str
    start: str
    step: str
    plan: SwitchPlan
    outcome: str
    written: list[str] = field(default_factory=list)
    undone: str | None = None  # a step written and taken back: a registration that cannot switch raced it


@dataclass(frozen=True)
class _Read:
    """One look at the group. The registrations' version is read first, so a registration made
    after the members were read shows as a changed version when it is read again after a write."""

    registrations: int
    node: SwitchNode
    step: str
    members: tuple[SwitchMember, ...]
    plan: SwitchPlan


@admin_errors
def run_switch(
    client: KazooClient,
    access: BrokerAccess,
    group: str,
    target: str,
    *,
    timeout_s: float,
    poll_s: float = 1.0,
    on_event: Callable[[str], None] = lambda line: None,
    warn: Warn = log_warning,
) -> SwitchRun:
    """Advance `group`'s switch node one step at a time until it is at `target` (`broker`: step
    `broker`; `zookeeper`: no node), each step once `plan_switch` (or `plan_switch_back`) finds no
    blocker. A refusal (SWITCH_REFUSALS) stops at once; other blockers are waited for, re-read every
    `poll_s`, for `timeout_s` at most. Every write is a compare-and-set on the node as read; a lost
    race reads again. After a write, a changed list of registrations is read again and, if it now
    holds a member that cannot switch, the write is taken back (so a refusal leaves the node as it
    was). Run again, it continues from the node's step."""
    if target not in SWITCH_TARGETS:
        raise ValueError(f"unknown switch target {target!r}; one of {', '.join(SWITCH_TARGETS)}")
    deadline = time.monotonic() + timeout_s
    first = _read(client, access, group, target, warn)
    run = SwitchRun(group, target, first.step, first.step, first.plan, COMPLETE)
    read, waiting_for = first, ""

    def read_again() -> _Read:
        """A read once the command is under way: a broker or ZooKeeper that gives no usable answer
        (a leader moving, the coordinator restarting) is waited for, up to the deadline, rather than
        leaving the group half-way; the first read's failure is the operator's to see at once."""
        unanswered = ""
        while True:
            try:
                return _read(client, access, group, target, warn)
            except AdminUnavailable as exc:
                if time.monotonic() >= deadline:
                    raise
                if str(exc) != unanswered:
                    on_event(f"cannot read the group now ({exc}); reading again")
                    unanswered = str(exc)
                time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))

    while True:
        run.step, run.plan = read.step, read.plan
        if _arrived(read, target):
            run.outcome = COMPLETE
            return run
        if any(b.code in SWITCH_REFUSALS for b in read.plan.blockers):
            run.outcome = REFUSED
            return run
        if read.plan.blockers:
            codes = ", ".join(b.code for b in read.plan.blockers)
            if codes != waiting_for:
                on_event(f"waiting at step {read.step} for: {codes}")
                waiting_for = codes
            if time.monotonic() >= deadline:
                run.outcome = TIMED_OUT
                return run
            time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
            read = read_again()
            continue
        waiting_for = ""
        nxt = read.plan.next
        # No node means `zookeeper`: the way back ends by deleting it, so the group reads as never switched.
        data = None if nxt in (None, ZOOKEEPER) else encode_switch_node(nxt, socket.gethostname(), _now_ms())
        version = replace_switch_node(client, read.node, data)
        if version is None:
            on_event(f"{read.node.path} changed since it was read: reading again")
            read = read_again()
            continue
        written = nxt or ZOOKEEPER
        on_event(f"wrote step {written} (was {read.step})")
        after = read_again()
        # ZooKeeper's multi checks a node's data version, not its children's: the registrations are
        # checked after the write instead, and a step towards the brokers that raced one is taken back.
        if target == BROKER and after.registrations != read.registrations and _cannot_switch(after.members):
            undo = replace_switch_node(client, SwitchNode(read.node.path, data, version), read.node.data)
            run.undone = written if undo is not None else None
            on_event(
                f"took step {written} back: a member that cannot switch registered meanwhile"
                if undo is not None
                else f"could not take step {written} back: {read.node.path} changed again"
            )
            after = read_again()
        else:
            run.written.append(written)
        read = after


def _read(client: KazooClient, access: BrokerAccess, group: str, target: str, warn: Warn) -> _Read:
    registrations = registrations_version(client, group)
    evidence = gather(client, access, group, None, warn=warn)
    node = read_switch_node(client, group)
    step = decode_switch_node(node.data, node.path)
    members = switch_members(client, evidence)
    zk, partitions = evidence.zk, tuple(evidence.partitions)
    plan = (
        plan_switch(step, members, zk.owners, zk.offsets, evidence.kafka, partitions, ingest_topics=zk.ingest_topics)
        if target == BROKER
        else plan_switch_back(step, members, zk.owners, zk.offsets, evidence.kafka, partitions)
    )
    return _Read(registrations, node, step, members, plan)


def _arrived(read: _Read, target: str) -> bool:
    return read.step == BROKER if target == BROKER else read.node.data is None


def _cannot_switch(members: tuple[SwitchMember, ...]) -> bool:
    return any(m.kind != "switchable" for m in members)


def _now_ms() -> int:
    return int(time.time() * 1000)
