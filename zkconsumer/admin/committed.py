"""A group's ZooKeeper offset nodes as members read them: valid, garbled, or older than their topic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.cluster.metadata import ClusterMetadata
from zkconsumer.errors import ZkDataError
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.offset_nodes import offset_predates_topic
from zkconsumer.zookeeper.reads import children, get_many


@dataclass
class ZkOffsets:
    """`valid`: what a member resumes from. `garbled`: key -> why the node cannot be decoded.
    `stale`: key -> the value of a node last written before its topic was (re)created, which the
    core ignores (a member starts from auto.offset.reset), so it is no current offset either."""

    valid: dict[TopicPartition, int] = field(default_factory=dict)
    garbled: dict[TopicPartition, str] = field(default_factory=dict)
    stale: dict[TopicPartition, int] = field(default_factory=dict)
    # valid key -> its node's (mzxid, mtime ms): a new mzxid is a new commit, mtime when it was made
    written: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)

    def stale_note(self, key: TopicPartition) -> str:
        return (
            f"ZooKeeper holds {self.stale[key]}, committed before topic {key[0]} was (re)created: members ignore it"
            if key in self.stale
            else ""
        )


@admin_errors
def read_offsets(client: KazooClient, group: str, topics: Iterable[str]) -> ZkOffsets:
    """Every offset node under offsets/<topic>, sorted as valid, garbled or stale."""
    topics = sorted(set(topics))
    paths: dict[TopicPartition, str] = {}
    for topic in topics:
        folder = znodes.offsets_path(group, topic)
        for child in children(client, folder):
            if child.lstrip("-").isdigit():
                paths[(topic, int(child))] = f"{folder}/{child}"
    found = get_many(client, paths)
    # Read after the offset nodes: a topic re-created in between then makes them stale, never the
    # other way round (an old node taken for current).
    epochs = ClusterMetadata(client).topic_epochs(topics) if paths else {}
    out = ZkOffsets()
    for key, (data, stat) in found.items():
        try:
            value = znodes.decode_offset(data, znodes.offset_path(group, *key))
        except ZkDataError as exc:
            out.garbled[key] = exc.reason
            continue
        if offset_predates_topic(stat, epochs.get(key[0])):
            out.stale[key] = value
        else:
            out.valid[key] = value
            out.written[key] = (stat.mzxid, stat.mtime)
    return out
