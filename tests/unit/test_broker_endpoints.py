"""Choosing a broker endpoint by security protocol or listener name, and saying why none fits."""

from __future__ import annotations

import json

import pytest

from zkconsumer.cluster.broker_nodes import BrokerInfo, client_settings, decode_broker
from zkconsumer.cluster.metadata import bootstrap_servers, no_endpoint_message


def _broker(broker_id: int, endpoints: list[str], protocols: dict[str, str] | None = None) -> BrokerInfo:
    doc: dict[str, object] = {
        "version": 4,
        "host": None,
        "port": -1,
        "jmx_port": -1,
        "timestamp": "1",
        "endpoints": endpoints,
        "rack": None,
    }
    if protocols is not None:
        doc["listener_security_protocol_map"] = protocols
    return decode_broker(broker_id, json.dumps(doc).encode(), f"/brokers/ids/{broker_id}")


MIXED = [
    _broker(
        0,
        ["INTERNAL://10.0.0.1:9091", "SECURE://b0.example:9093", "SASL_SSL://b0.example:9094"],
        {"INTERNAL": "PLAINTEXT", "SECURE": "SSL", "SASL_SSL": "SASL_SSL"},
    ),
    _broker(
        1,
        ["INTERNAL://10.0.0.2:9091", "SECURE://[::1]:9093", "SASL_SSL://b1.example:9094"],
        {"INTERNAL": "PLAINTEXT", "SECURE": "SSL", "SASL_SSL": "SASL_SSL"},
    ),
]


def test_the_first_endpoint_of_the_protocol_is_chosen_on_every_broker() -> None:
    assert bootstrap_servers(MIXED) == "10.0.0.1:9091,10.0.0.2:9091"  # PLAINTEXT, as the legacy consumer
    assert bootstrap_servers(MIXED, security_protocol="ssl") == "b0.example:9093,[::1]:9093"
    assert bootstrap_servers(MIXED, security_protocol="SASL_SSL") == "b0.example:9094,b1.example:9094"


def test_a_listener_name_picks_among_endpoints_of_the_protocol() -> None:
    assert (
        bootstrap_servers(MIXED, security_protocol="sasl_ssl", listener="sasl_ssl") == "b0.example:9094,b1.example:9094"
    )
    assert bootstrap_servers(MIXED, security_protocol="SSL", listener="secure") == "b0.example:9093,[::1]:9093"
    assert bootstrap_servers(MIXED, security_protocol="SSL", listener="EXTERNAL") == ""
    assert bootstrap_servers(MIXED, security_protocol="SSL", listener="") == "b0.example:9093,[::1]:9093"  # unset


def test_a_listener_speaking_another_protocol_is_refused_and_explained() -> None:
    assert bootstrap_servers(MIXED, listener="secure") == ""  # SSL, while the protocol is PLAINTEXT
    message = no_endpoint_message(MIXED, listener="secure")
    assert "a listener named SECURE speaking PLAINTEXT (librdkafka.security.protocol)" in message
    assert "SECURE (SSL)" in message


def test_the_legacy_default_still_reads_plaintext_only_brokers() -> None:
    old = [_broker(3, ["PLAINTEXT://h3:9092"])]
    assert bootstrap_servers(old) == "h3:9092"
    assert old[0].plaintext_address() == ("h3", 9092)
    assert bootstrap_servers(old, security_protocol="SSL") == ""


def test_a_wildcard_bind_has_no_address() -> None:
    assert bootstrap_servers([_broker(4, ["SSL://:9093"])], security_protocol="SSL") == ""


def test_no_endpoint_message_names_what_each_broker_offers() -> None:
    message = no_endpoint_message(MIXED, security_protocol="SASL_PLAINTEXT")
    assert "no broker registers a SASL_PLAINTEXT endpoint" in message
    assert "broker 0: INTERNAL (PLAINTEXT), SECURE (SSL), SASL_SSL (SASL_SSL)" in message
    assert "zkconsumer.broker.listener" in message
    assert "a listener named EXTERNAL" in no_endpoint_message(MIXED, listener="external")
    assert no_endpoint_message([]) == "no broker is registered under /brokers/ids"


def test_an_unreadable_registration_is_named_or_reported() -> None:
    # decode_broker refuses such a node; a BrokerInfo built by hand can still carry one
    bad = BrokerInfo(
        5, None, None, ("WEIRD://h5:9095",), None, 4, listener_security_protocol_map=(("OTHER", "PLAINTEXT"),)
    )
    with pytest.raises(ValueError, match=r"/brokers/ids/5: no security protocol defined for listener WEIRD"):
        bootstrap_servers([bad, *MIXED])
    reported: list[str] = []
    assert bootstrap_servers([bad, *MIXED], on_unreadable=reported.append) == "10.0.0.1:9091,10.0.0.2:9091"
    assert reported == ["/brokers/ids/5: no security protocol defined for listener WEIRD"]
    assert "broker 5: unreadable" in no_endpoint_message([bad])


# As a 0.8.2.2 and a 0.9.0.1 broker registered themselves (LocalCluster, 2026-11-29).
KAFKA_0822 = b'{"jmx_port":-1,"timestamp":"1795948166019","host":"127.0.0.1","version":1,"port":36951}'
KAFKA_0901 = (
    b'{"jmx_port":-1,"timestamp":"1795947941292","endpoints":["PLAINTEXT://127.0.0.1:41387"],'
    b'"host":"127.0.0.1","version":2,"port":41387}'
)


def test_brokers_before_0_10_are_named_to_librdkafka_by_their_registration_version() -> None:
    b0822, b0901 = decode_broker(0, KAFKA_0822, "/brokers/ids/0"), decode_broker(1, KAFKA_0901, "/brokers/ids/1")
    assert bootstrap_servers([b0822, b0901]) == "127.0.0.1:36951,127.0.0.1:41387"
    legacy = {"api.version.request": "false"}
    assert client_settings([b0901]) == {**legacy, "broker.version.fallback": "0.9.0.1"}
    assert client_settings([b0901, b0822]) == {**legacy, "broker.version.fallback": "0.8.2.2"}  # the oldest
    assert client_settings(MIXED) == {}  # v4: librdkafka asks the broker (ApiVersions)
    assert client_settings([]) == {}
