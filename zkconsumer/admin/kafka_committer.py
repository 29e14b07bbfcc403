"""KafkaCommitter: what an offset write needs of the Kafka side of a group that commits there too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from zkconsumer.partitions import TopicPartition


class KafkaCommitter(Protocol):
    """The Kafka side of a group that commits there (admin.kafka_commits.KafkaCommits is one)."""

    def commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, str | None]: ...
