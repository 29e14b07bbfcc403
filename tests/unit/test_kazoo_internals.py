"""kazoo's private connection loop is patched only on the kazoo versions that code was tested with."""

from __future__ import annotations

import logging

import pytest
from kazoo.client import KazooClient

from zkconsumer.zookeeper import batches, eager_io, internals
from zkconsumer.zookeeper.handler import make_handler


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(internals, "_said", set())
    monkeypatch.delenv(internals.SWITCH, raising=False)


def _client() -> KazooClient:
    return KazooClient(hosts="127.0.0.1:1", handler=make_handler())  # never started


def test_the_installed_kazoo_is_the_tested_one() -> None:
    # scripts/constraints.txt pins the kazoo the suite runs; a bump must be tested and listed.
    assert internals.kazoo_version() in internals.TESTED_KAZOO_VERSIONS


def test_a_tested_kazoo_gets_the_batched_loop() -> None:
    client = _client()
    assert internals.install(client) is True
    connection = client._connection
    assert connection._send_request.__func__ is batches._send_queued
    assert connection._write.__func__ is eager_io._eager_write


@pytest.mark.parametrize("version", ["2.10.0", "2.12.0", "3.0.0"])
def test_another_kazoo_runs_stock_and_says_so_once(
    version: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(internals, "kazoo_version", lambda: version)
    caplog.set_level(logging.INFO, logger=internals.__name__)
    clients = [_client(), _client()]
    assert [internals.install(c) for c in clients] == [False, False]
    for client in clients:
        connection = client._connection
        assert "_send_request" not in vars(connection) and "_read" not in vars(connection)  # kazoo's own methods
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and f"kazoo {version} is not one" in said[0] and "stock kazoo" in said[0]


@pytest.mark.parametrize("value", ["0", "off", "false", "no"])
def test_the_switch_turns_it_off(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(internals.SWITCH, value)
    client = _client()
    assert internals.install(client) is False
    assert "_send_request" not in vars(client._connection)
