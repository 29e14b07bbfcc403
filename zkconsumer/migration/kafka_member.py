"""KafkaMember: one member of the broker-coordinated group as the brokers describe it."""

from __future__ import annotations

from dataclasses import dataclass

from zkconsumer.partitions import TopicPartition


@dataclass(frozen=True)
class KafkaMember:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()

    def label(self) -> str:
        return f"{self.client_id}@{self.host.lstrip('/')}"
