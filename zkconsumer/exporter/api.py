"""The JSON API's documents from a published view (pure): /v1/groups, a group's status and its partitions."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from zkconsumer.admin.status import group_why, status_report
from zkconsumer.admin.verdicts import Ownership
from zkconsumer.exporter.view import GroupState, ViewState

JSON = "application/json"
Answer = tuple[int, str, bytes]  # HTTP status, content type, body


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
    }


def _summary(group: GroupState) -> dict[str, Any]:
    verdict, last = group.verdict, group.last
    return {
        "group": group.name,
        "status": verdict.status.name,
        "why": group_why(verdict),
        "members": len(last.member_kinds),
        "partitions": len(verdict.partitions),
        "unowned_partitions": sum(1 for v in verdict.partitions.values() if v.ownership is Ownership.UNOWNED),
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


def answer(path: str, state: ViewState, health: dict[str, Any]) -> Answer | None:
    """The answer to a GET of `path` under /v1, None when no route matches (the server's 404)."""
    parts = [unquote(p) for p in path.split("?", 1)[0].strip("/").split("/")]
    if parts[:2] != ["v1", "groups"]:
        return None
    if len(parts) == 2:
        return _ok(groups_doc(state, health))
    if len(parts) != 4 or parts[3] not in ("status", "partitions"):
        return None
    group = state.groups.get(parts[2])
    if group is None:
        known = "no refresh yet" if not state.at_ms else f"{len(state.groups)} groups watched"
        return _error(404, f"unknown group {parts[2]!r} ({known})")
    return _ok(status_doc(state, group) if parts[3] == "status" else partitions_doc(state, group))


def _ok(doc: dict[str, Any]) -> Answer:
    return 200, JSON, json.dumps(doc).encode()


def _error(code: int, message: str) -> Answer:
    return code, JSON, json.dumps({"error": True, "message": message}).encode()
