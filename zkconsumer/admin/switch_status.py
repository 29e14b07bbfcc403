"""Where a group's live switch stands (docs/live-switch.md): the switch node, the members' markers, and what blocks the next step."""

from __future__ import annotations

import json
from collections.abc import Mapping

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.migration_evidence import Evidence
from zkconsumer.migration import ZKCONSUMER, SwitchMember, SwitchPlan, decode_switch_node, plan_switch
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.reads import get_many


@admin_errors
def live_switch_plan(client: KazooClient, evidence: Evidence) -> SwitchPlan | None:
    """The live switch's plan when the group has a switch node, None when it has none (the group has
    never been switched: `migrate plan` then says nothing of it). A switch node no zkconsumer wrote
    raises SwitchNodeError naming it."""
    group = evidence.zk.group
    path = znodes.switch_path(group)
    found = get_many(client, {"switch": path})
    if "switch" not in found:
        return None
    step = decode_switch_node(found["switch"][0], path)
    members = switch_members(client, evidence)
    return plan_switch(
        step,
        members,
        evidence.zk.owners,
        evidence.zk.offsets,
        evidence.kafka,
        tuple(evidence.partitions),
        ingest_topics=evidence.zk.ingest_topics,
    )


def switch_members(client: KazooClient, evidence: Evidence) -> tuple[SwitchMember, ...]:
    """The group's registered members as the switch sees them, read now beside `evidence`."""
    group = evidence.zk.group
    # evidence.zk.members already says whose marker is held by the member's own session: only those
    # markers speak for the member; any other registration is a Scala member (or a library like it).
    ours = [cid for cid, kind in evidence.zk.members.items() if kind == ZKCONSUMER]
    markers = get_many(client, {cid: znodes.zkconsumer_member_path(group, cid) for cid in ours})
    return tuple(
        SwitchMember(cid, _marker(markers[cid][0]) if cid in markers else None)
        for cid in sorted(evidence.zk.members)
        # a marker gone between the two reads: the member left (or re-registers); leave it to the next read
        if cid not in ours or cid in markers
    )


def _marker(data: bytes) -> Mapping[str, object]:
    """A marker's JSON; one that is not a JSON object still marks a zkconsumer member, one without the
    switch protocol (the planner calls it an older zkconsumer, which is what it can only be)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
