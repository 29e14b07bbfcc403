"""A broker-coordinated consumer group through confluent-kafka's AdminClient: describe it, read and alter offsets."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping
from typing import Any

from kazoo.client import KazooClient

from zkconsumer.admin.error_boundary import admin_errors
from zkconsumer.admin.log_offsets import (
    LIBRDKAFKA_LOG,
    BrokerAccess,
    Warn,
    log_warning,
    reach,
)
from zkconsumer.errors import AdminUnavailable
from zkconsumer.migration import KafkaMember, KafkaSide
from zkconsumer.offsets.broker_group_lookup import state_name
from zkconsumer.partitions import TopicPartition

# Per-partition answers to an offset change that mean "the group has members" (or is getting some).
MEMBERSHIP_ERRORS = frozenset(
    {
        "UNKNOWN_MEMBER_ID",
        "ILLEGAL_GENERATION",
        "REBALANCE_IN_PROGRESS",
        "NON_EMPTY_GROUP",
        "GROUP_SUBSCRIBED_TO_TOPIC",
        "FENCED_INSTANCE_ID",
    }
)


def _error_text(error: Any) -> str:
    """NAME (text) of a KafkaError; str() of anything else."""
    if hasattr(error, "name") and hasattr(error, "str"):
        return f"{error.name()} ({error.str()})"
    return str(error)


class BrokerGroup:
    """One group id on the brokers. The AdminClient never joins the group; offset changes go out as
    an admin commit (no member id, no generation), which the broker accepts only for an Empty group."""

    def __init__(self, bootstrap: str, group: str, settings: Mapping[str, str], timeout: float = 30.0) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.group = group
        self.timeout = timeout
        config: dict[str, Any] = {
            **settings,
            "bootstrap.servers": bootstrap,
            "log.connection.close": False,
            "socket.timeout.ms": int(timeout * 1000),
            "logger": LIBRDKAFKA_LOG,
        }
        self._admin = AdminClient(config)

    # AdminClient's futures are untyped (Dict[str, Future] in confluent-kafka's own annotations).
    def _result(self, futures: Mapping[str, concurrent.futures.Future[Any]], what: str) -> Any:
        from confluent_kafka import KafkaException

        try:
            return futures[self.group].result(timeout=self.timeout + 5.0)
        except concurrent.futures.TimeoutError:
            raise AdminUnavailable(
                f"no answer from the brokers at {self.bootstrap} within {self.timeout:g} s while "
                f"{what} of group {self.group}"
            ) from None
        except KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            if what == "describing" and getattr(error, "name", lambda: "")() == "GROUP_ID_NOT_FOUND":
                return None
            raise AdminUnavailable(
                f"the brokers at {self.bootstrap} failed {what} group {self.group}: {_error_text(error)}"
            ) from None

    def describe(self, offsets: Mapping[TopicPartition, int] | None = None) -> KafkaSide:
        """The group's state and members (with `offsets` as its committed offsets)."""
        found = self._result(
            self._admin.describe_consumer_groups([self.group], request_timeout=self.timeout), "describing"
        )
        if found is None:  # newer brokers: no such group
            return KafkaSide("Dead", (), dict(offsets or {}))
        state = state_name(found.state)
        members = tuple(
            KafkaMember(
                m.member_id,
                m.client_id or "",
                m.host or "",
                tuple(
                    sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else []))
                ),
            )
            for m in sorted(found.members or [], key=lambda m: m.member_id)
        )
        return KafkaSide(state, members, dict(offsets or {}))

    def committed(self) -> dict[TopicPartition, int]:
        """Every partition the group has a committed offset for; AdminUnavailable if the brokers refuse any."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        found = self._result(
            self._admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(self.group)], request_timeout=self.timeout
            ),
            "reading the offsets of",
        )
        partitions = list(found.topic_partitions or [])
        refused = [tp for tp in partitions if tp.error is not None]
        if refused:
            raise AdminUnavailable(
                f"the brokers at {self.bootstrap} refused to read group {self.group}'s offsets of "
                + ", ".join(f"{tp.topic}-{tp.partition} ({_error_text(tp.error)})" for tp in refused)
            )
        return {(tp.topic, tp.partition): tp.offset for tp in partitions if tp.offset >= 0}

    def alter(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, str | None]:
        """Write offsets (alter_consumer_group_offsets); key -> None (written) or the broker's error."""
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
        from confluent_kafka import TopicPartition as KafkaTP

        if not offsets:
            return {}
        request = ConsumerGroupTopicPartitions(self.group, [KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())])
        futures = self._admin.alter_consumer_group_offsets([request], request_timeout=self.timeout)
        try:
            found = futures[self.group].result(timeout=self.timeout + 5.0)
        except concurrent.futures.TimeoutError:
            return {key: f"no answer from the brokers within {self.timeout:g} s" for key in offsets}
        except KafkaException as exc:  # the request as a whole (a partition's error, if all share one)
            return {key: _error_text(exc.args[0] if exc.args else exc) for key in offsets}
        out: dict[TopicPartition, str | None] = {key: None for key in offsets}
        for tp in found.topic_partitions or []:
            if tp.error is not None:
                out[(tp.topic, tp.partition)] = _error_text(tp.error)
        return out


def is_membership_refusal(errors: Mapping[TopicPartition, str | None]) -> bool:
    """Whether any per-partition answer means "the group has members" (worth describing the group)."""
    return any(e is not None and e.split(" ", 1)[0] in MEMBERSHIP_ERRORS for e in errors.values())


def membership_refusal(group: str, errors: Mapping[TopicPartition, str | None], side: KafkaSide) -> str | None:
    """The one line explaining an offset change the broker rejected because the group is not Empty
    (None when no error is of that kind): which partitions, which error, the group's state and members."""
    named = {k: e.split(" ", 1)[0] for k, e in errors.items() if e is not None}
    hit = sorted(k for k, name in named.items() if name in MEMBERSHIP_ERRORS)
    if not hit:
        return None
    names = sorted({named[k] for k in hit})
    shown = ", ".join(f"{t}-{p}" for t, p in hit[:5]) + (", ..." if len(hit) > 5 else "")
    return (
        f"the brokers refused to change group {group}'s offsets ({'/'.join(names)} on {shown}): "
        f"{side.describe(group)}; a broker accepts offset changes only for a group with no members "
        "(state Empty): stop them and run again"
    )


@admin_errors
def open_broker_group(
    client: KazooClient, access: BrokerAccess, group: str, *, warn: Warn = log_warning
) -> BrokerGroup:
    """BrokerGroup bootstrapped from --bootstrap-server or /brokers/ids; AdminUnavailable without brokers."""
    bootstrap, settings = reach(client, access, warn=warn)
    if not bootstrap:
        raise AdminUnavailable(
            f"no broker to ask about group {group}'s broker-side state and offsets; pass "
            "--bootstrap-server (and --command-config for TLS/SASL brokers)"
        )
    return BrokerGroup(bootstrap, group, settings)
