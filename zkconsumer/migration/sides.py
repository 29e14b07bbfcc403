"""Pure: what a migration reads of a group: its ZooKeeper side and its broker-coordinated side."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zkconsumer.migration.kafka_member import KafkaMember as KafkaMember
from zkconsumer.migration.kafka_side import IDLE_KAFKA_STATES as IDLE_KAFKA_STATES
from zkconsumer.migration.kafka_side import KafkaSide as KafkaSide
from zkconsumer.partitions import TopicPartition

ZKCONSUMER, SCALA = "zkconsumer", "scala"  # a registered member with or without the zkconsumer marker

__all__ = ["IDLE_KAFKA_STATES", "SCALA", "ZKCONSUMER", "KafkaMember", "KafkaSide", "ZkSide", "in_scope"]


@dataclass(frozen=True)
class ZkSide:
    """The group under /consumers/<group>: member id -> kind (ZKCONSUMER or SCALA), owner thread per
    partition, valid committed offsets (none older than their topic), topics a Spark ingest job holds."""

    group: str
    members: Mapping[str, str] = field(default_factory=dict)
    owners: Mapping[TopicPartition, str] = field(default_factory=dict)
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    ingest_topics: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return bool(self.members or self.owners or self.ingest_topics)


def in_scope(keys: Iterable[TopicPartition], topics: Iterable[str] | None) -> list[TopicPartition]:
    wanted = None if topics is None else set(topics)
    return sorted(k for k in set(keys) if wanted is None or k[0] in wanted)
