"""The exporter's metric families from a published view and its health (pure), and their reference table.

Every family is declared once in FAMILIES (name, type, labels, help): the exposition is built from
it and docs/operating.md's reference table is generated from it, so the two cannot drift.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from zkconsumer.admin.status import OWNERSHIP_NAMES, group_why
from zkconsumer.admin.verdicts import Ownership
from zkconsumer.exporter.view import ViewState

GROUP = ("group",)
PARTITION = ("group", "topic", "partition")


@dataclass(frozen=True)
class Spec:
    name: str  # as exposed (a counter's with its _total)
    kind: str  # "gauge" | "counter"
    labels: tuple[str, ...]
    help: str


FAMILIES: tuple[Spec, ...] = (
    Spec("zkconsumer_group_status", "gauge", GROUP, "The group's verdict as Burrow's status code: 0 NOTFOUND, 1 OK, "
         "2 WARN, 3 ERR (a group is at worst ERR)"),
    Spec("zkconsumer_group_status_info", "gauge", (*GROUP, "status", "reason"), "Always 1: the group's verdict "
         "by name and why (admin.status.group_why)"),
    Spec("zkconsumer_group_members", "gauge", (*GROUP, "kind"), "Registered members (/consumers/<group>/ids) by "
         "kind: zkconsumer or scala"),
    Spec("zkconsumer_group_member_info", "gauge", (*GROUP, "member", "kind"), "Always 1: one registered member "
         "(its consumer id) and its kind"),
    Spec("zkconsumer_group_partitions", "gauge", GROUP, "Partitions the group has offsets or owners for or "
         "subscribes to"),
    Spec("zkconsumer_group_unowned_partitions", "gauge", GROUP, "Partitions without an owner node"),
    Spec("zkconsumer_group_lag", "gauge", GROUP, "Messages between the committed offsets and the log ends, summed "
         "over the group's partitions"),
    Spec("zkconsumer_group_max_lag_seconds", "gauge", GROUP, "The longest any partition's first unconsumed message "
         "has waited (from the exporter's own log-end samples; absent before the second sample)"),
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
    Spec("zkconsumer_partition_lag", "gauge", PARTITION, "Messages between the committed offset and the log end"),
    Spec("zkconsumer_partition_lag_seconds", "gauge", PARTITION, "How long the first unconsumed message has "
         "waited, exact to the refresh interval (absent before the second sample)"),
    Spec("zkconsumer_partition_owner_info", "gauge", (*PARTITION, "owner", "ownership"), "Always 1: the owner "
         "node's thread id (empty without one) and what it means: owned, unowned, owner-gone, foreign-session"),
    Spec("zkconsumer_exporter_zookeeper_connected", "gauge", (), "1 while the exporter's ZooKeeper session is "
         "connected"),
    Spec("zkconsumer_exporter_last_refresh_timestamp_seconds", "gauge", (), "When the last successful refresh "
         "ended (alert on time() minus it)"),
    Spec("zkconsumer_exporter_refresh_duration_seconds", "gauge", (), "How long the last refresh took"),
    Spec("zkconsumer_exporter_refreshes_total", "counter", ("result",), "Refreshes by result: ok or failed"),
    Spec("zkconsumer_exporter_zookeeper_requests_total", "counter", (), "ZooKeeper reads the exporter sent "
         "(a refresh re-reads only what a watch said changed)"),
    Spec("zkconsumer_exporter_log_end_reads_total", "counter", (), "Batched log-end reads (ListOffsets, one "
         "request per partition leader each)"),
    Spec("zkconsumer_exporter_groups", "gauge", (), "Groups the exporter watches"),
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


def render_view(state: ViewState) -> bytes:
    """The exposition of `view_families(state)`, written line by line without building the families:
    the exporter renders it once per refresh, and at 1,000 groups of 100 partitions (611,000
    series) the families alone held more memory than the view they were made of."""
    lines: dict[str, list[str]] = {spec.name: [_header(spec.name, spec.kind, spec.help)] for spec in VIEW_FAMILIES}
    names = {spec.name: spec.labels for spec in VIEW_FAMILIES}

    def add(name: str, labels: Sequence[str], value: float) -> None:
        pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in zip(names[name], labels))
        lines[name].append(f"{name}{{{pairs}}} {_number(value)}\n")

    _walk(state, add)
    return "".join(line for family in lines.values() for line in family).encode()


def _walk(state: ViewState, add: Add) -> None:
    for name, group in sorted(state.groups.items()):
        verdict, last = group.verdict, group.last
        add("zkconsumer_group_status", [name], int(verdict.status))
        add("zkconsumer_group_status_info", [name, verdict.status.name, group_why(verdict)], 1)
        kinds = sorted(last.member_kinds.items())
        for kind in ("zkconsumer", "scala"):
            add("zkconsumer_group_members", [name, kind], sum(1 for _, k in kinds if k == kind))
        for member, kind in kinds:
            add("zkconsumer_group_member_info", [name, member, kind], 1)
        add("zkconsumer_group_partitions", [name], len(verdict.partitions))
        unowned = sum(1 for v in verdict.partitions.values() if v.ownership is Ownership.UNOWNED)
        add("zkconsumer_group_unowned_partitions", [name], unowned)
        add("zkconsumer_group_lag", [name], verdict.total_lag)
        ages = [v.age.seconds for v in verdict.partitions.values() if v.age is not None]
        if ages:
            add("zkconsumer_group_max_lag_seconds", [name], max(ages))
        if last.last_commit_ms is not None:
            add("zkconsumer_group_last_commit_timestamp_seconds", [name], last.last_commit_ms / 1000.0)
        add("zkconsumer_group_window_samples", [name], len(group.samples))
        add("zkconsumer_group_problems", [name], len(last.problems))
        for (topic, partition), v in sorted(verdict.partitions.items()):
            labels = [name, topic, str(partition)]
            seen = last.sample.partitions[(topic, partition)]
            add("zkconsumer_partition_status", labels, int(v.status))
            if seen.committed is not None:
                add("zkconsumer_partition_committed_offset", labels, seen.committed)
            if seen.log_end is not None:
                add("zkconsumer_partition_log_end_offset", labels, seen.log_end)
            if v.lag is not None:
                add("zkconsumer_partition_lag", labels, v.lag)
            if v.age is not None:
                add("zkconsumer_partition_lag_seconds", labels, v.age.seconds)
            add("zkconsumer_partition_owner_info", [*labels, seen.owner or "", OWNERSHIP_NAMES[v.ownership]], 1)


def health_families(health: Health) -> list[Metric]:
    """The exporter's own families (rendered at every scrape: they must be current)."""
    out: dict[str, Family] = {
        spec.name: _family(spec.name) for spec in FAMILIES if spec.name.startswith("zkconsumer_exporter_")
    }
    out["zkconsumer_exporter_zookeeper_connected"].add_metric([], 1 if health.connected else 0)
    if health.last_refresh_ms:
        out["zkconsumer_exporter_last_refresh_timestamp_seconds"].add_metric([], health.last_refresh_ms / 1000.0)
    out["zkconsumer_exporter_refresh_duration_seconds"].add_metric([], health.refresh_seconds)
    out["zkconsumer_exporter_refreshes_total"].add_metric(["ok"], health.refreshes_ok)
    out["zkconsumer_exporter_refreshes_total"].add_metric(["failed"], health.refreshes_failed)
    out["zkconsumer_exporter_zookeeper_requests_total"].add_metric([], health.zookeeper_requests)
    out["zkconsumer_exporter_log_end_reads_total"].add_metric([], health.log_end_reads)
    out["zkconsumer_exporter_groups"].add_metric([], health.groups)
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
