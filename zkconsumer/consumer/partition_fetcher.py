"""What a member needs from a fetcher (the Fetcher, or NoFetcher for members that own without reading)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.consumer.fetch_settings import FetchSettings
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.deadline import Deadline


class PartitionFetcher(Protocol):
    """What a member needs from its fetcher (zkconsumer.consumer.fetcher.Fetcher, or NoFetcher): the
    rebalance steps start, move and stop fetching; the offset store commits through `consumer` and
    describes the broker-side group with `settings`."""

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None: ...

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None: ...

    def remove(self, keys: Sequence[TopicPartition]) -> None: ...

    def stop_fetching(self) -> None: ...

    def assigned(self) -> set[TopicPartition] | None: ...

    def close(self, timeout: float = 10.0) -> None: ...

    def set_deadline(self, deadline: Deadline) -> None:
        """Bound every Kafka call made from now on (a shutdown's deadline: its final commit goes through it)."""

    @property
    def consumer(self) -> object | None: ...

    @property
    def settings(self) -> FetchSettings | None:
        """How its Consumer reaches the brokers (an admin client for the same cluster copies it); None: it has none."""


class NoFetcher:
    """fetch=False: own partitions without reading them (e.g. a Spark driver whose executors read).

    With `commits` (a started Fetcher that is never given a partition, so it fetches nothing), the
    offset store commits and reads Kafka-side offsets (offsets.storage=kafka, dual commit) through
    that fetcher's Consumer, bounded by its deadline as a reading member's are: one Kafka-side
    commit path for both kinds of member. Without it the member has no broker connection."""

    _commits: PartitionFetcher | None = None
    consumer: object | None = None
    settings: FetchSettings | None = None

    def __init__(self, commits: PartitionFetcher | None = None) -> None:
        self._commits = commits
        if commits is not None:
            self.consumer, self.settings = commits.consumer, commits.settings  # it is started: both are set

    def assign(self, infos: Sequence[PartitionTopicInfo]) -> None:
        pass

    def add(self, infos: Sequence[PartitionTopicInfo]) -> None:
        pass

    def remove(self, keys: Sequence[TopicPartition]) -> None:
        pass

    def stop_fetching(self) -> None:
        pass

    def assigned(self) -> set[TopicPartition] | None:
        return None  # nothing to compare with

    def close(self, timeout: float = 10.0) -> None:
        if self._commits is not None:
            self._commits.close(timeout)

    def set_deadline(self, deadline: Deadline) -> None:
        if self._commits is not None:  # a shutdown's final Kafka-side commit goes through it
            self._commits.set_deadline(deadline)
