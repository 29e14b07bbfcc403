"""The in-memory Kafka offset store for dual commit (offsets.storage=kafka + dual.commit.enabled), with its invariant.

Kafka's group coordinator accepts a simple commit (generation -1, no member id) from anyone, as it
accepts Scala's: nothing fences a Kafka-side write. `KafkaOffsetStore` is the group's broker-side
store; `view(member)` is the Consumer a member's Kafka-side commits go through
(SimFetcher.consumer). Invariant (issue 51, finding 3): Kafka's committed offset of a partition
never moves below what the partition's current owner (its owner node's session, right now)
committed there; a write that does so is reported through `on_violation`.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import TopicPartition as KafkaTP

from harness.simulation import SimMember, owner_nodes

Key = tuple[str, int]


class KafkaOffsetStore:
    def __init__(self, group: str, on_violation: Callable[[str], None]) -> None:
        self.group = group
        self.offsets: dict[Key, int] = {}
        self.by_owner: dict[tuple[Key, int], int] = {}  # (partition, owner session) -> its last commit
        self.writes = 0
        self._on_violation = on_violation

    def view(self, member: SimMember) -> MemberKafka:
        return MemberKafka(self, member)

    def write(self, member: SimMember, sent: dict[Key, int]) -> None:
        session = member.group.session
        for key, offset in sorted(sent.items()):
            node = owner_nodes(member.model, self.group, key[0]).get(key[1])
            owner = node[1] if node is not None else None
            before = self.offsets.get(key)
            self.offsets[key] = offset
            self.writes += 1
            if owner is not None and owner == session:
                self.by_owner[(key, owner)] = offset
                continue
            floor = self.by_owner.get((key, owner)) if owner is not None else None
            if floor is not None and offset < floor:
                self._on_violation(
                    f"{member.name} rewound Kafka's offset of {key[0]}-{key[1]} from {before} to {offset}, below "
                    f"{floor} that its owner (session {owner:#x}) committed"
                )


class MemberKafka:
    """The part of a confluent_kafka Consumer that OffsetStore's Kafka side calls."""

    def __init__(self, store: KafkaOffsetStore, member: SimMember) -> None:
        self.store, self.member = store, member

    def commit(self, *, offsets: list[KafkaTP], asynchronous: bool) -> list[KafkaTP]:
        self.store.write(self.member, {(tp.topic, tp.partition): tp.offset for tp in offsets})
        return offsets

    def committed(self, partitions: list[KafkaTP], timeout: float) -> list[KafkaTP]:
        return [
            KafkaTP(tp.topic, tp.partition, self.store.offsets.get((tp.topic, tp.partition), -1001))
            for tp in partitions
        ]
