"""The Kafka side of a group that commits there too (offsets.storage=kafka, dual commit): read and write it.

Such members read the larger of their ZooKeeper and Kafka offsets (or Kafka's alone), so an
offset written to ZooKeeper only is ignored wherever Kafka holds a larger one. Nothing in
ZooKeeper says how a group stores offsets; whether Kafka holds offsets of the group is what
tells, and is asked of the brokers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.log_offsets import (
    LIBRDKAFKA_LOG,
    BrokerAccess,
    Warn,
    log_warning,
    reach,
)
from zkconsumer.errors import AdminUnavailable
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.client import run_bounded

ZOOKEEPER_ONLY_HINT = (
    "fix the broker connection (--bootstrap-server, --command-config), or pass --zookeeper-only "
    "if the group's members keep offsets in ZooKeeper only (offsets.storage=zookeeper)"
)


class KafkaCommits:
    """One group's Kafka-committed offsets, through a confluent-kafka Consumer carrying the group's
    id that never subscribes, so it never joins (or disturbs) the group. Commits go out with no
    generation, as a dual-commit member's (and Scala's OffsetCommitRequest with generation -1) do.

    Use as a context manager.
    """

    def __init__(self, bootstrap: str, group: str, settings: Mapping[str, str], timeout: float = 30.0) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.timeout = timeout
        from confluent_kafka import Consumer

        self._consumer = Consumer(
            {
                **settings,
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "log.connection.close": False,
                "logger": LIBRDKAFKA_LOG,
            }
        )

    def __enter__(self) -> KafkaCommits:
        return self

    def __exit__(self, *exc: object) -> None:
        run_bounded(self._consumer.close, 10.0, "zkconsumer-close-kafka-commits")

    def committed(self, keys: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """key -> the group's Kafka-committed offset, for the keys that have one; AdminUnavailable when the
        brokers cannot say (the caller cannot then know whether a ZooKeeper write takes effect)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTP

        keys = sorted(set(keys))
        if not keys:
            return {}
        try:
            found = self._consumer.committed([KafkaTP(t, p) for t, p in keys], timeout=self.timeout)
        except KafkaException as exc:
            raise AdminUnavailable(
                f"cannot read group {self.group}'s Kafka-committed offsets from {self.bootstrap} "
                f"({_text(exc)}), so cannot tell whether its members would ignore a ZooKeeper-only "
                f"write; {ZOOKEEPER_ONLY_HINT}"
            ) from None
        refused = [(tp, tp.error) for tp in found if tp.error is not None]
        if refused:  # TOPIC_AUTHORIZATION_FAILED and the like: "no Kafka offset" would be a guess
            raise AdminUnavailable(
                f"cannot read group {self.group}'s Kafka-committed offsets of "
                + ", ".join(f"{tp.topic}-{tp.partition} ({error.str()})" for tp, error in refused)
                + f" from {self.bootstrap}; {ZOOKEEPER_ONLY_HINT}"
            )
        return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}

    def commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, str | None]:
        """Write offsets; key -> None (written) or why Kafka refused it."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaTP

        if not offsets:
            return {}
        answers: list[Any] = []

        def commit_now() -> None:
            try:
                answers.append(
                    self._consumer.commit(
                        offsets=[KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())], asynchronous=False
                    )
                )
            except KafkaException as exc:
                answers.append(exc)

        # A synchronous commit has no timeout of its own: a coordinator that went away would hang the
        # command after ZooKeeper was already written.
        if not run_bounded(commit_now, self.timeout, "zkconsumer-kafka-commit"):
            return {key: f"no answer from the group coordinator within {self.timeout:g} s" for key in offsets}
        if isinstance(answers[0], KafkaException):
            return {key: _text(answers[0]) for key in offsets}
        out: dict[TopicPartition, str | None] = {key: None for key in offsets}
        for tp in answers[0] or []:
            if tp.error is not None:
                out[(tp.topic, tp.partition)] = tp.error.str()
        return out


def _text(exc: Exception) -> str:
    error = exc.args[0] if exc.args else exc
    return error.str() if hasattr(error, "str") else str(error)


@admin_errors
def open_kafka_commits(
    client: KazooClient, access: BrokerAccess, group: str, *, warn: Warn = log_warning
) -> KafkaCommits:
    """KafkaCommits for `group`, bootstrapped as the log-offset reads are; AdminUnavailable without brokers."""
    bootstrap, settings = reach(client, access, warn=warn)
    if not bootstrap:
        raise AdminUnavailable(
            f"no broker to ask whether group {group} also commits offsets to Kafka (then its members "
            f"would ignore a ZooKeeper-only write); {ZOOKEEPER_ONLY_HINT}"
        )
    return KafkaCommits(bootstrap, group, settings)
