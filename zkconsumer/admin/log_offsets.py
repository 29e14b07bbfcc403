"""The way to the brokers (BrokerAccess, reach) and log start/end offsets from them (a throwaway confluent-kafka Consumer)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.cluster.broker_nodes import client_settings
from zkconsumer.cluster.metadata import ClusterMetadata, bootstrap_servers, no_endpoint_message
from zkconsumer.errors import LogOffsetsUnavailable, ZkDataError
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.client import run_bounded

if TYPE_CHECKING:
    from confluent_kafka import Consumer

LIBRDKAFKA_LOG = logging.getLogger("zkconsumer.cli.librdkafka")  # swallowed: the tools report errors themselves
LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
LIBRDKAFKA_LOG.propagate = False


Warn = Callable[[str], None]
_log = logging.getLogger(__name__)


def log_warning(message: str) -> None:
    """The default warning sink: this module's logger (the CLI passes its one-line stderr warning)."""
    _log.warning("%s", message)


@dataclass(frozen=True)
class BrokerAccess:
    """How a command reaches the brokers: --bootstrap-server, or the endpoints under /brokers/ids
    of --broker-listener or of the security.protocol in --command-config (PLAINTEXT), with the
    file's librdkafka settings (TLS, SASL) on the connection."""

    bootstrap_override: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold passwords
    listener: str | None = None

    @property
    def security_protocol(self) -> str:
        return self.settings.get("security.protocol", "PLAINTEXT").upper()


_PLAINTEXT = BrokerAccess()  # PLAINTEXT endpoints, no settings


@admin_errors
def bootstrap_from_zookeeper(
    client: KazooClient, access: BrokerAccess = _PLAINTEXT, *, warn: Warn = log_warning
) -> str | None:
    """host:port,... of every registered broker's endpoint for the access's listener or protocol
    (PLAINTEXT, as ClientUtils did); None (with a warning saying what the brokers offer) if none."""
    protocol, listener = access.security_protocol, access.listener
    try:
        brokers = ClusterMetadata(client).brokers()
    except ZkDataError as exc:
        warn(f"skipping a garbled broker registration: {exc}")
        return None
    bootstrap = bootstrap_servers(brokers, security_protocol=protocol, listener=listener, on_unreadable=warn)
    if not bootstrap:
        warn(no_endpoint_message(brokers, security_protocol=protocol, listener=listener))
    return bootstrap or None


class Watermarks:
    """Log start/end offsets through a throwaway confluent-kafka Consumer (never joins a group).

    Use as a context manager; `available` is False (with `reason`) when no broker can be reached,
    and every lookup then returns nothing instead of waiting on each partition.
    """

    def __init__(
        self,
        bootstrap: str | None,
        timeout: float = 10.0,
        *,
        quiet: bool = False,
        settings: Mapping[str, str] | None = None,
        warn: Warn = log_warning,
    ) -> None:
        self.bootstrap = bootstrap
        self._warn = warn  # what the brokers could not answer, as it happens
        self.timeout = timeout
        self.quiet = quiet
        self.settings = dict(settings or {})  # librdkafka connection settings (TLS, SASL)
        self.reason: str | None = None if bootstrap else "no broker endpoint found under /brokers/ids"
        # Partitions of the last offsets() call the brokers failed to answer for (not: do not have).
        self.unanswered: dict[TopicPartition, str] = {}
        self._topic_errors: dict[str, str] = {}
        self._consumer: Consumer | None = None
        self._existing: dict[str, set[int]] | None = None

    def __enter__(self) -> Watermarks:
        if self.bootstrap:
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    **self.settings,
                    "bootstrap.servers": self.bootstrap,
                    "group.id": f"zkconsumer-cli-{uuid.uuid4().hex[:12]}",
                    "enable.auto.commit": False,
                    "socket.timeout.ms": int(self.timeout * 1000),
                    "log.connection.close": False,
                    "logger": LIBRDKAFKA_LOG,
                }
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            # Bounded like every close on an exit path: a Ctrl-C must end the command.
            run_bounded(consumer.close, 10.0, "zkconsumer-close-watermarks")

    @property
    def available(self) -> bool:
        return self._consumer is not None and self.reason is None

    @property
    def _open(self) -> Consumer:
        """The consumer, where `available` was checked."""
        assert self._consumer is not None
        return self._consumer

    def _metadata(self, topics: Iterable[str]) -> dict[str, set[int]]:
        """topic -> partitions the brokers know (topics they do not know map to nothing)."""
        from confluent_kafka import KafkaException

        existing: dict[str, set[int]] = {}
        if not self.available:
            return existing
        try:
            meta = self._open.list_topics(timeout=min(self.timeout, 5.0))
        except KafkaException as exc:
            self.reason = f"brokers at {self.bootstrap} unreachable ({exc.args[0].str() if exc.args else exc})"
            if not self.quiet:
                self._warn(f"log offsets unavailable: {self.reason}")
            return existing
        for topic in topics:
            info = meta.topics.get(topic)
            if info is not None and info.error is None:
                existing[topic] = set(info.partitions)
            elif info is not None and info.error.name() != "UNKNOWN_TOPIC_OR_PART":
                self._topic_errors[topic] = info.error.str()  # e.g. not authorized: not "no such topic"
        return existing

    def offsets(self, keys: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """(topic, partition) -> (log start, log end); partitions the brokers cannot answer are left out."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        keys = sorted(set(keys))
        self._topic_errors = {}
        existing = self._metadata({t for t, _ in keys})
        self.unanswered = {(t, p): self._topic_errors[t] for t, p in keys if t in self._topic_errors}
        out: dict[TopicPartition, tuple[int, int]] = {}
        for topic, partition in keys:
            if partition not in existing.get(topic, ()):
                continue
            try:
                low, high = self._open.get_watermark_offsets(  # _metadata found partitions: available
                    KafkaTopicPartition(topic, partition), timeout=self.timeout, cached=False
                )
            except KafkaException as exc:
                reason = exc.args[0].str() if exc.args else str(exc)
                self.unanswered[(topic, partition)] = reason
                self._warn(f"no log offsets for {topic}-{partition}: {reason}")
                continue
            out[(topic, partition)] = (low, high)
        return out

    def offsets_for_time(self, keys: Iterable[TopicPartition], timestamp_ms: int) -> dict[TopicPartition, int]:
        """(topic, partition) -> the first offset whose timestamp is >= timestamp_ms (-1: none that late)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        if not self.available:
            raise LogOffsetsUnavailable(f"cannot look up offsets by time: {self.reason}")
        keys = sorted(set(keys))
        try:
            found = self._open.offsets_for_times(
                [KafkaTopicPartition(t, p, timestamp_ms) for t, p in keys], timeout=self.timeout
            )
        except KafkaException as exc:
            raise LogOffsetsUnavailable(
                f"offset lookup by time failed: {exc.args[0].str() if exc.args else exc}"
            ) from None
        return {(tp.topic, tp.partition): tp.offset for tp in found if tp.error is None}


@admin_errors
def legacy_settings(client: KazooClient) -> dict[str, str]:
    """What librdkafka must be told of the pre-0.10 brokers under /brokers/ids (no ApiVersions:
    broker_nodes.client_settings); the access's own settings are laid over these."""
    try:
        return client_settings(ClusterMetadata(client).brokers())
    except ZkDataError:
        return {}


@admin_errors
def reach(client: KazooClient, access: BrokerAccess, *, warn: Warn = log_warning) -> tuple[str | None, dict[str, str]]:
    """How to reach the brokers: the bootstrap servers (the access's own, else the endpoints under
    /brokers/ids; None: neither) and the librdkafka settings (the access's own laid over what
    pre-0.10 brokers need)."""
    bootstrap = access.bootstrap_override or bootstrap_from_zookeeper(client, access, warn=warn)
    return bootstrap, {**legacy_settings(client), **access.settings}


@admin_errors
def open_watermarks(
    client: KazooClient, access: BrokerAccess, *, quiet: bool = False, warn: Warn = log_warning
) -> Watermarks:
    """Watermarks bootstrapped from the access's bootstrap servers or /brokers/ids (a warning if neither works)."""
    bootstrap, settings = reach(client, access, warn=warn)
    marks = Watermarks(bootstrap, quiet=quiet, settings=settings, warn=warn)
    if marks.reason and not quiet:
        warn(f"log offsets unavailable: {marks.reason}")
    return marks
