"""The Kafka brokers and ZooKeeper servers LocalCluster can run, and what differs between them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypedDict

DEFAULT_KAFKA = "3.9.1"


@dataclass(frozen=True)
class KafkaRelease:
    """One ZooKeeper-mode broker release and the jar set (zkconsumer/testing/poms/<jar_set>/pom.xml) it runs from."""

    version: str
    jar_set: str
    bundled_zookeeper: str  # the ZooKeeper its jars carry: what zookeeper_version=None runs
    broker_registration: int  # "version" of /brokers/ids/<id>
    topic_registration: int  # "version" of /brokers/topics/<t>
    idempotent_producer: bool = True  # 0.10 has no InitProducerId: librdkafka refuses enable.idempotence
    # Before 0.10 a broker answers no ApiVersions request (key 18: it drops the connection), so a
    # librdkafka client is told what it speaks: api.version.request=false + broker.version.fallback.
    librdkafka_fallback: str | None = None
    listeners: bool = True  # 0.8.2 has no `listeners`: host.name + port, advertised.host.name + advertised.port
    admin_requests: bool = True  # CreateTopics/DeleteTopics (0.10.1): before, topics are written in ZooKeeper
    controller_in_metadata: bool = True  # Metadata v1 (0.10.0) names the controller; v0 does not
    # A 0.8.2 broker learns the live brokers only from the controller's UpdateMetadata, which it sends
    # with partition states: before the first topic its metadata answer lists no broker at all.
    brokers_before_topics: bool = True

    def client_settings(self) -> dict[str, str]:
        """The librdkafka settings every client of this broker needs (none from 0.10 on)."""
        if self.librdkafka_fallback is None:
            return {}
        return {"api.version.request": "false", "broker.version.fallback": self.librdkafka_fallback}


@dataclass(frozen=True)
class ZooKeeperRelease:
    """One ZooKeeper server release; jar_set None means the broker's own jars (its bundled server)."""

    version: str
    jar_set: str | None


# cluster.BROKER_PROPERTIES suits every release: settings a broker does not know (transaction.*,
# group.initial.rebalance.delay.ms before 0.11, log.initial.task.delay.ms before 3.x) are ignored
# (0.8.2 and 0.9 log a WARN per setting), and every release from 0.9 accepts
# `listeners=PLAINTEXT://host:port`. The pre-0.10 ones share their jar sets with their Scala clients.
KAFKA: dict[str, KafkaRelease] = {
    r.version: r
    for r in (
        KafkaRelease(
            "0.8.2.2",
            "kafka0822",
            "3.4.6",
            1,
            1,
            idempotent_producer=False,
            librdkafka_fallback="0.8.2.2",
            listeners=False,
            admin_requests=False,
            controller_in_metadata=False,
            brokers_before_topics=False,
        ),
        KafkaRelease(
            "0.9.0.1",
            "kafka0901",
            "3.4.6",
            2,
            1,
            idempotent_producer=False,
            librdkafka_fallback="0.9.0.1",
            admin_requests=False,
            controller_in_metadata=False,
        ),
        KafkaRelease("0.10.2.2", "kafka0102", "3.4.9", 4, 1, idempotent_producer=False),
        KafkaRelease("0.11.0.3", "kafka0113", "3.4.10", 4, 1),
        KafkaRelease("1.1.1", "kafka11", "3.4.10", 4, 1),  # the Scala-client jar set is the 1.1.1 broker too
        KafkaRelease("2.4.1", "kafka241", "3.5.7", 4, 2),
        KafkaRelease("2.8.2", "kafka282", "3.5.9", 5, 3),
        KafkaRelease(DEFAULT_KAFKA, "kafka39", "3.8.4", 5, 3),
    )
}

ZOOKEEPER: dict[str, ZooKeeperRelease] = {
    "3.4.14": ZooKeeperRelease("3.4.14", "zk3414"),
    "3.5.10": ZooKeeperRelease("3.5.10", "zk3510"),
    "3.8.4": ZooKeeperRelease("3.8.4", "kafka39"),  # the server bundled with Kafka 3.9.1
}
ZOOKEEPER["3.8"] = ZOOKEEPER["3.8.4"]


def kafka_release(version: str) -> KafkaRelease:
    try:
        return KAFKA[version]
    except KeyError:
        raise ValueError(f"unsupported kafka_version {version!r} (supported: {', '.join(KAFKA)})") from None


def zookeeper_release(version: str | None, kafka: KafkaRelease) -> ZooKeeperRelease:
    """The server to run: `version`, or with None the one bundled in the broker's own jars."""
    if version is None:
        return ZooKeeperRelease(kafka.bundled_zookeeper, None)
    try:
        return ZOOKEEPER[version]
    except KeyError:
        raise ValueError(
            f"unsupported zookeeper_version {version!r} "
            f"(supported: {', '.join(ZOOKEEPER)} or None for the broker's own)"
        ) from None


def jar_sets() -> tuple[str, ...]:
    """Every jar set a version of the matrix may need (jars.KNOWN includes them)."""
    sets = [r.jar_set for r in KAFKA.values()] + [r.jar_set for r in ZOOKEEPER.values() if r.jar_set]
    return tuple(dict.fromkeys(sets))


class ClusterVersions(TypedDict):
    kafka_version: str
    zookeeper_version: str | None


def versions_from_env() -> ClusterVersions:
    """LocalCluster's kafka_version / zookeeper_version as ZKCONSUMER_KAFKA_VERSION and
    ZKCONSUMER_ZOOKEEPER_VERSION ask (scripts/matrix.py sets them); the defaults otherwise."""
    return ClusterVersions(
        kafka_version=os.environ.get("ZKCONSUMER_KAFKA_VERSION") or DEFAULT_KAFKA,
        zookeeper_version=os.environ.get("ZKCONSUMER_ZOOKEEPER_VERSION") or None,
    )
