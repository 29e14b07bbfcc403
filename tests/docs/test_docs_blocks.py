"""The pages tests/docs runs are well marked: every block runs, is an output or a file, or says why it does not;
and the runner's rules for sessions and files (no cluster)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from docs_blocks import PAGES, Block, MarkdownError, blocks, missing_output, normalize
from docs_runner import BlockFailed, Runner


@pytest.mark.parametrize("page", PAGES)
def test_every_block_runs_or_says_why_not(page: str) -> None:
    found = blocks(page)
    unmarked_text = [block.where for block in found if block.kind == "text" and block.marker is None]
    assert not unmarked_text, f"```text blocks must be marked output or skip (docs-run markers): {unmarked_text}"
    assert any(block.runs and block.kind == "python" for block in found), f"{page} has no Python block that runs"
    assert any(block.runs and block.kind == "shell" for block in found), f"{page} has no shell block that runs"


@pytest.mark.parametrize("page", PAGES)
def test_same_as_blocks_only_hold_commands_run_from_their_page(page: str) -> None:
    for block in blocks(page):
        if block.marker != "same-as":
            continue
        elsewhere = {line for other in blocks(block.note) if other.kind == "shell" for line in other.command_lines()}
        absent = [line for line in block.command_lines() if line not in elsewhere]
        assert not absent, f"{block.where}: not in any shell block of {block.note}: {absent}"


def test_the_install_lines_that_run_are_the_checkout_and_wheel_installs() -> None:
    page = "docs/getting-started.md"
    run = [line for block in blocks(page) if block.runs and block.kind == "shell" for line in block.command_lines()]
    assert "pip install ." in run
    assert "pip install dist/zkconsumer-0.1.0-py3-none-any.whl" in run
    kept = {line for block in blocks(page) if block.marker == "skip" for line in block.command_lines()}
    assert "pip install zkconsumer" in kept  # not on PyPI yet: shown, never run


def _page(tmp_path: Path, text: str) -> str:
    path = tmp_path / "page.md"
    path.write_text(text)
    return str(path)  # absolute: blocks() reads it as is


def test_markers_read_and_checked(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "<!-- docs-run: skip: needs the moon -->\n```sh\nfly\n```\n\n```python\nprint(1)\n```\n"
        "<!-- docs-run: output -->\n```text\n1\n```\n"
        "<!-- docs-run: file member.py -->\n```python\nprint(2)\n```\n",
    )
    skip, code, output, saved = blocks(page)
    assert (skip.marker, skip.note, skip.runs) == ("skip", "needs the moon", False)
    assert (code.kind, code.runs, code.line) == ("python", True, 6)
    assert (output.marker, output.kind, output.text) == ("output", "text", "1\n")
    assert (saved.marker, saved.note, saved.runs) == ("file", "member.py", False)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<!-- docs-run: skip -->\n```sh\nx\n```\n", "must say why"),
        ("<!-- docs-run: later -->\n```sh\nx\n```\n", "unknown docs-run marker 'later'"),
        ("<!-- docs-run: output -->\n```text\nx\n```\n", "must follow a block that runs"),
        ("```sh\nx\n```\n<!-- docs-run: output -->\n```sh\nx\n```\n", "must be ```text"),
        ("<!-- docs-run: skip: why -->\n\n```sh\nx\n```\n", "right before a ``` fence"),
        ("```sh\nx\n", "never closed"),
        ("```\nout\n$ cmd\n```\n", "output before the first $ command"),
        ("<!-- docs-run: file ../x.py -->\n```python\nx\n```\n", "needs a file name, no folder"),
    ],
)
def test_a_badly_marked_page_is_refused_naming_the_line(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(MarkdownError, match=f"page.md:\\d+: .*{re.escape(error)}"):
        for block in blocks(_page(tmp_path, text)):
            block.commands()


def test_a_session_block_splits_into_commands_and_their_output() -> None:
    block = Block("p.md", 1, "", "$ up\nzk=1\nlogs\n$ status  # again\n")
    assert block.commands() == [("up", ["zk=1", "logs"]), ("status  # again", [])]
    assert block.command_lines() == ["up", "status"]
    script = Block("p.md", 1, "sh", "# make it\npip install .   # the package\n")
    assert script.commands() == [(script.text, [])]
    assert script.command_lines() == ["pip install ."]


def test_outputs_compare_without_numbers_paths_and_spacing() -> None:
    assert normalize("logs in /tmp/a-1/run (ready in 6.5s)") == "logs in PATH (ready in N.Ns)"
    assert normalize("payments   0     4") == "payments N N"
    assert normalize("billing_a  2026-11-27T10:59:04  0x100004bbf5d0017") == "billing_a N-N-NTN:N:N N"
    actual = "warning\nTOPIC PARTITION\npayments 0 7\npayments 1 0\npayments 2 9\n"
    assert missing_output(["TOPIC  PARTITION", "payments 0 4", "..."], actual) == []
    assert missing_output(["TOPIC PARTITION", "warning"], actual) == ["warning"]  # in order
    assert missing_output(["TOPIC PARTITION", "orders 0 1"], actual) == ["orders 0 1"]


def _session(tmp_path: Path, text: str) -> tuple[Runner, Block]:
    runner = Runner(python=Path(sys.executable), env=dict(os.environ), cwd=tmp_path)
    return runner, Block("p.md", 1, "", text)


def test_a_session_shows_a_failing_command_with_echo_status(tmp_path: Path) -> None:
    runner, block = _session(tmp_path, "$ echo out; echo err >&2; exit 3\nout\nerr\n$ echo $?\n3\n")
    assert runner.run_shell(block) == "3\n"  # stderr counts as output, as in a terminal
    for text, error in [
        ("$ exit 3\n", "exited 3"),  # not followed by `echo $?`: a failure
        ("$ exit 2\n$ echo $?\n3\n", "shows exit status \\['3'\\], the command exited 2"),  # exactly, not as a number
        ("$ echo $?\n0\n", "must follow a command"),
    ]:
        runner, block = _session(tmp_path, text)
        with pytest.raises(BlockFailed, match=error):
            runner.run_shell(block)


def test_a_file_block_is_saved_where_the_blocks_run(tmp_path: Path) -> None:
    runner = Runner(python=Path(sys.executable), env={}, cwd=tmp_path, substitutions={"zk:2181": "127.0.0.1:1"})
    runner.write_file(Block("p.md", 3, "python", "ZK = 'zk:2181'\n", "file", "member.py"))
    assert (tmp_path / "member.py").read_text() == "ZK = '127.0.0.1:1'\n"
