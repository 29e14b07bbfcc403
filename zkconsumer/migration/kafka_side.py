"""KafkaSide: the broker-coordinated side of a group: its state, members and committed offsets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from zkconsumer.migration.kafka_member import KafkaMember
from zkconsumer.partitions import TopicPartition

IDLE_KAFKA_STATES = frozenset({"Empty", "Dead"})  # Dead: the broker knows no such group (yet)


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
