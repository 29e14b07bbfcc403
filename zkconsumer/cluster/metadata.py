"""Cluster reads from ZooKeeper: brokers, topics, partitions and topic incarnations (CLI and Spark use it too)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.protocol.states import ZnodeStat

from zkconsumer.cluster import broker_nodes
from zkconsumer.cluster.broker_nodes import BrokerInfo
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import Watch, ZkIO

log = logging.getLogger(__name__)


class ClusterMetadata:
    """What the brokers registered under /brokers, read with bounded calls.

    A `watch` argument is armed by the same request that reads the data, so no change between
    the read and the watch can be missed.

    Example::

        meta = ClusterMetadata(ZkIO(client, timeout_s=6.0))
        brokers = meta.brokers()
        topics = meta.topics(["orders"])   # {"orders": ([0, 1, 2], czxid)}
    """

    def __init__(self, io: ZkIO | Any) -> None:
        self.io = io if isinstance(io, ZkIO) else ZkIO(io, timeout_s=30.0)
        self._decoded: dict[str, tuple[tuple[int, int], list[int]]] = {}  # topic -> (node version, partitions)

    def brokers(self, watch: Watch | None = None) -> list[BrokerInfo]:
        """Every registered broker. A child that is not a broker id is skipped with a warning naming
        it; a garbled registration raises ZkDataError naming the node."""
        out = []
        ids = []
        for raw in self.io.children(znodes.BROKER_IDS, watch=watch):
            if not raw.isascii() or not raw.isdigit():
                log.warning("ignoring %s/%s: not a broker id", znodes.BROKER_IDS, raw)
                continue
            ids.append(int(raw))
        found = self.io.get_many(((b, znodes.broker_path(b)) for b in sorted(ids)), "read brokers")
        for broker_id, answer in found.items():
            if answer is not None:
                out.append(broker_nodes.decode_broker(broker_id, answer[0], znodes.broker_path(broker_id)))
        return out

    def all_topics(self, watch: Watch | None = None) -> list[str]:
        return sorted(self.io.children(znodes.BROKER_TOPICS, watch=watch))

    def topics(self, topics: Iterable[str], watch: Watch | None = None) -> dict[str, tuple[list[int], int | None]]:
        """topic -> (sorted partition ids, epoch); a topic without a node has ([], None).

        The epoch is the topic node's czxid: it changes when a topic is deleted and created again
        under the same name, and never otherwise (adding partitions only sets data). With a
        watch, a missing topic's node gets an existence watch, so its creation is seen too.
        """
        wanted = sorted(set(topics))
        found = self.io.get_many(((t, znodes.topic_path(t)) for t in wanted), "read topics", watch=watch)
        out: dict[str, tuple[list[int], int | None]] = {}
        for topic in wanted:
            answer = found[topic]
            if answer is None and watch is not None:
                stat = self.io.exists(znodes.topic_path(topic), watch=watch)
                if stat is not None:  # created between the two requests: read it now
                    answer = self.io.get(znodes.topic_path(topic))
            if answer is None:
                out[topic] = ([], None)
                continue
            data, stat = answer
            out[topic] = (self._partitions_of(topic, data, stat), stat.czxid)
        return out

    def _partitions_of(self, topic: str, data: bytes, stat: ZnodeStat) -> list[int]:
        """Decoded once per version of the topic node: every rebalance attempt reads it, and at
        thousands of partitions the JSON costs more than the read."""
        known = self._decoded.get(topic)
        if known is not None and known[0] == (stat.czxid, stat.mzxid):
            return list(known[1])
        partitions = sorted(broker_nodes.decode_topic_partitions(data, znodes.topic_path(topic)))
        self._decoded[topic] = ((stat.czxid, stat.mzxid), partitions)
        return list(partitions)

    def partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """topic -> sorted partition ids; a topic without a node has none (as in Scala)."""
        return {t: parts for t, (parts, _) in self.topics(topics).items()}

    def topic_epochs(self, topics: Iterable[str]) -> dict[str, int | None]:
        """topic -> the czxid of its node now (None: the topic does not exist)."""
        return {t: (stat.czxid if stat is not None else None) for t, stat in self.topic_stats(topics).items()}

    def topic_stats(self, topics: Iterable[str]) -> dict[str, ZnodeStat | None]:
        """topic -> the stat of its node now (czxid: the incarnation; ctime: when it was created)."""
        wanted = sorted(set(topics))
        return self.io.exists_many(((t, znodes.topic_path(t)) for t in wanted), "read topic nodes")


def bootstrap_servers(
    brokers: Iterable[BrokerInfo],
    *,
    security_protocol: str = "PLAINTEXT",
    listener: str | None = None,
    on_unreadable: Callable[[str], object] | None = None,
) -> str:
    """host:port,... of each broker's endpoint for `listener` (by name), or else for the first
    endpoint speaking `security_protocol`; "" when no broker has one.

    A registration whose endpoints cannot be parsed raises ValueError naming the broker, unless
    `on_unreadable` takes the message (the CLI warns and goes on with the other brokers).
    """
    addresses = []
    for broker in brokers:
        try:
            address = broker.address_for(security_protocol, listener)
        except ValueError as exc:
            message = f"{znodes.broker_path(broker.broker_id)}: {exc}"
            if on_unreadable is None:
                raise ValueError(message) from None
            on_unreadable(message)
            continue
        if address is not None:
            host, port = address
            addresses.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return ",".join(addresses)


def no_endpoint_message(
    brokers: Iterable[BrokerInfo], *, security_protocol: str = "PLAINTEXT", listener: str | None = None
) -> str:
    """Why bootstrap_servers found nothing, naming what each broker does register."""
    wanted = f"a listener named {listener.upper()}" if listener else f"a {security_protocol.upper()} endpoint"
    seen = []
    for broker in brokers:
        try:
            ends = ", ".join(f"{e.listener} ({e.security_protocol})" for e in broker.end_points()) or "none"
        except ValueError as exc:
            ends = f"unreadable: {exc}"
        seen.append(f"broker {broker.broker_id}: {ends}")
    if not seen:
        return f"no broker is registered under {znodes.BROKER_IDS}"
    if listener:
        wanted += f" speaking {security_protocol.upper()} (librdkafka.security.protocol)"
    return (
        f"no broker registers {wanted} with a host ({'; '.join(seen)}); set librdkafka.security.protocol "
        "or zkconsumer.broker.listener to one the brokers offer"
    )
