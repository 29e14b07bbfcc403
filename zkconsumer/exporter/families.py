"""The exporter's metric families from a published view and its health (pure), and their reference table.

Every family is declared once in FAMILIES (name, type, labels, help): the exposition is built from
it and docs/operating.md's reference table is generated from it, so the two cannot drift.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from zkconsumer.admin import OWNERSHIP_NAMES, GroupVerdict, LagAge, LagStatus, Ownership, PartitionVerdict, Record
from zkconsumer.exporter.view import GroupState, ViewState
from zkconsumer.partitions import TopicPartition

GROUP = ("group",)
PARTITION = ("group", "topic", "partition")
_ABSENT: Record = (None, None, None, None, Ownership.UNOWNED)  # a judged partition is in the last sample


@dataclass(frozen=True)
class Spec:
    name: str  # as exposed (a counter's with its _total)
    kind: str  # "gauge" | "counter"
    labels: tuple[str, ...]
    help: str


FAMILIES: tuple[Spec, ...] = (
    Spec("zkconsumer_group_status", "gauge", GROUP, "The group's verdict as Burrow's status code: 0 NOTFOUND, 1 OK, "
         "2 WARN, 3 ERR (a group is at worst ERR)"),
    Spec("zkconsumer_group_status_info", "gauge", (*GROUP, "status"), "Always 1: the group's verdict by name "
         "(why is in the JSON API and on the page: free text makes no label)"),
    Spec("zkconsumer_group_partitions_by_status", "gauge", (*GROUP, "status"), "The group's partitions by "
         "verdict: NOTFOUND, OK, WARN, ERR, STOP, STALL, REWIND (each always present)"),
    Spec("zkconsumer_group_members", "gauge", (*GROUP, "kind"), "Registered members (/consumers/<group>/ids) by "
         "kind: zkconsumer or scala"),
    Spec("zkconsumer_group_member_info", "gauge", (*GROUP, "member", "kind"), "Always 1: one registered member "
         "(its consumer id) and its kind"),
    Spec("zkconsumer_group_partitions", "gauge", GROUP, "Partitions the group has offsets or owners for or "
         "subscribes to"),
    Spec("zkconsumer_group_unowned_partitions", "gauge", GROUP, "Partitions without an owner node"),
    Spec("zkconsumer_group_unseen_partitions", "gauge", GROUP, "Partitions no broker gave a log end for at the "
         "last refresh (their lag is the last one seen, a lower bound)"),
    Spec("zkconsumer_group_lag", "gauge", GROUP, "Messages between the committed offsets and the log ends, summed "
         "over the group's partitions"),
    Spec("zkconsumer_group_max_lag_seconds", "gauge", GROUP, "The longest any partition's first unconsumed message "
         "has waited (from the exporter's own log-end samples; absent before the second sample; at most --window "
         "when it waited since before the window: see _lower_bound)"),
    Spec("zkconsumer_group_max_lag_seconds_lower_bound", "gauge", GROUP, "1 when zkconsumer_group_max_lag_seconds is "
         "only a lower bound (the message waited already at the window's first sample), 0 when exact"),
    Spec("zkconsumer_group_last_commit_timestamp_seconds", "gauge", GROUP, "When the newest offset node was "
         "written (its mtime: ZooKeeper's clock)"),
    Spec("zkconsumer_group_window_samples", "gauge", GROUP, "Samples in the window Burrow's rules judge"),
    Spec("zkconsumer_group_problems", "gauge", GROUP, "Nodes of the group that could not be decoded (each named "
         "in the JSON API's problems)"),
    Spec("zkconsumer_partition_status", "gauge", PARTITION, "The partition's verdict as Burrow's status code: 0 "
         "NOTFOUND, 1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND"),
    Spec("zkconsumer_partition_committed_offset", "gauge", PARTITION, "The offset in ZooKeeper (absent without "
         "a valid offset node)"),
    Spec("zkconsumer_partition_log_end_offset", "gauge", PARTITION, "The brokers' log-end offset (absent when "
         "no broker answered)"),
    Spec("zkconsumer_partition_lag", "gauge", PARTITION, "Messages between the committed offset and the log end "
         "(while no broker answers: the last log end seen, a lower bound)"),
    Spec("zkconsumer_partition_lag_seconds", "gauge", PARTITION, "How long the first unconsumed message has "
         "waited: exact to the refresh interval, or at least this when it waited already at the window's first "
         "sample (then at most --window; /v1 says at_least) (absent before the second sample)"),
    Spec("zkconsumer_partition_owner_info", "gauge", (*PARTITION, "owner", "ownership"), "Always 1: the owner "
         "node's thread id (empty without one) and what it means: owned, unowned, owner-gone, foreign-session"),
    Spec("zkconsumer_exporter_zookeeper_connected", "gauge", (), "1 while the exporter's ZooKeeper session is "
         "connected"),
    Spec("zkconsumer_exporter_last_refresh_timestamp_seconds", "gauge", (), "When the last successful refresh "
         "ended (alert on time() minus it; absent before the first)"),
    Spec("zkconsumer_exporter_start_time_seconds", "gauge", (), "When the exporter started (what a stale-view "
         "alert counts from before the first refresh)"),
    Spec("zkconsumer_exporter_refresh_duration_seconds", "gauge", (), "How long the last refresh took"),
    Spec("zkconsumer_exporter_refreshes_total", "counter", ("result",), "Refreshes by result: ok or failed"),
    Spec("zkconsumer_exporter_zookeeper_requests_total", "counter", (), "ZooKeeper reads the exporter sent "
         "(a refresh re-reads only what a watch said changed)"),
    Spec("zkconsumer_exporter_log_end_reads_total", "counter", (), "Log-end reads (ListOffsets requests, one "
         "per partition leader per slice of a refresh: about 2,000 partitions each)"),
    Spec("zkconsumer_exporter_groups", "gauge", (), "Groups the exporter watches"),
    Spec("zkconsumer_exporter_expired_groups", "gauge", (), "Groups left out: no member, no owner node and no "
         "commit for --expire-group-after (/v1/groups names them)"),
    Spec("zkconsumer_exporter_unseen_partitions", "gauge", (), "Partitions of the watched groups no broker gave "
         "a log end for at the last refresh (offline, leader down, brokers unreachable)"),
    Spec("zkconsumer_exporter_unreadable_groups", "gauge", (), "Groups whose nodes ZooKeeper refused to "
         "the exporter at the last refresh (NoAuth: their ACL; /v1/groups names each and why)"),
)  # fmt: skip
_BY_NAME = {spec.name: spec for spec in FAMILIES}


@dataclass(frozen=True)
class Health:
    """The exporter's own numbers at one moment."""

    connected: bool
    last_refresh_ms: int  # 0: no refresh yet
    refresh_seconds: float
    refreshes_ok: int
    refreshes_failed: int
    zookeeper_requests: int
    log_end_reads: int
    groups: int
    unreadable_groups: int = 0
    unseen_partitions: int = 0
    expired_groups: int = 0
    started_ms: int = 0


Family = GaugeMetricFamily | CounterMetricFamily


def _family(name: str) -> Family:
    spec = _BY_NAME[name]
    if spec.kind == "counter":
        return CounterMetricFamily(spec.name.removesuffix("_total"), spec.help, labels=list(spec.labels))
    return GaugeMetricFamily(spec.name, spec.help, labels=list(spec.labels))


VIEW_FAMILIES = tuple(spec for spec in FAMILIES if not spec.name.startswith("zkconsumer_exporter_"))
Add = Callable[[str, Sequence[str], float], None]  # (family, label values in the spec's order, value)


def view_families(state: ViewState) -> list[Metric]:
    """Every group and partition family of the view, as prometheus_client families."""
    out: dict[str, Family] = {spec.name: _family(spec.name) for spec in VIEW_FAMILIES}

    def add(name: str, labels: Sequence[str], value: float) -> None:
        out[name].add_metric(list(labels), value)

    _walk(state, add)
    return list(out.values())


def render_view(state: ViewState) -> Iterator[bytes]:
    """The exposition of `view_families(state)` in parts, a family each (render_parts of every
    group's group_parts)."""
    return render_parts([group_parts(group) for _name, group in sorted(state.groups.items())])


def group_parts(group: GroupState) -> tuple[str, ...]:
    """One group's lines of each VIEW_FAMILIES family, in that order: what the exporter keeps of a
    group until its state changes (exposition.GroupLines), so that a refresh of one group renders
    only its lines. The partitions' labels are built once for their six families."""
    g = _escape(group.name)
    rows = [(key, v, _partition_labels(g, *key)) for key, v in sorted(group.verdict.partitions.items())]
    one: Rows = [(group, g, rows)]
    parts = []
    for spec in VIEW_FAMILIES:
        lines: list[str] = []
        if spec.labels[-1] == "partition" or spec.name == "zkconsumer_partition_owner_info":
            _partition_lines(spec.name, one, lines)
        else:
            _group_lines(spec.name, one, lines)
        parts.append("".join(lines))
    return tuple(parts)


def view_headers() -> tuple[str, ...]:
    """The HELP and TYPE lines of each VIEW_FAMILIES family, in that order (group_parts' order)."""
    return _VIEW_HEADERS


def render_parts(groups: Sequence[tuple[str, ...]]) -> Iterator[bytes]:
    """The view's exposition from its groups' group_parts (in group order), a family at a time:
    the caller compresses each as it comes (exposition.Exposition), so one family's text lives at
    a time (at 1,000 groups of 100 partitions the whole is 54 MB)."""
    for number, header in enumerate(_VIEW_HEADERS):
        yield (header + "".join(parts[number] for parts in groups)).encode()


Rows = list[tuple[GroupState, str, list[tuple[TopicPartition, PartitionVerdict, str]]]]


def _group_lines(name: str, groups: Rows, lines: list[str]) -> None:
    """One group family's lines, as _walk adds them."""
    for group, g, _partitions in groups:
        verdict, last = group.verdict, group.window.last_meta
        if name == "zkconsumer_group_status":
            lines.append(f'{name}{{group="{g}"}} {_number(int(verdict.status))}\n')
        elif name == "zkconsumer_group_status_info":
            lines.append(f'{name}{{group="{g}",status="{verdict.status.name}"}} 1.0\n')
        elif name == "zkconsumer_group_partitions_by_status":
            for status, count in _by_status(verdict).items():
                lines.append(f'{name}{{group="{g}",status="{status}"}} {_number(count)}\n')
        elif name == "zkconsumer_group_members":
            for kind in ("zkconsumer", "scala"):
                count = sum(1 for k in last.member_kinds.values() if k == kind)
                lines.append(f'{name}{{group="{g}",kind="{kind}"}} {_number(count)}\n')
        elif name == "zkconsumer_group_member_info":
            for member, kind in sorted(last.member_kinds.items()):
                lines.append(f'{name}{{group="{g}",member="{_escape(member)}",kind="{_escape(kind)}"}} 1.0\n')
        else:
            value = _group_value(name, group)
            if value is not None:
                lines.append(f'{name}{{group="{g}"}} {_number(value)}\n')


def _group_value(name: str, group: GroupState) -> float | None:
    verdict, last = group.verdict, group.window.last_meta
    if name == "zkconsumer_group_partitions":
        return len(verdict.partitions)
    if name == "zkconsumer_group_unowned_partitions":
        return sum(1 for v in verdict.partitions.values() if v.ownership is Ownership.UNOWNED)
    if name == "zkconsumer_group_unseen_partitions":
        return sum(1 for v in verdict.partitions.values() if v.unseen)
    if name == "zkconsumer_group_lag":
        return verdict.total_lag
    if name == "zkconsumer_group_max_lag_seconds":
        oldest = _oldest_wait(verdict)
        return None if oldest is None else oldest.seconds
    if name == "zkconsumer_group_max_lag_seconds_lower_bound":
        oldest = _oldest_wait(verdict)
        return None if oldest is None else float(oldest.at_least)
    if name == "zkconsumer_group_last_commit_timestamp_seconds":
        return None if last.last_commit_ms is None else last.last_commit_ms / 1000.0
    if name == "zkconsumer_group_window_samples":
        return len(group.window.metas)
    if name == "zkconsumer_group_problems":
        return len(last.problems)
    raise AssertionError(f"no value for group family {name}")


def _partition_lines(name: str, groups: Rows, lines: list[str]) -> None:
    """One partition family's lines, as _walk adds them."""
    add = lines.append
    for group, _g, partitions in groups:
        runs = group.window.runs
        for key, v, labels in partitions:
            if name == "zkconsumer_partition_status":
                add(f"{name}{{{labels}}} {_number(int(v.status))}\n")
            elif name == "zkconsumer_partition_committed_offset":
                committed = (runs[key][-1][1] or _ABSENT)[0]
                if committed is not None:
                    add(f"{name}{{{labels}}} {_number(committed)}\n")
            elif name == "zkconsumer_partition_log_end_offset":
                log_end = (runs[key][-1][1] or _ABSENT)[2]
                if log_end is not None:
                    add(f"{name}{{{labels}}} {_number(log_end)}\n")
            elif name == "zkconsumer_partition_lag":
                if v.lag is not None:
                    add(f"{name}{{{labels}}} {_number(v.lag)}\n")
            elif name == "zkconsumer_partition_lag_seconds":
                if v.age is not None:
                    add(f"{name}{{{labels}}} {_number(v.age.seconds)}\n")
            else:
                owner = _escape((runs[key][-1][1] or _ABSENT)[3] or "")
                add(f'{name}{{{labels},owner="{owner}",ownership="{OWNERSHIP_NAMES[v.ownership]}"}} 1.0\n')


def _oldest_wait(verdict: GroupVerdict) -> LagAge | None:
    """The longest wait of a first unconsumed message the group's members are meant to read (a
    retired topic's wait for nobody), a lower bound first on a tie."""
    ages = [
        v.age for v in verdict.partitions.values() if v.age is not None and v.ownership is not Ownership.UNSUBSCRIBED
    ]
    return max(ages, key=lambda age: (age.seconds, age.at_least), default=None)


def _by_status(verdict: GroupVerdict) -> dict[str, int]:
    counts = dict.fromkeys((status.name for status in LagStatus), 0)
    for v in verdict.partitions.values():
        counts[v.status.name] += 1
    return counts


def _partition_labels(group: str, topic: str, partition: int) -> str:
    return f'group="{group}",topic="{_escape(topic)}",partition="{partition}"'


def _walk(state: ViewState, add: Add) -> None:
    for name, group in sorted(state.groups.items()):
        verdict, window = group.verdict, group.window
        last = window.last_meta
        add("zkconsumer_group_status", [name], int(verdict.status))
        add("zkconsumer_group_status_info", [name, verdict.status.name], 1)
        for status, count in _by_status(verdict).items():
            add("zkconsumer_group_partitions_by_status", [name, status], count)
        kinds = sorted(last.member_kinds.items())
        for kind in ("zkconsumer", "scala"):
            add("zkconsumer_group_members", [name, kind], sum(1 for _, k in kinds if k == kind))
        for member, kind in kinds:
            add("zkconsumer_group_member_info", [name, member, kind], 1)
        add("zkconsumer_group_partitions", [name], len(verdict.partitions))
        unowned = sum(1 for v in verdict.partitions.values() if v.ownership is Ownership.UNOWNED)
        add("zkconsumer_group_unowned_partitions", [name], unowned)
        add("zkconsumer_group_unseen_partitions", [name], sum(1 for v in verdict.partitions.values() if v.unseen))
        add("zkconsumer_group_lag", [name], verdict.total_lag)
        oldest = _oldest_wait(verdict)
        if oldest is not None:
            add("zkconsumer_group_max_lag_seconds", [name], oldest.seconds)
            add("zkconsumer_group_max_lag_seconds_lower_bound", [name], float(oldest.at_least))
        if last.last_commit_ms is not None:
            add("zkconsumer_group_last_commit_timestamp_seconds", [name], last.last_commit_ms / 1000.0)
        add("zkconsumer_group_window_samples", [name], len(window.metas))
        add("zkconsumer_group_problems", [name], len(last.problems))
        for (topic, partition), v in sorted(verdict.partitions.items()):
            labels = [name, topic, str(partition)]
            committed, _written, log_end, owner, _ownership = window.runs[(topic, partition)][-1][1] or _ABSENT
            add("zkconsumer_partition_status", labels, int(v.status))
            if committed is not None:
                add("zkconsumer_partition_committed_offset", labels, committed)
            if log_end is not None:
                add("zkconsumer_partition_log_end_offset", labels, log_end)
            if v.lag is not None:
                add("zkconsumer_partition_lag", labels, v.lag)
            if v.age is not None:
                add("zkconsumer_partition_lag_seconds", labels, v.age.seconds)
            add("zkconsumer_partition_owner_info", [*labels, owner or "", OWNERSHIP_NAMES[v.ownership]], 1)


def health_families(health: Health) -> list[Metric]:
    """The exporter's own families (rendered at every scrape: they must be current)."""
    out: dict[str, Family] = {
        spec.name: _family(spec.name) for spec in FAMILIES if spec.name.startswith("zkconsumer_exporter_")
    }
    out["zkconsumer_exporter_zookeeper_connected"].add_metric([], 1 if health.connected else 0)
    if health.last_refresh_ms:
        out["zkconsumer_exporter_last_refresh_timestamp_seconds"].add_metric([], health.last_refresh_ms / 1000.0)
    if health.started_ms:
        out["zkconsumer_exporter_start_time_seconds"].add_metric([], health.started_ms / 1000.0)
    out["zkconsumer_exporter_refresh_duration_seconds"].add_metric([], health.refresh_seconds)
    out["zkconsumer_exporter_refreshes_total"].add_metric(["ok"], health.refreshes_ok)
    out["zkconsumer_exporter_refreshes_total"].add_metric(["failed"], health.refreshes_failed)
    out["zkconsumer_exporter_zookeeper_requests_total"].add_metric([], health.zookeeper_requests)
    out["zkconsumer_exporter_log_end_reads_total"].add_metric([], health.log_end_reads)
    out["zkconsumer_exporter_groups"].add_metric([], health.groups)
    out["zkconsumer_exporter_unreadable_groups"].add_metric([], health.unreadable_groups)
    out["zkconsumer_exporter_unseen_partitions"].add_metric([], health.unseen_partitions)
    out["zkconsumer_exporter_expired_groups"].add_metric([], health.expired_groups)
    return list(out.values())


def _number(value: float) -> str:
    """As Go's strconv formats a float64, which Prometheus reads: 3.0, 1e+20, +Inf, NaN."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


@functools.lru_cache(maxsize=1 << 16)  # group, topic and partition values repeat on every line
def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _header(exposed: str, kind: str, help_text: str) -> str:
    escaped = help_text.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {exposed} {escaped}\n# TYPE {exposed} {kind}\n"


_VIEW_HEADERS = tuple(_header(spec.name, spec.kind, spec.help) for spec in VIEW_FAMILIES)


def render(families: Sequence[Metric]) -> bytes:
    """The Prometheus text exposition (version 0.0.4) of these families.

    Written here rather than by prometheus_client's generate_latest, which validates every label
    name of every sample again: at 100 groups of 100 partitions (61,000 series) it took 0.57 s a
    refresh where this takes a third of it. Names and label names are FAMILIES' (valid by
    construction); label values and help are escaped as the format says."""
    out: list[str] = []
    for family in families:
        exposed = family.name + ("_total" if family.type == "counter" else "")
        out.append(_header(exposed, family.type, family.documentation))
        for sample in family.samples:
            if sample.labels:
                labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sample.labels.items())
                out.append(f"{sample.name}{{{labels}}} {_number(sample.value)}\n")
            else:
                out.append(f"{sample.name} {_number(sample.value)}\n")
    return "".join(out).encode()


def reference_table() -> str:
    """docs/operating.md's table of every family (Markdown), from FAMILIES."""
    rows = ["| Metric | Type | Labels | Meaning |", "|---|---|---|---|"]
    for spec in FAMILIES:
        labels = ", ".join(f"`{label}`" for label in spec.labels) or "-"
        meaning = spec.help.replace("|", "\\|")
        rows.append(f"| `{spec.name}` | {spec.kind} | {labels} | {meaning} |")
    return "\n".join(rows)
