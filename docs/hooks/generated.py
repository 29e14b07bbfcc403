"""MkDocs hook: pages generated from the code, so the docs cannot drift from it.

A page that contains a marker line gets it replaced at build time:

    <!-- generated: config-table -->   the property table of zkconsumer/config.py's docstring,
                                       checked against KNOWN_PROPERTIES and the real defaults
    <!-- generated: config-notes -->   the paragraphs after that table
    <!-- generated: metrics-table -->  every metric family zkconsumer.metrics exports
    <!-- generated: exporter-metrics-table -->  every family `zkconsumer exporter` serves

A property missing from the table (or a table row naming no property), and a literal default
that differs from what ConsumerConfig really uses, fail the build.

Text between <!-- github-only --> and <!-- /github-only --> is for readers of the unbuilt
Markdown (on GitHub, say) and is dropped from the built site.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

# Document the checkout this hook lives in, not whatever copy of zkconsumer is installed.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
GITHUB_ONLY = re.compile(r"^<!-- github-only -->$.*?^<!-- /github-only -->$\n?", re.MULTILINE | re.DOTALL)
PASSTHROUGH_ROW = "librdkafka.<name>"
# Defaults written as prose in the table ("= session timeout", "(required)"): not compared.
_PROSE_DEFAULT = re.compile(r"^(\(.*\)|=.*)$")


def _rst_table(doc: str) -> tuple[list[str], list[list[str]], str]:
    """Split the docstring's RST simple table into header, rows (continuations joined) and the text after it."""
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"=+( +=+)+", line)]
    if len(rules) != 3:
        raise PluginError(f"zkconsumer/config.py: expected one RST table (3 rule lines), found {len(rules)} rule lines")
    starts = [m.start() for m in re.finditer(r"=+", lines[rules[0]])]

    def cells(line: str) -> list[str]:
        out, cursor = [], 0
        for n, start in enumerate(starts):
            begin = max(start, cursor)
            end = starts[n + 1] if n + 1 < len(starts) else len(line)
            # a cell may overflow into the next column (a long property name): extend to a space
            while end < len(line) and n + 1 < len(starts) and line[end - 1] != " " and line[end] != " ":
                end += 1
            out.append(line[begin:end].strip())
            cursor = end
        return out

    header = cells(lines[rules[0] + 1])
    rows: list[list[str]] = []
    for line in lines[rules[1] + 1 : rules[2]]:
        if not line.strip():
            continue
        parts = cells(line)
        if line[0] != " ":
            rows.append(parts)
        elif rows:  # a continuation line: append each non-empty cell to the row above
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], parts)]
        else:
            raise PluginError("zkconsumer/config.py: the property table starts with a continuation line")
    after = "\n".join(lines[rules[2] + 1 :]).strip()
    return header, rows, after


def _cell(text: str) -> str:
    """Table cell text: HTML-escaped (<group.id>), pipes escaped, RST ``literals`` as code."""
    text = html.escape(text, quote=False).replace("|", "\\|")
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _literal_default(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _same_default(written: str, real: str) -> bool:
    """Equal, counting versions "1.1" and "1.1.0" as one."""

    def version(text: str) -> str:
        return re.sub(r"(\.0)+$", "", text) if re.fullmatch(r"\d+(\.\d+)+", text) else text

    return version(written) == version(real)


def config_table() -> str:
    import zkconsumer.config.consumer_config as config_module
    from zkconsumer.config.checks import KNOWN_PROPERTIES
    from zkconsumer.config.consumer_config import ConsumerConfig

    header, rows, _ = _rst_table(config_module.__doc__ or "")
    names = [row[0] for row in rows if row[0] != PASSTHROUGH_ROW]
    missing = sorted(set(KNOWN_PROPERTIES) - set(names))
    unknown = sorted(set(names) - set(KNOWN_PROPERTIES))
    if missing or unknown:
        raise PluginError(
            f"zkconsumer/config.py's table and KNOWN_PROPERTIES differ: not in the table {missing}, "
            f"not a property {unknown}"
        )
    defaults = ConsumerConfig.from_mapping({"zookeeper.connect": "localhost:2181", "group.id": "docs"})
    for name, default, *_ in rows:
        if name == PASSTHROUGH_ROW or _PROSE_DEFAULT.match(default):
            continue
        real = _literal_default(defaults.get(name))
        if not _same_default(default, real):
            raise PluginError(
                f"zkconsumer/config.py's table gives {name} the default {default!r}; the code uses {real!r}"
            )
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, *rest in rows:
        out.append("| " + " | ".join([f"`{name}`", *map(_cell, rest)]) + " |")
    return "\n".join(out)


def config_notes() -> str:
    import zkconsumer.config.consumer_config as config_module

    _, _, after = _rst_table(config_module.__doc__ or "")
    return re.sub(r"``(.+?)``", r"`\1`", after)


def metrics_table() -> str:
    from zkconsumer.metrics import Snapshot, families

    # one topic and one stream, so the per-topic and per-stream families have a sample to read labels from
    sample = Snapshot(owned={"t": 1}, queued_chunks={"s": 1})
    out = ["| Metric | Type | Labels | Meaning |", "|---|---|---|---|"]
    for family in families(sample, "client", "group"):
        exposed = family.name + ("_total" if family.type == "counter" else "")
        labels = ", ".join(f"`{label}`" for label in family.samples[0].labels)
        out.append(f"| `{exposed}` | {family.type} | {labels} | {_cell(family.documentation)} |")
    return "\n".join(out)


def exporter_metrics_table() -> str:
    from zkconsumer.exporter.families import reference_table

    return reference_table()


GENERATORS = {
    "config-table": config_table,
    "config-notes": config_notes,
    "metrics-table": metrics_table,
    "exporter-metrics-table": exporter_metrics_table,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def render(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise PluginError(f"{page.file.src_path}: unknown generated block {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(render, GITHUB_ONLY.sub("", markdown))
