"""tests/docs: the blocks the pages keep from running, each with its reason, in pytest's closing summary."""

from __future__ import annotations

import pytest
from docs_blocks import PAGES, blocks


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    kept = [block for page in PAGES for block in blocks(page) if block.marker in ("skip", "same-as")]
    terminalreporter.write_sep("-", f"docs-run: {len(kept)} blocks of {', '.join(PAGES)} not run")
    for block in kept:
        why = block.note if block.marker == "skip" else f"its commands run from {block.note}"
        terminalreporter.write_line(
            f"{block.where} ({block.command_lines()[0] if block.kind == 'shell' else block.lang}): {why}"
        )
