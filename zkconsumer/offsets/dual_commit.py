"""Dual commit's Kafka side: classify its failures, track failure episodes, and word the reports (pure)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException

from zkconsumer.errors import is_retriable
from zkconsumer.offsets.broker_group_lookup import BrokerGroupView

# What a simple commit (no member id, generation -1) gets when the broker-side group with our id
# has members of its own. Kafka 3.9.1 (ZooKeeper mode, classic protocol) answered UNKNOWN_MEMBER_ID
# in every phase a probe tried (joining, Stable, another member's join, leaving);
# tests/cluster/test_dual_commit_group.py checks the Stable case. ILLEGAL_GENERATION and
# REBALANCE_IN_PROGRESS are the coordinator's other answers to a commit outside the current
# generation; STALE_MEMBER_EPOCH is the consumer protocol's (KIP-848) counterpart.
BROKER_GROUP_REJECTIONS: frozenset[int] = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)


class KafkaFailure(enum.Enum):
    """Why a dual commit's Kafka-side write failed."""

    REJECTED = "rejected"  # the broker-side group is in use by broker-coordinated members
    TRANSIENT = "transient"  # broker down, timeout, coordinator moving, ...: the next commit retries
    FATAL = "fatal"  # a bug or a fatal client error: raised


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError behind `exc` (itself, or up its cause/context chain), if there is one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, KafkaException) and current.args and isinstance(current.args[0], KafkaError):
            return current.args[0]
        current = current.__cause__ or current.__context__
    return None


def classify(exc: BaseException) -> KafkaFailure:
    """Rejected by a live broker-side group, transient (retry at the next commit), or fatal."""
    err = kafka_error(exc)
    if err is not None and err.code() in BROKER_GROUP_REJECTIONS:
        return KafkaFailure.REJECTED
    return KafkaFailure.TRANSIENT if is_retriable(exc) else KafkaFailure.FATAL


def error_text(exc: BaseException) -> str:
    """`UNKNOWN_MEMBER_ID (Commit failed: Broker: Unknown member)` for Kafka errors, else `Type: message`."""
    err = kafka_error(exc)
    if err is not None:
        return f"{err.name()} ({err.str()})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class Episode:
    """Kafka-side failures since the last successful Kafka commit."""

    counts: dict[KafkaFailure, int] = field(default_factory=dict)
    reported: set[KafkaFailure] = field(default_factory=set)

    def total(self) -> int:
        return sum(self.counts.values())


class KafkaCommitEpisodes:
    """When to report Kafka-side failures of dual commit: each kind once per episode, an episode
    being the failures between two successful Kafka commits. Not thread-safe: the caller holds
    the rebalancer's lock around commits."""

    def __init__(self) -> None:
        self.current: Episode | None = None

    def failed(self, kind: KafkaFailure) -> bool:
        """Record one failure; True when this kind was not yet reported in this episode."""
        episode = self.current if self.current is not None else Episode()
        self.current = episode
        episode.counts[kind] = episode.counts.get(kind, 0) + 1
        if kind in episode.reported:
            return False
        episode.reported.add(kind)
        return True

    def succeeded(self) -> Episode | None:
        """Record a success; returns the episode it ends (to report once), or None if none was open."""
        ended, self.current = self.current, None
        return ended


GUIDE = 'see the migration guide (docs/migration.md, "Never run both kinds at once")'


def rejected_warning(group: str, error: str, view: BrokerGroupView | None) -> str:
    """The one WARNING of a rejection episode: the group, the broker's error, and who holds the broker group."""
    if view is None:
        who = "(describing the broker-side group failed or timed out)"
    elif view.members:
        who = (
            f"(state {view.state}; members: "
            + ", ".join(f"client.id={m.client_id} host={m.host} member.id={m.member_id}" for m in view.members)
            + ")"
        )
    else:
        who = f"(state {view.state}; no members listed)"
    return (
        f"group {group}: a broker-coordinated consumer group with the same id is active {who}; "
        f"Kafka-side commits are rejected with {error}; ZooKeeper commits continue; {GUIDE}"
    )


def transient_warning(group: str, error: str) -> str:
    """The one WARNING of an episode of transient Kafka-side failures."""
    return (
        f"group {group}: Kafka-side offset commit failed with {error}; ZooKeeper commits continue, and "
        "every commit sends the full offset map to Kafka again until one succeeds"
    )


def recovered_info(group: str, episode: Episode) -> str:
    """The INFO line when a Kafka-side commit succeeds after an episode of failures."""
    parts = [f"{n} {kind.value}" for kind, n in sorted(episode.counts.items(), key=lambda kv: kv[0].value)]
    return (
        f"group {group}: Kafka-side offset commits succeed again after {episode.total()} failed "
        f"({', '.join(parts)}); ZooKeeper commits were written throughout"
    )
