"""The exporter's Grafana dashboard: a dashboard model Grafana imports, every panel queries, every query uses only the exporter's metric names (tests/cluster/test_exporter.py runs them)."""

from __future__ import annotations

import configparser
import re

import pytest

from harness.grafana_dashboard import (
    DASHBOARD,
    ROOT,
    load,
    metric_names,
    panels,
    queries,
    regex_value,
    substitute,
    variables,
)
from zkconsumer.exporter.families import FAMILIES

EXPOSED = {spec.name for spec in FAMILIES}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def test_the_dashboard_is_a_grafana_dashboard_model() -> None:
    dashboard = load()
    assert dashboard["schemaVersion"] == 39 and dashboard["uid"] == "zkconsumer-groups"
    assert dashboard.get("id") is None  # Grafana assigns one on import
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert names == ["datasource", "instance", "group"]
    source = dashboard["templating"]["list"][0]
    assert (source["type"], source["query"]) == ("datasource", "prometheus")
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24


def test_every_panel_queries_the_chosen_prometheus() -> None:
    found = panels(load())
    assert len(found) == 15
    for panel in found:
        assert panel["targets"], panel["title"]
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["description"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["expr"].strip(), panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


def test_every_query_uses_only_the_exporters_metric_names() -> None:
    dashboard = load()
    used: set[str] = set()
    for query in queries(dashboard):
        names = metric_names(query.expr)
        assert names and names <= EXPOSED, (query.where, names - EXPOSED)
        used |= names
        # every series is filtered to the chosen exporters; group families to the chosen groups too
        assert 'instance=~"$instance"' in query.expr, query.where
        if any(name.startswith(("zkconsumer_group_", "zkconsumer_partition_")) for name in names):
            assert 'group=~"$group"' in query.expr, query.where
    for variable in variables(dashboard):
        assert metric_names(variable.selector) <= EXPOSED, variable.name
    # the panels cover lag (messages, seconds), ownership, verdicts, members and the exporter's health
    assert {
        "zkconsumer_partition_lag",
        "zkconsumer_partition_lag_seconds",
        "zkconsumer_group_lag",
        "zkconsumer_group_max_lag_seconds",
        "zkconsumer_group_unowned_partitions",
        "zkconsumer_partition_owner_info",
        "zkconsumer_group_status",
        "zkconsumer_group_status_info",
        "zkconsumer_group_members",
        "zkconsumer_exporter_zookeeper_connected",
        "zkconsumer_exporter_last_refresh_timestamp_seconds",
        "zkconsumer_exporter_refreshes_total",
        "zkconsumer_exporter_zookeeper_requests_total",
    } <= used


def test_per_partition_panels_are_bounded() -> None:
    """With "All", a per-partition panel pulled every partition of the cluster into one panel:
    each now keeps a topk (the partitions most behind), whatever the groups chosen."""
    partition_queries = [q for q in queries(load()) if "zkconsumer_partition_" in q.expr]
    assert len(partition_queries) >= 4
    for query in partition_queries:
        assert re.search(r"topk\((20|100), zkconsumer_partition_(lag|lag_seconds)\{", query.expr), query.where


def test_the_variables_are_label_values_queries() -> None:
    found = {v.name: (v.selector, v.label) for v in variables(load())}
    assert found == {
        "instance": ("zkconsumer_exporter_groups", "instance"),
        "group": ('zkconsumer_group_status{instance=~"$instance"}', "group"),
    }


def test_all_is_one_short_regex_not_every_name_joined() -> None:
    """Without allValue, Grafana's "All" sends every group's name in one alternation: thousands of
    groups make a query Prometheus may refuse for its length."""
    listed = load()["templating"]["list"]
    assert {v["name"]: v.get("allValue") for v in listed if v.get("includeAll")} == {"instance": ".*", "group": ".*"}


def test_metric_names_reads_promql() -> None:
    assert metric_names('sum by (group) (rate(a_total{x=~"b|c"}[5m])) > 0 and on (group) b') == {"a_total", "b"}
    assert metric_names("time() - zkconsumer_exporter_last_refresh_timestamp_seconds") == {
        "zkconsumer_exporter_last_refresh_timestamp_seconds"
    }
    with pytest.raises(ValueError, match="unknown function no_such_fn"):
        metric_names("no_such_fn(a)")


def test_variables_are_substituted_as_grafana_writes_them() -> None:
    assert regex_value(["127.0.0.1:9308"]) == r"127\\.0\\.0\\.1:9308"
    assert regex_value(["a-b", "c"]) == "(a-b|c)"
    expr = 'rate(x{instance=~"$instance", group=~"${group}"}[$__rate_interval])'
    assert (
        substitute(expr, {"instance": ["h:1"], "group": ["a", "b"]}, "5s")
        == 'rate(x{instance=~"h:1", group=~"(a|b)"}[5s])'
    )
    with pytest.raises(ValueError, match="unsubstituted"):
        substitute('x{group=~"$topic"}', {"group": ["a"]}, "5s")


def test_the_dashboard_ships_in_the_package() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    shipped = re.split(r"\s*,\s*", config["options.package_data"]["zkconsumer.exporter"].strip())
    assert DASHBOARD.name in shipped and "alerts.yml" in shipped
