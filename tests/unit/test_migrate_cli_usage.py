"""`zkconsumer migrate` and `offsets export --format spark` without a cluster: help, usage errors, exit codes."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from zkconsumer.cli.main import cli


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, list(args), env={"ZKCONSUMER_ZOOKEEPER": None}, catch_exceptions=False)


def test_top_level_help_lists_migrate() -> None:
    text = invoke("--help").stdout
    assert "migrate plan" in text and "migrate offsets" in text and "3: blocked" in text


def test_migrate_help_documents_the_whole_sequence() -> None:
    text = invoke("migrate", "--help").stdout
    for needle in (
        "STOP-AND-COPY",
        "ROLLING",
        "ROLLBACK",
        "offsets.storage=kafka",
        "dual.commit.enabled=true",
        "--to zookeeper --execute",
        "final commit",
        "--force-live-target",
        "--force-live-source",
        "--allow-rewind",
        "--clamp-to-log-end",
        "UNKNOWN_MEMBER_ID",
        "3 blocked",
    ):
        assert needle in text, needle


@pytest.mark.parametrize("command", [["migrate", "plan"], ["migrate", "offsets"]], ids=" ".join)
def test_migrate_commands_document_their_options(command: list[str]) -> None:
    text = invoke(*command, "--help").stdout
    for needle in (
        "--zookeeper",
        "--zk-digest",
        "--bootstrap-server",
        "--command-config",
        "--json",
        "--topic",
        "Example",
        "Exit status",
    ):
        assert needle in text, (command, needle)


def test_migrate_offsets_says_it_writes_and_lists_every_override() -> None:
    text = invoke("migrate", "offsets", "--help").stdout
    for needle in (
        "THIS WRITES",
        "--execute",
        "--allow-rewind",
        "--force-live-target",
        "--force-live-source",
        "--clamp-to-log-end",
        "refuse-rewind",
        "target-only-keep",
        "source-only",
    ):
        assert needle in text, needle


def test_export_help_documents_the_spark_format() -> None:
    text = invoke("offsets", "export", "--help").stdout
    assert "--format" in text and "startingOffsets" in text and "-2 (earliest)" in text


@pytest.mark.parametrize(
    "args,needle",
    [
        (["migrate", "offsets", "--zookeeper", "z:1", "-g", "g"], "Missing option '--to'"),
        (["migrate", "offsets", "--zookeeper", "z:1", "-g", "g", "--to", "hdfs"], "'hdfs' is not one of"),
        (["migrate", "plan", "--zookeeper", "z:1"], "Missing option '--group'"),
        (["migrate", "plan", "--zookeeper", "z:1", "-g", "g", "--topic", "a/b"], "invalid topic name"),
        (["offsets", "export", "--zookeeper", "z:1", "--format", "spark"], "exactly one --group"),
        (["offsets", "export", "--zookeeper", "z:1", "--format", "spark", "-g", "a", "-g", "b"], "exactly one --group"),
        (["offsets", "export", "--zookeeper", "z:1", "--format", "spark", "-g", "a", "--json"], "disagree"),
        (["offsets", "export", "--zookeeper", "z:1", "--format", "xml"], "'xml' is not one of"),
    ],
)
def test_usage_errors_exit_2(args: list[str], needle: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and "Traceback" not in result.output


def test_unreachable_zookeeper_is_one_line_and_exit_1() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = invoke("migrate", "plan", "--zookeeper", f"127.0.0.1:{port}", "--zk-timeout", "0.5", "-g", "g")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("zkconsumer: error: ZooKeeper unreachable") and result.stderr.count("\n") == 1
