"""What a member needs from a fetcher (PartitionFetcher: the Fetcher, or NoFetcher), and the one it holds (CurrentFetcher)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from zkconsumer.consumer.chunks import PartitionTopicInfo
from zkconsumer.consumer.fetcher.settings import FetchSettings
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper.deadline import Deadline


class PartitionFetcher(Protocol):
    """What a member needs from its fetcher (fetcher.Fetcher, or NoFetcher): the
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


class CurrentFetcher:
    """Holds the member's fetcher, so the parts that use it need not reach it through each other.

    The rebalance thread alone makes it (`make`, on the first attempt that finds a broker to
    bootstrap from); the rebalance steps, the watchdog's check, the offset store (Kafka-side
    commits and reads go through its Consumer) and the shutdown read it with `get`. A reference is
    written once and read whole, so readers need no lock.
    """

    def __init__(self, factory: Callable[[str], PartitionFetcher]) -> None:
        self._factory = factory
        self._fetcher: PartitionFetcher | None = None
        # librdkafka settings the brokers' registrations call for (broker_nodes.client_settings), for the factory
        self.broker_settings: dict[str, str] = {}

    def get(self) -> PartitionFetcher | None:
        """The fetcher, or None before the first rebalance found brokers."""
        return self._fetcher

    def make(self, bootstrap: str, broker_settings: Mapping[str, str] | None = None) -> PartitionFetcher:
        """Make (and start) the fetcher for brokers reached at `bootstrap` (needing `broker_settings`);
        on the rebalance thread only."""
        if self._fetcher is not None:
            raise RuntimeError("the fetcher is made once per member")
        self.broker_settings = dict(broker_settings or {})
        self._fetcher = self._factory(bootstrap)
        return self._fetcher

    def consumer(self) -> object | None:
        """The Consumer offsets are committed and read through (a ConsumerProxy), or None: no fetcher
        yet, or one that does not read (NoFetcher)."""
        fetcher = self._fetcher
        return fetcher.consumer if fetcher is not None else None
