"""ConsumerRebalanceListener: what an application can hook into a rebalance."""

from __future__ import annotations

from collections.abc import Mapping

from zkconsumer.errors import ConsumerRebalanceFailed


class ConsumerRebalanceListener:
    """Override what you need. Exceptions raised here fail the rebalance attempt (as in Scala).

    before_releasing_partitions: last chance to finish work on partitions about to move
    (MirrorMaker's KAFKA-1650 fix flushes and commits here).
    """

    def before_releasing_partitions(self, partitions: Mapping[str, set[int]]) -> None:
        """Called with topic -> partitions currently owned, before they are released."""

    def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, str]]) -> None:
        """Called with the group-wide topic -> partition -> thread id once ours are claimed, before
        they are fetched. An incremental member that could claim only part of its share (the rest
        still held by others) calls it again for each later part; the map is the whole decision
        either way, not what has started (ask the connector's owned_partitions() for that). An
        incremental member also claims what nobody holds before it releases its own moving
        partitions: then this comes first, and again after before_releasing_partitions."""

    def on_rebalance_failed(self, error: ConsumerRebalanceFailed) -> None:
        """Called when all rebalance.max.retries attempts failed; the member keeps retrying."""
