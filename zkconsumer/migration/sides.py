"""Pure: what a migration reads of a group: its ZooKeeper side and its broker-coordinated side."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zkconsumer.partitions import TopicPartition

ZKCONSUMER, SCALA = "zkconsumer", "scala"  # a registered member with or without the zkconsumer marker
IDLE_KAFKA_STATES = frozenset({"Empty", "Dead"})  # Dead: the broker knows no such group (yet)

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


@dataclass(frozen=True)
class KafkaMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()

    def label(self) -> str:
        return f"{self.client_id}@{self.host.lstrip('/')}"


@dataclass(frozen=True)
class KafkaSide:
    """The broker-coordinated group of the same id: state as Kafka names it, members, committed offsets."""

    state: str = "Dead"
    members: tuple[KafkaMember, ...] = ()
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return bool(self.members) or self.state not in IDLE_KAFKA_STATES

    def describe(self, group: str) -> str:
        shown = ", ".join(m.label() for m in self.members[:5]) + (", ..." if len(self.members) > 5 else "")
        return f"broker group {group} is {self.state} with {len(self.members)} members" + (
            f" ({shown})" if shown else ""
        )


def in_scope(keys: Iterable[TopicPartition], topics: Iterable[str] | None) -> list[TopicPartition]:
    wanted = None if topics is None else set(topics)
    return sorted(k for k in set(keys) if wanted is None or k[0] in wanted)
