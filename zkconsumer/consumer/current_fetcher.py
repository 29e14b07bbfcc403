"""CurrentFetcher: the member's fetcher once it has one; made by the rebalance thread, read by the other parts."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from zkconsumer.consumer.partition_fetcher import PartitionFetcher


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
