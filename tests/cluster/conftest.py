"""Fixtures of the cluster tests: `run`, the zkconsumer CLI invoked in-process against the session cluster."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from zkconsumer.cli.main import cli


@pytest.fixture
def run(cluster):  # type: ignore[no-untyped-def]
    """run(*args, input=None) -> click Result, with ZKCONSUMER_ZOOKEEPER pointing at the cluster."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(
            cli,
            list(args),
            input=input,
            catch_exceptions=False,
            env={"ZKCONSUMER_ZOOKEEPER": cluster.zookeeper_connect, "COLUMNS": "200"},
        )

    return invoke
