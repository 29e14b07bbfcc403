"""CLI usage without a cluster: help texts, usage errors (exit 2), unreachable ZooKeeper (one line, exit 1)."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from zkconsumer.cli.main import cli

COMMANDS = [
    ["consume"],
    ["groups", "list"],
    ["groups", "describe"],
    ["groups", "delete"],
    ["offsets", "export"],
    ["offsets", "import"],
    ["offsets", "reset"],
    ["verify"],
    ["top"],
]


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(
        cli, list(args), env={"ZKCONSUMER_ZOOKEEPER": None, **(env or {})}, catch_exceptions=False
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_top_level_help_lists_every_command() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for name in ("consume", "groups", "offsets", "verify", "top", "ZKCONSUMER_ZOOKEEPER", "Exit status"):
        assert name in result.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_documents_zookeeper_options_and_examples(command: list[str]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    for text in ("--zookeeper", "--zk-digest", "--zk-timeout", "Example"):
        assert text in result.stdout, (command, text)


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS if c not in (["groups", "delete"], ["offsets", "import"], ["consume"])],
    ids=" ".join,
)
def test_every_read_command_has_json(command: list[str]) -> None:
    assert "--json" in invoke(*command, "--help").stdout


def test_write_commands_say_they_write_and_need_execute() -> None:
    for command in (["offsets", "import"], ["offsets", "reset"], ["groups", "delete"]):
        text = invoke(*command, "--help").stdout
        assert "THIS WRITES" in text and "--execute" in text and "--dry-run" in text, command
    assert "THIS WRITES at once" in invoke("consume", "--help").stdout


def test_a_non_utf8_import_file_is_one_line_and_exit_2_before_zookeeper(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "in.txt"
    bad.write_bytes(b"/consumers/g/offsets/t/0:5\n/consumers/g/offsets/\xe9t\xe9/0:5\n")
    port = closed_port()  # never reached: the file is refused first
    result = invoke("offsets", "import", "-i", str(bad), "--execute", env={"ZKCONSUMER_ZOOKEEPER": f"127.0.0.1:{port}"})
    assert result.exit_code == 2
    assert result.stderr == (
        f"zkconsumer: error: {bad}: not UTF-8 text (byte 0xe9 at offset 48, line 2); offset files are UTF-8 text\n"
    )
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["consume", "--topic", "t", "--consumer-property", "auto.offset.reset=earliest"],
        ["consume", "--topic", "t", "--consumer-property", "auto.offset.reset=latest"],
        ["consume", "--topic", "t", "--from-beginning", "--consumer-property", "auto.offset.reset=earliest"],
        ["groups", "describe", "-t", "a,b", "-g", "g"],
        ["groups", "describe", "--topic", "a:0,1", "--all-groups"],
        ["offsets", "reset", "-g", "g", "-t", "t:0,1", "--to-current", "--dry-run"],
        ["offsets", "reset", "--all-groups", "--all-topics", "--by-duration", "PT1H"],
    ],
    ids=" ".join,
)
def test_the_old_tools_vocabulary_is_accepted(args: list[str]) -> None:
    """Past option parsing, these reach ZooKeeper (unreachable here: exit 1, not a usage error)."""
    port = closed_port()
    result = invoke(*args, "--zk-timeout", "0.5", env={"ZKCONSUMER_ZOOKEEPER": f"127.0.0.1:{port}"})
    assert result.exit_code == 1, result.output
    assert "ZooKeeper unreachable" in result.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (["groups", "describe", "--group", "g"], "Missing option '--zookeeper'"),
        (["groups", "describe", "--zookeeper", "z:1"], "give --group (repeatable) or --all-groups"),
        (["groups", "describe", "--zookeeper", "z:1", "-g", "g", "--all-groups"], "or --all-groups"),
        (["groups", "describe", "--zookeeper", "z:1", "-g", "g", "-t", "t:x"], "bad partition list"),
        (
            ["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t", "--to-earliest", "--dry-run", "--execute"],
            "contradict",
        ),
        (
            ["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "--to-earliest"],
            "--topic (repeatable) or --all-topics",
        ),
        (["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t", "--to-offset", "-5"], "an offset is >= 0"),
        (["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t", "--by-duration", "1h"], "bad duration"),
        (
            ["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t", "--to-latest", "--export", "--json"],
            "two outputs",
        ),
        (["offsets", "export", "--zookeeper", "z:1", "-t", "t:0"], "whole topics"),
        (["groups", "delete", "--zookeeper", "z:1", "-g", "g", "--dry-run", "--execute"], "contradict"),
        (["consume", "--zookeeper", "z:1", "--partition", "0", "--whitelist", "a.*"], "--partition needs --topic"),
        (["consume", "--zookeeper", "z:1", "--topic", "a", "--offset", "5"], "--offset needs --partition"),
        (
            ["consume", "--zookeeper", "z:1", "--topic", "a", "--partition", "0", "--offset", "-1"],
            "non-negative number",
        ),
        (["consume", "--zookeeper", "z:1", "--topic", "a", "--partition", "0", "-g", "g"], "without a group"),
        (
            [
                "consume",
                "--zookeeper",
                "z:1",
                "--topic",
                "a",
                "--from-beginning",
                "--consumer-property",
                "auto.offset.reset=latest",
            ],
            "contradict",
        ),
        (["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t"], "exactly one of"),
        (
            ["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t", "--to-earliest", "--partitions", "x"],
            "bad partition list",
        ),
        (["offsets", "reset", "--zookeeper", "z:1", "-g", "g", "-t", "t", "--to-datetime", "soon"], "ISO 8601"),
        (["consume", "--zookeeper", "z:1", "--topic", "a", "--whitelist", "b"], "exactly one of"),
        (["consume", "--zookeeper", "z:1", "--whitelist", "a(b"], "invalid regex"),
        (["consume", "--zookeeper", "z:1", "--topic", "a", "--property", "print.key"], "key=value"),
        (
            ["consume", "--zookeeper", "z:1", "--topic", "a", "--consumer-property", "auto.offset.reset=oldest"],
            "auto.offset.reset",
        ),
        (["consume", "--zookeeper", "z:1", "--topic", "a", "--group", "bad/name"], "invalid group name"),
        (["groups", "delete", "--zookeeper", "z:1"], "give --group, --topic or both"),
        (["verify", "--zookeeper", "z:1", "-g", "g", "--zk-digest", "nocolon"], "user:password"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], needle: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["groups", "list"],
        ["groups", "describe", "-g", "g"],
        ["verify", "-g", "g"],
        ["offsets", "export"],
        ["top", "-g", "g", "--once"],
        ["consume", "--topic", "t", "--max-messages", "1"],
    ],
    ids=" ".join,
)
def test_unreachable_zookeeper_is_one_line_and_exit_1(command: list[str]) -> None:
    port = closed_port()
    result = invoke(*command, "--zk-timeout", "0.5", env={"ZKCONSUMER_ZOOKEEPER": f"127.0.0.1:{port}/kafka"})
    assert result.exit_code == 1
    assert result.stderr == f"zkconsumer: error: ZooKeeper unreachable at 127.0.0.1:{port}/kafka after 0.5 s\n"
    assert result.stdout == ""


def test_a_missing_import_file_is_one_line_and_exit_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = invoke("offsets", "import", "-i", str(tmp_path / "none.txt"), env={"ZKCONSUMER_ZOOKEEPER": "z:1"})
    assert result.exit_code == 2
    assert result.stderr == f"zkconsumer: error: --input {tmp_path / 'none.txt'}: No such file or directory\n"
