"""The JSON API's documents from a published view (pure): /v1/groups, a group's status, partitions, overview and history."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from zkconsumer.admin import OWNERSHIP_NAMES, LagStatus, Ownership, age_text, group_why, status_report
from zkconsumer.exporter.advice import what_to_do
from zkconsumer.exporter.history import LagHistory
from zkconsumer.exporter.view import GroupState, ViewState

JSON = "application/json"
Answer = tuple[int, str, bytes]  # HTTP status, content type, body
Members = Callable[[str], list[dict[str, Any]]]  # group -> its registrations (Registrations.members)
STATUSES = [s.name for s in LagStatus]  # index: LagStatus value
OWNERSHIPS = [OWNERSHIP_NAMES[o] for o in Ownership]  # index: the overview's ownership codes
MAX_REASONS = 50  # the overview lists this many partition reasons; the grid shows every status


def groups_doc(state: ViewState, health: dict[str, Any]) -> dict[str, Any]:
    """`/v1/groups`: every group with its status, in a line each."""
    return {
        "error": False,
        "message": "groups",
        "refreshed_at_ms": state.at_ms,
        "interval_s": state.interval_s,
        "log_ends_unavailable": state.log_ends_reason,
        "exporter": health,
        "groups": [_summary(group) for _, group in sorted(state.groups.items())],
        "unreadable_groups": [{"group": g, "error": why} for g, why in sorted(state.unreadable.items())],
        "expired_groups": list(state.expired),
    }


def _summary(group: GroupState) -> dict[str, Any]:
    verdict = group.verdict
    return {
        "group": group.name,
        "status": verdict.status.name,
        "why": group_why(verdict),
        "members": len(group.window.last_meta.member_kinds),  # not group.last: that rebuilds a whole sample
        "partitions": len(verdict.partitions),
        "unowned_partitions": sum(1 for v in verdict.partitions.values() if v.ownership is Ownership.UNOWNED),
        "unseen_partitions": sum(1 for v in verdict.partitions.values() if v.unseen),
        "total_lag": verdict.total_lag,
    }


def status_doc(state: ViewState, group: GroupState) -> dict[str, Any]:
    """`/v1/groups/<group>/status`: `groups status --json`'s document over the exporter's window,
    with the members' kinds, the newest commit and the nodes that could not be decoded."""
    samples = [s.sample for s in group.samples]
    report = status_report(group.name, group.verdict, samples, interval_s=state.interval_s)
    last = group.last
    return {
        "error": False,
        "message": "group status",
        **report,
        "member_kinds": dict(last.member_kinds),
        "last_commit_ms": last.last_commit_ms,
        "problems": list(last.problems),
    }


def partitions_doc(state: ViewState, group: GroupState) -> dict[str, Any]:
    """`/v1/groups/<group>/partitions`: the status document's partition rows alone."""
    report = status_doc(state, group)
    return {"error": False, "message": "group partitions", "group": group.name, "partitions": report["partitions"]}


def overview_doc(state: ViewState, group: GroupState, members: Members | None) -> dict[str, Any]:
    """`/v1/groups/<group>/overview`: what the web page shows of a group, in columns per topic (a
    group of 4,096 partitions is ~100 KB): the owner of each partition as an index into `owners`,
    its lag, committed offset, log end, status (index into `statuses`), ownership (index into
    `ownerships`) and lag in seconds; the members with their kinds and registrations; the
    verdict's reasons (the first MAX_REASONS) and what to do."""
    verdict, last = group.verdict, group.last
    kinds = dict(last.member_kinds)
    owners: list[str] = []
    owner_index: dict[str, int] = {}
    topics: dict[str, dict[str, list[Any]]] = {}
    ownership_code = {o: i for i, o in enumerate(Ownership)}
    for (topic, partition), v in sorted(verdict.partitions.items()):
        seen = last.sample.partitions.get((topic, partition))
        owner = seen.owner if seen is not None else None
        index = -1
        if owner is not None:
            index = owner_index.setdefault(owner, len(owners))
            if index == len(owners):
                owners.append(owner)
        columns = topics.setdefault(topic, {k: [] for k in _COLUMNS})
        columns["partition"].append(partition)
        columns["owner"].append(index)
        columns["lag"].append(v.lag)
        columns["committed"].append(seen.committed if seen is not None else None)
        columns["log_end"].append(seen.log_end if seen is not None else None)
        columns["status"].append(int(v.status))
        columns["ownership"].append(ownership_code[v.ownership])
        columns["lag_seconds"].append(age_text(v.age))
    registered = {m["id"]: m for m in (members(group.name) if members is not None else [])}
    member_rows = [{**registered.get(cid, {"id": cid}), "kind": kinds.get(cid, "scala")} for cid in sorted(kinds)]
    flagged = list(verdict.reasons)
    return {
        "error": False,
        "message": "group overview",
        "group": group.name,
        "status": verdict.status.name,
        "why": group_why(verdict),
        "reasons": flagged[:MAX_REASONS],
        "reasons_left_off": max(0, len(flagged) - MAX_REASONS),
        "what_to_do": what_to_do(group.name, verdict, list(kinds), last.problems),
        "problems": list(last.problems),
        "refreshed_at_ms": state.at_ms,
        "interval_s": state.interval_s,
        "samples": len(group.window.metas),  # not group.samples: that rebuilds every sample of the window
        "total_lag": verdict.total_lag,
        "last_commit_ms": last.last_commit_ms,
        "log_ends_unavailable": state.log_ends_reason,
        "members": member_rows,
        "owners": owners,
        "statuses": STATUSES,
        "ownerships": OWNERSHIPS,
        "topics": [{"topic": t, **columns} for t, columns in topics.items()],
    }


_NO_POINTS: dict[str, Any] = {"at_ms": [], "lag": [], "max_lag_seconds": [], "status": []}
_COLUMNS = ("partition", "owner", "lag", "committed", "log_end", "status", "ownership", "lag_seconds")


def history_doc(group: str, points: dict[str, Any]) -> dict[str, Any]:
    """`/v1/groups/<group>/history`: the group's lag over the last hour from the exporter's refreshes."""
    return {"error": False, "message": "group history", "group": group, "statuses": STATUSES, **points}


def answer(
    path: str,
    state: ViewState,
    health: dict[str, Any],
    history: LagHistory | None = None,
    members: Members | None = None,
) -> Answer | None:
    """The answer to a GET of `path` under /v1, None when no route matches (the server's 404)."""
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    if parts == ["v1", "refreshed"]:  # the page asks this twice a second: anything new since it drew?
        return _ok({"refreshed_at_ms": state.at_ms, "interval_s": state.interval_s})
    if parts[:2] != ["v1", "groups"]:
        return None
    if len(parts) == 2:
        return _ok(groups_doc(state, health))
    if len(parts) != 4 or parts[3] not in ("status", "partitions", "overview", "history"):
        return None
    group = state.groups.get(parts[2])
    if group is None:
        known = "no refresh yet" if not state.at_ms else f"{len(state.groups)} groups watched"
        return _error(404, f"unknown group {parts[2]!r} ({known})")
    if parts[3] == "overview":
        return _ok(overview_doc(state, group, members))
    if parts[3] == "history":
        # A group the view just found has no point until its refresh has been recorded: no columns yet.
        points = history.points(group.name) if history is not None else None
        if points is None:
            step = history.step_s if history is not None else state.interval_s
            points = {**_NO_POINTS, "span_s": history.span_s if history is not None else 0.0, "step_s": step}
        return _ok(history_doc(group.name, points))
    return _ok(status_doc(state, group) if parts[3] == "status" else partitions_doc(state, group))


def _ok(doc: dict[str, Any]) -> Answer:
    return 200, JSON, json.dumps(doc, separators=(",", ":")).encode()


def _error(code: int, message: str) -> Answer:
    return code, JSON, json.dumps({"error": True, "message": message}).encode()
