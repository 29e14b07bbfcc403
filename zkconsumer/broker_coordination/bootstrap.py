"""Where a broker-coordinated member finds the brokers: its settings, else ZooKeeper's broker registrations."""

from __future__ import annotations

from collections.abc import Mapping

from zkconsumer.cluster.metadata import ClusterMetadata, bootstrap_servers, no_endpoint_message
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.errors import BrokersUnavailable
from zkconsumer.zookeeper.auth import zookeeper_auth
from zkconsumer.zookeeper.client import ZkIO, close_quietly, connect


def bootstrap_servers_for(config: ConsumerConfig) -> str:
    """Where a broker-coordinated member finds the brokers: librdkafka.bootstrap.servers, else the
    brokers' registrations in zookeeper.connect, read once (a short session, closed at once)."""
    given: Mapping[str, str] = config.librdkafka_overrides
    if given.get("bootstrap.servers"):
        return given["bootstrap.servers"]
    session_s = config.zookeeper_session_timeout_ms / 1000.0
    try:
        client = connect(
            config.zookeeper_connect,
            session_timeout_s=session_s,
            connect_timeout_s=config.zookeeper_connection_timeout_ms / 1000.0,
            auth=zookeeper_auth(config),
        )
    except Exception as exc:
        raise BrokersUnavailable(
            f"no librdkafka.bootstrap.servers, and the brokers cannot be read from ZooKeeper at "
            f"{config.zookeeper_connect}: {exc}"
        ) from exc
    try:
        brokers = ClusterMetadata(ZkIO(client, session_s)).brokers()
    finally:
        close_quietly(client, session_s)
    protocol, listener = config.broker_security_protocol, config.broker_listener
    found = bootstrap_servers(brokers, security_protocol=protocol, listener=listener)
    if not found:
        raise BrokersUnavailable(no_endpoint_message(brokers, security_protocol=protocol, listener=listener))
    return found
