"""What `zkconsumer migrate` prints: the tables and lines for people, the --json documents for scripts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zkconsumer.cli.output.render import TextTable
from zkconsumer.migration import (
    EQUAL,
    NO_OFFSET,
    REFUSE_OUT_OF_RANGE,
    REFUSE_OWNED,
    REFUSE_REWIND,
    SCALA,
    TARGET_ONLY,
    UNKNOWN_PARTITION,
    ZKCONSUMER,
    DirectionPlan,
    KafkaSide,
    Move,
    PartitionRow,
    Step,
    SwitchPlan,
    ZkSide,
)
from zkconsumer.partitions import TopicPartition

STORE = {"kafka": "Kafka", "zookeeper": "ZooKeeper"}
NUMBERS = frozenset(
    {"PARTITION", "ZK-OFFSET", "KAFKA-OFFSET", "LOG-START", "LOG-END", "ZK-LAG", "KAFKA-LAG", "SOURCE", "TARGET", "NEW"}
)


def _total(values: Iterable[int | None]) -> int:
    return sum(v for v in values if v is not None)


def zookeeper_dict(zk: ZkSide, rows: list[PartitionRow]) -> dict[str, Any]:
    return {
        "members": [{"consumer_id": cid, "kind": kind} for cid, kind in sorted(zk.members.items())],
        "owned_partitions": len([r for r in rows if r.zookeeper_owner is not None]),
        "offsets": len([r for r in rows if r.zookeeper_offset is not None]),
        "total_lag": _total(r.zookeeper_lag for r in rows),
        "ingest_topics": list(zk.ingest_topics),
    }


def kafka_dict(kafka: KafkaSide, rows: list[PartitionRow]) -> dict[str, Any]:
    return {
        "state": kafka.state,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "assignment": [{"topic": t, "partition": p} for t, p in m.assignment],
            }
            for m in kafka.members
        ],
        "offsets": len([r for r in rows if r.kafka_offset is not None]),
        "total_lag": _total(r.kafka_lag for r in rows),
    }


def plan_document(
    group: str,
    step: Step,
    zk: ZkSide,
    kafka: KafkaSide,
    rows: list[PartitionRow],
    plans: Mapping[str, DirectionPlan],
    asked: str,
) -> dict[str, Any]:
    """`migrate plan --json`."""
    return {
        "group": group,
        "step": step.as_dict(),
        "zookeeper": zookeeper_dict(zk, rows),
        "kafka": kafka_dict(kafka, rows),
        "partitions": [r.as_dict() for r in rows],
        "to_kafka": plans["kafka"].as_dict(),
        "to_zookeeper": plans["zookeeper"].as_dict(),
        "asked": asked,
        "blocked": plans[asked].blocked,
    }


def _kinds(zk: ZkSide) -> str:
    counts = [(kind, sum(k == kind for k in zk.members.values())) for kind in (ZKCONSUMER, SCALA)]
    return ", ".join(f"{n} {kind}" for kind, n in counts if n)


def plan_report(
    group: str, step: Step, zk: ZkSide, kafka: KafkaSide, rows: list[PartitionRow], plans: Mapping[str, DirectionPlan]
) -> list[TextTable | str]:
    """`migrate plan` for people: the step, both sides, the partitions, each direction's blockers."""
    z, k = zookeeper_dict(zk, rows), kafka_dict(kafka, rows)
    out: list[TextTable | str] = [
        f"Group {group}: step {step.name} ({step.detail})",
        f"ZooKeeper: {len(zk.members)} members"
        + (f" ({_kinds(zk)})" if zk.members else "")
        + f", {z['owned_partitions']} partitions owned, {z['offsets']} offsets, total lag {z['total_lag']}"
        + (f", Spark ingest running for {', '.join(zk.ingest_topics)}" if zk.ingest_topics else ""),
        f"Brokers: group {kafka.state}, {len(kafka.members)} members, {k['offsets']} offsets, "
        f"total lag {k['total_lag']}",
        "",
    ]
    actions = {target: {m.key: m.action for m in plan.moves} for target, plan in plans.items()}
    table = TextTable(
        [
            "TOPIC",
            "PARTITION",
            "ZK-OFFSET",
            "KAFKA-OFFSET",
            "LOG-START",
            "LOG-END",
            "ZK-LAG",
            "KAFKA-LAG",
            "ZK-OWNER",
            "KAFKA-MEMBER",
            "TO-KAFKA",
            "TO-ZOOKEEPER",
        ],
        right_aligned=NUMBERS,
    )
    for r in rows:
        key = (r.topic, r.partition)
        table.add(
            [
                r.topic,
                r.partition,
                r.zookeeper_offset,
                r.kafka_offset,
                r.log_start,
                r.log_end,
                r.zookeeper_lag,
                r.kafka_lag,
                r.zookeeper_owner,
                r.kafka_member,
                actions["kafka"].get(key),
                actions["zookeeper"].get(key),
            ]
        )
    # show() puts a blank line after every table but the last.
    out += [table] if rows else ["No partition has an offset, an owner or a broker member.", ""]
    if zk.members:
        members = TextTable(["CONSUMER-ID", "KIND"], title="ZooKeeper members")
        for cid, kind in sorted(zk.members.items()):
            members.add([cid, kind])
        out.append(members)
    if kafka.members:
        broker = TextTable(["MEMBER-ID", "CLIENT-ID", "HOST", "PARTITIONS"], title="Broker members")
        for m in kafka.members:
            broker.add([m.member_id, m.client_id, m.host, ",".join(f"{t}-{p}" for t, p in m.assignment)])
        out.append(broker)
    for plan in plans.values():
        out += direction_lines(plan)
    out.append(f"Next: {step.next}")
    return out


def switch_lines(plan: SwitchPlan) -> list[str]:
    """`migrate plan`'s live switch section: the step the switch node says, the next one and what blocks it."""
    if plan.next is None:
        return [f"Live switch: step {plan.step}, complete (the brokers coordinate the group)"]
    head = f"Live switch: step {plan.step}, next {plan.next}"
    lines = [head + (", blocked:" if plan.blockers else ", no blocker")]
    for b in plan.blockers:
        shown = ", ".join(f"{t}-{p}" for t, p in b.partitions[:10])
        more = f" and {len(b.partitions) - 10} more" if len(b.partitions) > 10 else ""
        lines.append(f"  BLOCKER {b.code}: {b.message}" + (f": {shown}{more}" if shown else ""))
    return lines


def switch_dict(plan: SwitchPlan) -> dict[str, Any]:
    """`migrate plan --json`'s `switch` object (present only when the group has a switch node)."""
    return {
        "step": plan.step,
        "next": plan.next,
        "blocked": bool(plan.blockers),
        "blockers": [b.as_dict() for b in plan.blockers],
    }


def direction_lines(plan: DirectionPlan) -> list[str]:
    source, target = STORE[plan.source], STORE[plan.target]
    head = f"--to {plan.target} ({source} -> {target}): {len(plan.writes)} offsets to copy"
    lines = [head + (", blocked:" if plan.blocked else ", no blocker")]
    lines += [
        f"  BLOCKER {b.code}: {b.message}" + (f" (override: {b.override})" if b.override else "") for b in plan.blockers
    ]
    lines += [f"  OVERRIDDEN {b.code} ({b.override}): {b.message}" for b in plan.overridden]
    advice = plan.start_advice()
    if advice:
        lines.append(f"  NOTE: {advice}")
    return lines


def status_of(move: Move, statuses: Mapping[TopicPartition, str], executed: bool) -> str:
    """Per row: planned, unchanged, refused (by the plan), or what --execute did."""
    if move.key in statuses:
        return statuses[move.key]
    if move.action in (REFUSE_REWIND, REFUSE_OUT_OF_RANGE, REFUSE_OWNED):
        return "refused"
    if move.action in (EQUAL, TARGET_ONLY, UNKNOWN_PARTITION, NO_OFFSET):
        return "unchanged"
    return "written" if executed else "planned"


def offsets_document(
    plan: DirectionPlan, step: Step, statuses: Mapping[TopicPartition, str], executed: bool, error: str | None
) -> dict[str, Any]:
    """`migrate offsets --json`."""
    doc = {
        "group": plan.group,
        "step": step.as_dict(),
        **plan.as_dict(),
        "executed": executed,
        "verified": (error is None) if executed else None,
    }
    doc["partitions"] = [{**m.as_dict(), "status": status_of(m, statuses, executed)} for m in plan.moves]
    if error is not None:
        doc["error"] = error
    return doc


def offsets_report(
    plan: DirectionPlan, step: Step, statuses: Mapping[TopicPartition, str], executed: bool
) -> list[TextTable | str]:
    """`migrate offsets` for people: one row per partition, then the blockers."""
    out: list[TextTable | str] = [
        f"Group {plan.group}: {STORE[plan.source]} -> {STORE[plan.target]} (step {step.name}: {step.detail})"
    ]
    table = TextTable(
        ["TOPIC", "PARTITION", "SOURCE", "TARGET", "NEW", "LOG-START", "LOG-END", "ACTION", "STATUS"],
        right_aligned=NUMBERS,
    )
    for m in plan.moves:
        status = status_of(m, statuses, executed)
        note = f" ({m.note})" if m.note else ""
        fine = status in ("planned", "unchanged", "written")
        style = "green" if status == "written" else (None if fine else "red")
        table.add(
            [m.topic, m.partition, m.source, m.target, m.new, m.log_start, m.log_end, m.action + note, status],
            style=style,
        )
    out.append(table if plan.moves else f"Neither store holds an offset of group {plan.group}.")
    if plan.blockers or plan.overridden or plan.start_advice():
        out += ([] if plan.moves else [""]) + direction_lines(plan)[1:]
    return out


def blocked_message(plan: DirectionPlan) -> str:
    """The one error line of a blocked copy."""
    parts = [b.code + (f" (override: {b.override})" if b.override else " (no override)") for b in plan.blockers]
    return (
        f"refusing to copy group {plan.group}'s offsets to {STORE[plan.target]}, nothing written: "
        + ", ".join(parts)
        + " (see BLOCKER lines)"
    )


def summary(plan: DirectionPlan, executed: bool) -> str:
    target, count = STORE[plan.target], len(plan.writes)
    if not count:
        return f"Nothing to copy: {target} already holds every offset the source has (or keeps its own)."
    if executed:
        return f"{count} offsets written to {target} and read back as written."
    return f"{count} offsets would be copied to {target}; nothing was written. Re-run with --execute to write them."
