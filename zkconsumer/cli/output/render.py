"""Tables for humans: rich boxes on a terminal, plain aligned columns (no truncation) when piped."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import click


@dataclass
class TextTable:
    """Rows of plain strings; `styles` colours whole rows (rich markup style names) on a terminal."""

    columns: Sequence[str]
    title: str | None = None
    rows: list[list[str]] = field(default_factory=list)
    styles: list[str | None] = field(default_factory=list)
    right_aligned: frozenset[str] = frozenset()

    def add(self, values: Sequence[Any], style: str | None = None) -> None:
        self.rows.append(["-" if v is None else str(v) for v in values])
        self.styles.append(style)

    def plain(self) -> str:
        """Columns separated by two spaces, padded to the widest cell; the last column is not padded."""
        widths = [max([len(c)] + [len(r[i]) for r in self.rows]) for i, c in enumerate(self.columns)]
        lines = []
        for row in [list(self.columns)] + self.rows:
            cells = []
            for i, (cell, width) in enumerate(zip(row, widths)):
                if i == len(row) - 1:
                    cells.append(cell.rjust(width) if self.columns[i] in self.right_aligned else cell)
                elif self.columns[i] in self.right_aligned:
                    cells.append(cell.rjust(width))
                else:
                    cells.append(cell.ljust(width))
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def rich(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        table = Table(title=self.title, title_justify="left", header_style="bold")
        for name in self.columns:
            table.add_column(name, justify="right" if name in self.right_aligned else "left", overflow="fold")
        for row, style in zip(self.rows, self.styles):
            table.add_row(*(Text(cell) for cell in row), style=style)
        return table


def stdout_is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def console(**kwargs: Any) -> Any:
    from rich.console import Console

    return Console(highlight=False, **kwargs)


def show(*tables: TextTable | str) -> None:
    """Print tables (and plain lines) to stdout: rich on a terminal, plain text otherwise."""
    if stdout_is_tty():
        out = console()
        for item in tables:
            out.print(item.rich() if isinstance(item, TextTable) else item, markup=False)
        return
    for i, item in enumerate(tables):
        if isinstance(item, TextTable):
            if item.title and len(tables) > 1:
                click.echo(item.title)
            click.echo(item.plain())
            if i < len(tables) - 1:
                click.echo("")
        else:
            click.echo(item)
