"""Brokers reached over TLS and SASL_SSL (issue #13): the endpoint is chosen by the configured
security protocol or listener name, librdkafka gets the TLS/SASL settings, and a wrong CA or a
wrong password is one clear, throttled log line rather than silence or a storm.

The cluster keeps its PLAINTEXT listener for the harness's own topic creation and production; the
members are configured for SSL or SASL_SSL and must choose those endpoints from /brokers/ids.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.members import Recorder, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.cli.main import cli as cli_main
from zkconsumer.errors import ConsumerRebalanceFailed
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import LocalCluster
from zkconsumer.testing.pytest_plugin import running
from zkconsumer.testing.secure import BrokerSecurity, make_ca

pytestmark = pytest.mark.cluster

TOPIC = "secured"
PARTITIONS = 3
MESSAGES = 60


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, BrokerSecurity, list]]:
    folder = tmp_path_factory.mktemp("secured")
    security = BrokerSecurity.create(folder / "tls")
    cluster = LocalCluster(brokers=1, chroot="/secured", workdir=folder / "cluster", security=security)
    with running(cluster, "the secured cluster", timeout=90):
        cluster.create_topic(TOPIC, partitions=PARTITIONS)
        sent = kafka.produce_numbered(cluster.bootstrap_servers, TOPIC, MESSAGES, partitions=PARTITIONS)
        yield cluster, security, sent


def _config(cluster: LocalCluster, group: str, settings: dict[str, str], **extra: object) -> dict[str, object]:
    return {
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": group,
        "consumer.id": "m1",
        "auto.offset.reset": "smallest",
        "auto.commit.enable": False,
        "consumer.timeout.ms": 200,
        "rebalance.backoff.ms": 500,
        **{f"librdkafka.{k}": v for k, v in settings.items()},
        **extra,
    }


def _consume_all(config: dict[str, object], sent: list) -> ConsumerConnector:  # type: ignore[type-arg]
    recorder = Recorder()
    conn = ConsumerConnector(config)
    drain("m1", conn.create_message_streams({TOPIC: 1})[TOPIC], recorder)
    recorder.wait_for(keys_of(sent), timeout=60)
    assert {(d.partition, d.offset, d.value) for d in recorder.deliveries} == {
        (m.partition, m.offset, m.value) for m in sent
    }
    return conn


def _fetcher_bootstrap(conn: ConsumerConnector) -> str:
    fetcher = conn.rebalancer.fetcher
    return fetcher.settings.bootstrap_servers  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("protocol", "mechanism"), [("SSL", None), ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256")]
)
def test_a_secured_listener_is_chosen_by_protocol_and_consumed(
    secured,
    protocol: str,  # type: ignore[no-untyped-def]
    mechanism: str | None,
) -> None:
    cluster, security, sent = secured
    settings = security.client_settings(protocol, mechanism=mechanism or "PLAIN")
    group = f"sec-{protocol}-{mechanism}".replace("-", "_").lower()
    conn = _consume_all(_config(cluster, group, settings), sent)
    try:
        assert _fetcher_bootstrap(conn) == cluster.listener_bootstrap(protocol)
        conn.commit_offsets()
    finally:
        conn.shutdown()


def test_a_listener_name_picks_the_endpoint(secured) -> None:  # type: ignore[no-untyped-def]
    cluster, security, sent = secured
    settings = security.client_settings("SSL")
    conn = _consume_all(_config(cluster, "sec_listener", settings, **{"zkconsumer.broker.listener": "external"}), sent)
    try:
        assert _fetcher_bootstrap(conn) == cluster.listener_bootstrap("EXTERNAL")  # not the first SSL one
    finally:
        conn.shutdown()


@pytest.mark.parametrize("problem", ["untrusted CA", "wrong password"])
def test_a_rejected_connection_names_its_cause_without_a_storm(
    secured,
    problem: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster, security, _ = secured
    if problem == "untrusted CA":
        settings = security.client_settings("SSL", ca_location=str(make_ca(tmp_path, "other-ca")))
        expected = ("certificate verify failed", "SSL handshake failed")
    else:
        settings = security.client_settings("SASL_SSL", mechanism="SCRAM-SHA-256", password="not-the-password")
        expected = ("Authentication failed", "authentication failed")
    caplog.set_level(logging.WARNING, logger="zkconsumer")
    # a short socket timeout: each attempt's log-start lookup waits that long for a broker
    conn = ConsumerConnector(
        _config(cluster, f"sec_bad_{problem[:5].strip()}", settings, **{"socket.timeout.ms": 3000})
    )
    try:
        with pytest.raises(ConsumerRebalanceFailed) as caught:  # the start offsets cannot be looked up
            conn.create_message_streams({TOPIC: 1})
    finally:
        conn.shutdown()
    assert any(e in str(caught.value) for e in expected), caught.value  # the cause, not "all brokers down"
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("zkconsumer")]
    assert len(lines) <= 12, lines  # librdkafka retries every few seconds; we say it once per attempt


def test_the_cli_reads_log_ends_through_command_config(secured, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster, security, sent = secured
    group = "sec_cli"
    conn = _consume_all(_config(cluster, group, security.client_settings("SSL")), sent)
    try:
        conn.commit_offsets()
    finally:
        conn.shutdown()
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in security.client_settings("SASL_SSL").items()))
    runner = CliRunner()
    args = [
        "groups",
        "describe",
        "--zookeeper",
        cluster.zookeeper_connect,
        "--group",
        group,
        "--json",
        "--command-config",
        str(config),
    ]
    result = runner.invoke(cli_main, args)
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    assert described["total_lag"] == 0, described
    assert {p["log_end_offset"] for p in described["partitions"]} == {MESSAGES // PARTITIONS}, described
    plain = runner.invoke(cli_main, args[:-2] + ["--broker-listener", "NOPE"])
    assert "no broker registers a listener named NOPE" in plain.output, plain.output
