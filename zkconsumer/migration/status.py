"""Pure: a group's migration seen from both stores at once: per-partition rows and the step it has reached."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zkconsumer.migration.sides import KafkaSide, ZkSide, in_scope
from zkconsumer.migration.step import Step as Step
from zkconsumer.partitions import TopicPartition


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    zookeeper_offset: int | None
    kafka_offset: int | None
    log_start: int | None
    log_end: int | None
    zookeeper_owner: str | None
    kafka_member: str | None

    @staticmethod
    def _lag(offset: int | None, end: int | None) -> int | None:
        return None if offset is None or end is None else max(0, end - offset)

    @property
    def zookeeper_lag(self) -> int | None:
        return self._lag(self.zookeeper_offset, self.log_end)

    @property
    def kafka_lag(self) -> int | None:
        return self._lag(self.kafka_offset, self.log_end)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "zookeeper_offset": self.zookeeper_offset,
            "kafka_offset": self.kafka_offset,
            "log_start_offset": self.log_start,
            "log_end_offset": self.log_end,
            "zookeeper_lag": self.zookeeper_lag,
            "kafka_lag": self.kafka_lag,
            "zookeeper_owner": self.zookeeper_owner,
            "kafka_member": self.kafka_member,
        }


def partition_rows(
    zk: ZkSide,
    kafka: KafkaSide,
    log: Mapping[TopicPartition, tuple[int, int]],
    topics: Iterable[str] | None = None,
    partitions: Iterable[TopicPartition] = (),
) -> list[PartitionRow]:
    """One row per partition either side knows (offset, owner or assignment), and per partition of
    those topics that neither has an offset of (`partitions`: as the brokers have them), with lag
    on both sides."""
    assigned = {k: m.label() for m in kafka.members for k in m.assignment}
    keys = in_scope(set(zk.offsets) | set(kafka.offsets) | set(zk.owners) | set(assigned) | set(partitions), topics)
    rows = []
    for key in keys:
        start, end = log.get(key, (None, None))
        rows.append(
            PartitionRow(
                key[0],
                key[1],
                zk.offsets.get(key),
                kafka.offsets.get(key),
                start,
                end,
                zk.owners.get(key),
                assigned.get(key),
            )
        )
    return rows


def _zk_live_text(zk: ZkSide) -> str:
    parts = [f"{len(zk.members)} ZooKeeper members"] if zk.members else []
    parts += [f"owners of {len(zk.owners)} partitions"] if zk.owners and not zk.members else []
    parts += ["a Spark ingest job"] if zk.ingest_topics else []
    return " and ".join(parts)


def migration_step(zk: ZkSide, kafka: KafkaSide, topics: Iterable[str] | None = None) -> Step:
    """Best effort: zookeeper-live, dual-commit-live, mixed, stopped, copied, kafka-live or no-offsets.

    Nothing records how members store offsets; a dual-commit member commits to the broker group
    with no generation, leaving it Empty, so "ZooKeeper live and Kafka holding an offset for every
    partition ZooKeeper holds one for" is read as dual commit. "copied" means both stores agree on
    every partition and nothing runs; it looks the same after a rollback.
    """
    zk_keys, kafka_keys = set(in_scope(zk.offsets, topics)), set(in_scope(kafka.offsets, topics))
    if zk.live and kafka.live:
        return Step(
            "mixed",
            f"{_zk_live_text(zk)} and {kafka.describe(zk.group)} run at once: both "
            "consume the same partitions, and dual-commit members' Kafka commits fail with "
            "UNKNOWN_MEMBER_ID",
            "stop one side",
        )
    if zk.live:
        if zk_keys and zk_keys <= kafka_keys:
            return Step(
                "dual-commit-live",
                "ZooKeeper members run and the broker group holds an offset for every "
                "partition ZooKeeper does (dual commit, it seems)",
                "stop the ZooKeeper group (each member makes a final commit), then `migrate offsets --to "
                "kafka --execute`",
            )
        return Step(
            "zookeeper-live",
            f"{_zk_live_text(zk)} run; the broker group holds offsets "
            f"of {len(zk_keys & kafka_keys)} of their {len(zk_keys)} partitions",
            "switch members to dual commit (offsets.storage=kafka, dual.commit.enabled=true) or stop them",
        )
    if kafka.live:
        return Step(
            "kafka-live",
            f"{kafka.describe(zk.group)}; no ZooKeeper member runs",
            "done; to roll back, stop them and `migrate offsets --to zookeeper --execute`",
        )
    if not zk_keys and not kafka_keys:
        return Step("no-offsets", "nothing runs and neither store holds an offset", "nothing to copy")
    if zk_keys == kafka_keys and all(zk.offsets[k] == kafka.offsets[k] for k in zk_keys):
        return Step(
            "copied",
            "nothing runs and both stores hold the same offsets",
            "start the broker-coordinated consumers (or, to roll back, the ZooKeeper ones)",
        )
    return Step(
        "stopped",
        "nothing runs; the stores differ",
        "`migrate offsets --to kafka --execute` (or --to zookeeper to roll back)",
    )
