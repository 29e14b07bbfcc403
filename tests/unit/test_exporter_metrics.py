"""The exporter's pure parts: a group's nodes into a sample, a view into metric families, and the reference table."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from zkconsumer.admin import Ownership, group_status
from zkconsumer.exporter.families import (
    FAMILIES,
    Health,
    health_families,
    reference_table,
    render,
    render_view,
    view_families,
)
from zkconsumer.exporter.group_watch import GroupNodes
from zkconsumer.exporter.sampling import GroupSample, Topic, group_sample
from zkconsumer.exporter.view import GroupState, ViewState
from zkconsumer.exporter.window import GroupWindow

GROUP = "g"
REGISTRATION = b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1"}'


@st.composite
def group_nodes(draw: st.DrawFn) -> tuple[GroupNodes, dict[str, Topic], dict[tuple[str, int], int]]:
    """A group with members (some zkconsumer), offsets (some garbled), owners (some of gone members)."""
    parts = draw(st.integers(1, 6))
    members = {f"{GROUP}_m{i}": (REGISTRATION, 100 + i) for i in range(draw(st.integers(0, 3)))}
    marked = frozenset(draw(st.sets(st.sampled_from(sorted(members)))) if members else set())
    offsets = {}
    owners = {}
    for p in range(parts):
        if draw(st.booleans()):
            value = draw(st.sampled_from([b"0", b"5", b"17", b"-1", b"x"]))
            offsets[("t", p)] = (value, 10 + p, 1_000 + p)
        owner = draw(st.sampled_from([None, "gone", *sorted(members)]))
        if owner is not None:
            session = members[owner][1] if owner in members else 999
            owners[("t", p)] = (f"{owner}-0".encode(), session)
    ends = {("t", p): draw(st.integers(0, 40)) for p in range(parts) if draw(st.booleans())}
    topics = {"t": Topic(tuple(range(parts)), 1)}
    return GroupNodes(members, offsets, owners, marked, frozenset({"t"})), topics, ends


@given(group_nodes())
def test_a_sample_holds_what_the_nodes_say(world: tuple[GroupNodes, dict[str, Topic], dict]) -> None:  # type: ignore[type-arg]
    nodes, topics, ends = world
    taken = group_sample(GROUP, nodes, topics, {"t"}, ends, 5_000)
    sample = taken.sample
    assert sorted(sample.partitions) == [("t", p) for p in topics["t"].partitions]
    assert sample.members == tuple(sorted(nodes.members))
    assert taken.member_kinds == {m: ("zkconsumer" if m in nodes.marked else "scala") for m in nodes.members}
    for key, seen in sample.partitions.items():
        raw = nodes.offsets.get(key)
        valid = raw is not None and raw[0] not in (b"x", b"-1")
        assert seen.committed == (int(raw[0]) if valid and raw else None)
        assert seen.written == ((raw[1], raw[2]) if valid and raw else None)
        assert seen.log_end == ends.get(key)
        owner = nodes.owners.get(key)
        if owner is None:
            assert seen.ownership is Ownership.UNOWNED and seen.owner is None
        else:
            assert seen.owner == owner[0].decode()
            expected = Ownership.OWNED if seen.owner.removesuffix("-0") in nodes.members else Ownership.OWNER_GONE
            assert seen.ownership is expected
    garbled = sum(1 for raw in nodes.offsets.values() if raw[0] == b"x")
    assert len(taken.problems) == garbled
    written = [raw[2] for raw in nodes.offsets.values() if raw[0] not in (b"x", b"-1")]
    assert taken.last_commit_ms == (max(written) if written else None)


def test_an_offset_older_than_its_topic_is_no_committed_offset() -> None:
    nodes = GroupNodes({}, {("t", 0): (b"7", 5, 100)}, {}, frozenset(), frozenset({"t"}))
    seen = group_sample(GROUP, nodes, {"t": Topic((0,), 6)}, {"t"}, {}, 1).sample.partitions[("t", 0)]
    assert (seen.committed, seen.written) == (None, None)


def _state(world: tuple[GroupNodes, dict[str, Topic], dict]) -> ViewState:  # type: ignore[type-arg]
    nodes, topics, ends = world
    samples = tuple(group_sample(GROUP, nodes, topics, {"t"}, ends, at) for at in (1_000, 2_000))
    state = GroupState(GROUP, GroupWindow.of(samples).snapshot(), group_status([s.sample for s in samples]))
    return ViewState(2_000, {GROUP: state}, 1.0)


def _parsed(text: bytes) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            if not s.name.endswith("_created"):
                out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@settings(max_examples=60)
@given(group_nodes())
def test_the_exposition_says_what_the_verdicts_say(world: tuple[GroupNodes, dict[str, Topic], dict]) -> None:  # type: ignore[type-arg]
    state = _state(world)
    group = state.groups[GROUP]
    text = b"".join(render_view(state))
    assert text == render(view_families(state))  # the exporter's direct rendering is the families'
    metrics = _parsed(text)
    verdict = group.verdict
    assert metrics["zkconsumer_group_lag"] == {(("group", GROUP),): verdict.total_lag}
    assert metrics["zkconsumer_group_status"] == {(("group", GROUP),): int(verdict.status)}
    unowned = sum(1 for v in verdict.partitions.values() if v.ownership is Ownership.UNOWNED)
    assert metrics["zkconsumer_group_unowned_partitions"] == {(("group", GROUP),): unowned}
    kinds = group.last.member_kinds
    for kind in ("zkconsumer", "scala"):
        members = metrics["zkconsumer_group_members"][(("group", GROUP), ("kind", kind))]
        assert members == sum(1 for k in kinds.values() if k == kind)
    lags = {
        (dict(labels)["topic"], int(dict(labels)["partition"])): value
        for labels, value in metrics.get("zkconsumer_partition_lag", {}).items()
    }
    assert lags == {k: v.lag for k, v in verdict.partitions.items() if v.lag is not None}
    owners = metrics["zkconsumer_partition_owner_info"]
    assert len(owners) == len(verdict.partitions) and set(owners.values()) == {1.0}
    seconds = metrics.get("zkconsumer_partition_lag_seconds", {})
    assert len(seconds) == sum(1 for v in verdict.partitions.values() if v.age is not None)


def test_health_is_exposed_with_counters_totalled() -> None:
    health = Health(True, 1_700_000_000_500, 0.25, 7, 2, 345, 9, 3)
    metrics = _parsed(render(health_families(health)))
    assert metrics["zkconsumer_exporter_zookeeper_connected"] == {(): 1.0}
    assert metrics["zkconsumer_exporter_last_refresh_timestamp_seconds"] == {(): 1_700_000_000.5}
    assert metrics["zkconsumer_exporter_refreshes_total"] == {(("result", "ok"),): 7.0, (("result", "failed"),): 2.0}
    assert metrics["zkconsumer_exporter_zookeeper_requests_total"] == {(): 345.0}
    assert metrics["zkconsumer_exporter_log_end_reads_total"] == {(): 9.0}
    assert metrics["zkconsumer_exporter_groups"] == {(): 3.0}


def test_names_follow_prometheus_conventions_and_the_reference_lists_each() -> None:
    names = [spec.name for spec in FAMILIES]
    assert len(set(names)) == len(names)
    for spec in FAMILIES:
        assert re.fullmatch(r"zkconsumer_(group|partition|exporter)_[a-z_]+", spec.name), spec.name
        assert spec.name.endswith("_total") == (spec.kind == "counter"), spec.name
        assert not re.search(r"_(ms|milliseconds|minutes)(_|$)", spec.name), "base units: seconds"
        assert spec.help and not spec.help[0].islower(), spec.name
        assert spec.name.endswith("_info") == spec.help.startswith("Always 1"), spec.name
    table = reference_table().splitlines()
    assert table[0] == "| Metric | Type | Labels | Meaning |"
    assert [row.split("|")[1].strip(" `") for row in table[2:]] == names


def test_every_declared_family_is_exposed() -> None:
    nodes = GroupNodes(
        {f"{GROUP}_a": (REGISTRATION, 1)},
        {("t", 0): (b"3", 1, 1), ("t", 1): (b"x", 2, 2)},
        {("t", 0): (f"{GROUP}_a-0".encode(), 1)},
        frozenset({f"{GROUP}_a"}),
        frozenset({"t"}),
    )
    state = _state((nodes, {"t": Topic((0, 1), 1)}, {("t", 0): 9, ("t", 1): 4}))
    health = Health(True, 1, 0.1, 1, 0, 1, 1, 1)
    text = render(view_families(state)) + render(health_families(health))
    exposed = {
        f.name + ("_total" if f.type == "counter" else "") for f in text_string_to_metric_families(text.decode())
    }
    assert exposed == {spec.name for spec in FAMILIES}
    assert isinstance(state.groups[GROUP].last, GroupSample) and state.groups[GROUP].last.problems == (
        "/consumers/g/offsets/t/1: offset 'x' is not a 64-bit decimal integer",
    )


# Quotes, backslashes and newlines must be escaped; other control characters and edge whitespace
# are not the format's business (the parser strips a help text's).
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(["\\", "\n", '"']), max_size=30)


@given(TEXT.filter(bool), TEXT.map(str.strip), st.floats(allow_nan=False) | st.integers(-(2**63), 2**63))
def test_label_values_help_and_numbers_survive_the_exposition(value: str, help_text: str, number: float) -> None:
    from prometheus_client.core import GaugeMetricFamily

    family = GaugeMetricFamily("zkconsumer_test", help_text or "x", labels=["owner"])
    family.add_metric([value], number)
    (parsed,) = text_string_to_metric_families(render([family]).decode())
    assert parsed.documentation == (help_text or "x")
    assert [(s.labels, s.value) for s in parsed.samples] == [({"owner": value}, float(number))]
