"""The fenced code blocks of a Markdown page, with the docs-run markers that say how tests/docs treats them.

A block's language decides what it is: ``python`` runs as a script, ``sh`` (or ``bash``, ``console``
or no language at all) runs in bash, ``text`` is not code. A shell block whose lines start with
``$ `` is a session: those lines are the commands, the lines after each its expected output; any
other shell block is a script, run as a whole.

An HTML comment on the line before the fence changes that, and is the only way to:

* ``<!-- docs-run: skip: <why> -->``: not run; the docs test lists it with the reason;
* ``<!-- docs-run: output -->``: a ``text`` block, the expected output of the block above;
* ``<!-- docs-run: same-as <page> -->``: not run here because every command in it is run from
  <page> (the test checks that each one appears there);
* ``<!-- docs-run: file <name> -->``: not run: a file the page tells the reader to save as <name>
  (a script later blocks run); the test writes it into the folder the blocks run in.

Expected output is compared loosely: lines in order, each after :func:`normalize` (numbers,
hexadecimal ones such as ZooKeeper session ids, and absolute paths stand for any), ``...``
standing for any lines, other lines of the actual output allowed in between. A session command's
output is what a terminal shows, stdout and stderr together; ``$ echo $?`` right after a command
shows its exit status, which then may be non-zero and must be exactly the one shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/getting-started.md", "docs/cli.md")  # the pages tests/docs runs
PYTHON = ("python",)
SHELL = ("sh", "bash", "console", "shell", "")
TEXT = ("text",)
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-run:\s*(?P<kind>[\w-]+)\s*:?\s*(?P<note>.*?)\s*-->\s*$")
_KINDS = ("skip", "output", "same-as", "file")
_FILE_NAME = re.compile(r"[\w.-]+")


class MarkdownError(ValueError):
    """A page's blocks or markers break the rules above; the message names the line."""


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and text, and its docs-run marker if any."""

    page: str  # relative to the repository root
    line: int  # the opening fence, counted from 1
    lang: str
    text: str
    marker: str | None = None  # one of _KINDS
    note: str = ""  # the reason of a skip, the page of a same-as, the name of a file

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """python, shell or text."""
        if self.lang in PYTHON:
            return "python"
        if self.lang in SHELL:
            return "shell"
        return "text"

    @property
    def runs(self) -> bool:
        return self.kind != "text" and self.marker is None

    def commands(self) -> list[tuple[str, list[str]]]:
        """A shell block's commands, each with the output lines the page shows after it.

        A session block gives its ``$ `` lines; a script block is one command (its whole text),
        with no expected output."""
        lines = self.text.splitlines()
        if not any(line.startswith("$ ") for line in lines):
            return [(self.text, [])]
        result: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                result.append((line[2:], []))
            elif result:
                result[-1][1].append(line)
            elif line.strip():
                raise MarkdownError(f"{self.where}: output before the first $ command: {line!r}")
        return result

    def command_lines(self) -> list[str]:
        """The commands of a shell block one per line, without comments or blank lines."""
        out = []
        for command, _ in self.commands():
            for line in command.splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                if line and not line.startswith("#"):
                    out.append(line)
        return out


def blocks(page: str) -> list[Block]:
    """Every fenced block of `page` (relative to the repository root), markers checked."""
    lines = (ROOT / page).read_text().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if not fence:
            next_is_fence = index + 1 < len(lines) and _FENCE.match(lines[index + 1])
            if _MARKER.match(lines[index]) and not next_is_fence:
                raise MarkdownError(f"{page}:{index + 1}: a docs-run marker must be right before a ``` fence")
            index += 1
            continue
        indent, lang = len(fence["indent"]), fence["lang"]
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise MarkdownError(f"{page}:{index + 1}: the ``` block is never closed")
        body = "\n".join(line[indent:] for line in lines[index + 1 : end])
        marker = _marker_before(lines, index)
        kind, note = (marker["kind"], marker["note"]) if marker else (None, "")
        if kind is not None and kind not in _KINDS:
            raise MarkdownError(f"{page}:{index}: unknown docs-run marker {kind!r} (known: {', '.join(_KINDS)})")
        if kind == "skip" and not note:
            raise MarkdownError(f"{page}:{index}: a docs-run skip must say why")
        if kind == "output" and lang not in TEXT:
            raise MarkdownError(f"{page}:{index}: an output block must be ```text")
        if kind == "output" and not (found and found[-1].runs):
            raise MarkdownError(f"{page}:{index}: an output block must follow a block that runs")
        if kind == "file" and not _FILE_NAME.fullmatch(note):
            raise MarkdownError(f"{page}:{index}: a docs-run file needs a file name, no folder (got {note!r})")
        found.append(Block(page, index + 1, lang, body + "\n", kind, note))
        index = end + 1
    return found


def _marker_before(lines: list[str], fence_index: int) -> re.Match[str] | None:
    return _MARKER.match(lines[fence_index - 1]) if fence_index > 0 else None


def normalize(line: str) -> str:
    """A line with absolute paths as PATH, digit runs and 0x numbers as N, blanks collapsed, for comparing outputs."""
    line = re.sub(r"(?<![\w.])/[^\s()'\"]*", "PATH", line)
    line = re.sub(r"\b0x[0-9a-fA-F]+\b", "N", line)
    line = re.sub(r"\d+", "N", line)
    return " ".join(line.split())


def missing_output(expected: list[str], actual: str) -> list[str]:
    """The expected lines (normalized, in order, ``...`` for any) that `actual` lacks; [] when all are there."""
    have = [normalize(line) for line in actual.splitlines() if line.strip()]
    position = 0
    for number, line in enumerate(expected):
        want = normalize(line)
        if not want or want == "...":
            continue
        while position < len(have) and have[position] != want:
            position += 1
        if position == len(have):
            return [line for line in expected[number:] if line.strip() and line.strip() != "..."]
        position += 1
    return []
