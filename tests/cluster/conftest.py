"""Fixtures of the cluster tests: `run`, the zkconsumer CLI invoked in-process against the session cluster;
`make_fetcher`, Fetchers on the session cluster."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.fetching import fetcher_factory
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


@pytest.fixture
def make_fetcher(cluster, group_id):  # type: ignore[no-untyped-def]
    """make_fetcher(**settings) -> started Fetcher; `.errors` lists what on_error received."""
    yield from fetcher_factory(cluster.bootstrap_servers, group_id)
