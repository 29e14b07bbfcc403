"""The exporter's Grafana dashboard as Grafana reads it: its queries, its template variables substituted as Grafana does, the metric names a query uses."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "zkconsumer" / "exporter" / "dashboard.json"

# The PromQL functions, aggregations and keywords the dashboard may use (Prometheus 2.42's names).
FUNCTIONS = frozenset(
    "abs absent avg avg_over_time ceil clamp_min count count_over_time delta deriv floor histogram_quantile "
    "idelta increase irate label_replace last_over_time max max_over_time min min_over_time quantile rate "
    "round scalar sort sort_desc sum sum_over_time time timestamp topk bottomk vector".split()
)
KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset"})
_LABEL_VALUES = re.compile(r"label_values\((?:(?P<selector>.+),\s*)?(?P<label>\w+)\)")
_REGEX_SPECIAL = re.compile(r"([\\^$*+?.()|{}\[\]])")


@dataclass(frozen=True)
class Query:
    """One PromQL query of the dashboard: where it is (panel title and refId), its text, instant or range."""

    where: str
    expr: str
    instant: bool


@dataclass(frozen=True)
class Variable:
    """A `label_values(selector, label)` query variable."""

    name: str
    selector: str
    label: str


def load(path: Path = DASHBOARD) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel but rows, those nested in collapsed rows included."""
    out = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            out.extend(panel.get("panels", []))
        else:
            out.append(panel)
    return out


def queries(dashboard: dict[str, Any]) -> list[Query]:
    return [
        Query(f"{panel['title']} ({target['refId']})", target["expr"], bool(target.get("instant")))
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
    ]


def variables(dashboard: dict[str, Any]) -> list[Variable]:
    """The query variables, each a label_values query (ValueError for any other kind)."""
    out = []
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        match = _LABEL_VALUES.fullmatch(query.strip())
        if match is None:
            raise ValueError(f"variable {variable['name']}: not a label_values(selector, label) query: {query!r}")
        out.append(Variable(variable["name"], match["selector"] or "", match["label"]))
    return out


def regex_value(values: list[str]) -> str:
    """A multi-value variable as Grafana's Prometheus data source writes it in a query: each value's
    regex characters escaped (a backslash doubled for the PromQL string), joined by |, in parentheses
    when there are several."""
    escaped = [_REGEX_SPECIAL.sub(r"\\\\\1", value) for value in values]
    return escaped[0] if len(escaped) == 1 else f"({'|'.join(escaped)})"


def substitute(expr: str, values: dict[str, list[str]], rate_interval: str) -> str:
    """`expr` with $name / ${name} of each variable replaced as Grafana does, and $__rate_interval;
    ValueError if a $ is left."""
    expr = expr.replace("$__rate_interval", rate_interval).replace("${__rate_interval}", rate_interval)
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace(f"${{{name}}}", regex_value(values[name])).replace(f"${name}", regex_value(values[name]))
    if "$" in expr:
        raise ValueError(f"a variable is left unsubstituted in {expr!r}")
    return expr


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects. ValueError for a function or keyword outside FUNCTIONS and KEYWORDS."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)  # label lists
    text = re.sub(r"\boffset\s+\S+", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", text):
        word, call = match[1], match[2]
        if call:
            if word not in FUNCTIONS:
                raise ValueError(f"{expr!r}: unknown function {word}")
        elif word in KEYWORDS:
            continue
        elif word in FUNCTIONS:
            raise ValueError(f"{expr!r}: {word} used without arguments")
        else:
            names.add(word)
    return names
