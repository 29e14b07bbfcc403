"""ShadowGroupMember: a ZooKeeper-mode member's seat in the brokers' group during a live switch (it delivers nothing)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTP

from zkconsumer.broker_coordination.poll_commands import PollCommands
from zkconsumer.broker_coordination.settings import ASSIGNOR
from zkconsumer.errors import BrokersUnavailable, CommitFailed, describe
from zkconsumer.migration.switch import SEAT_CLIENT_SUFFIX
from zkconsumer.partitions import TopicPartition, partitions_text

log = logging.getLogger("zkconsumer.coordinator.rebalancer")  # its lines are the switching member's

POLL_S = 0.1  # how late a command (a commit, the stop) is served
RELEASE_POLL_S = 0.02  # how often a revocation looks whether the member released the partitions
REVOKE_WAIT_S = 30.0  # far below the brokers' rebalance timeout (max.poll.interval.ms, 300 s by default)


class ShadowGroupMember:
    """Joins the brokers' group with `cooperative-sticky` beside a ZooKeeper-mode member (docs/live-switch.md,
    steps `joining` to `broker`): it only learns its assignment and commits as a member of the current
    generation. Every assigned partition is paused at once, so nothing is fetched; ZooKeeper's owner
    nodes stay the lock. One thread (`<consumer id>-switch-poll`) owns the Consumer; commits are asked of
    it, and `leave` only asks it to leave (the LeaveGroup and the close are its I/O, no caller waits on
    them under a lock; `wait_left` waits with a timeout). `on_change` is called (from that thread, no
    I/O) when the assignment or the member id changes, and once the seat has left after `leave`.
    """

    def __init__(
        self,
        consumer_id: str,
        topics: list[str],
        settings: Mapping[str, object],
        *,
        on_change: Callable[[str], None],
        on_failure: Callable[[BaseException], None],
        holding: Callable[[], set[TopicPartition]],
        revoke_wait_s: float = REVOKE_WAIT_S,
    ) -> None:
        """`holding`: the partitions whose owner nodes the member holds while it follows the brokers'
        assignment (SwitchFollower.holding); a revocation waits for their release."""
        self.consumer_id = consumer_id
        self.topics = sorted(topics)
        # a broker-coordinated member's settings (settings.consumer_settings), committing only when asked
        self._settings: dict[str, object] = {
            **settings,
            "client.id": f"{consumer_id}{SEAT_CLIENT_SUFFIX}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "partition.assignment.strategy": ASSIGNOR,
        }
        self._on_change, self._on_failure = on_change, on_failure
        self._holding, self._revoke_wait_s = holding, revoke_wait_s
        self._assigned: frozenset[TopicPartition] | None = None  # None: no assignment yet
        self._member_id: str | None = None
        self._commands = PollCommands()
        self._stopping = threading.Event()
        self._closed = threading.Event()
        self._consumer: Any = None
        self._thread = threading.Thread(target=self._run, name=f"{consumer_id}-switch-poll", daemon=True)

    # ---- other threads -------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    @property
    def member_id(self) -> str | None:
        """Our member id in the brokers' group (None until the first assignment)."""
        return self._member_id

    def assigned(self) -> frozenset[TopicPartition] | None:
        """What the brokers assign us now (None: not assigned yet, or the membership was lost)."""
        return self._assigned

    def commit(self, offsets: Mapping[TopicPartition, int], timeout: float) -> dict[TopicPartition, int]:
        """Commit `offsets` as a member of the current generation, then read Kafka's committed offsets
        of those partitions back (-1: none). A refused commit raises CommitFailed (the caller retries)."""
        if not offsets:
            return {}
        result = self._ask(lambda: self._commit_and_read(dict(offsets), timeout), timeout)
        assert isinstance(result, dict)
        return result

    def follow_topics(self, topics: list[str], timeout: float) -> None:
        """Subscribe to `topics` instead (a wildcard subscription matched a topic created since, or lost
        one): the brokers' group rebalances, and cooperative-sticky revokes only what moves. The
        subscription is a list, not a regex, so that the brokers assign exactly the topics the member's
        ZooKeeper side delivers (its filter is Java's regex, librdkafka's is POSIX's)."""
        wanted = sorted(topics)
        if wanted != self.topics:
            self._ask(lambda: self._subscribe(wanted), timeout)

    def leave(self) -> None:
        """Ask the poll thread to leave the brokers' group and close the Consumer (its LeaveGroup and
        close are I/O, made there); returns at once. `on_change` is called once it has left."""
        self._stopping.set()

    def wait_left(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the seat to have left (its poll thread ended); True if it has."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _ask(self, call: Callable[[], object], timeout: float) -> object:
        if threading.current_thread() is self._thread:
            return call()
        if self._closed.is_set() or self._stopping.is_set():
            raise BrokersUnavailable(f"{self.consumer_id}: not in the brokers' group (leaving it)")
        return self._commands.ask(
            call, timeout + 1.0, f"{self.consumer_id}: Kafka commit as a group member not done within {timeout:.1f} s"
        )

    # ---- the poll thread -----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._consumer = Consumer(self._settings, logger=log)
            log.info("%s joins the brokers' group for the live switch (topics %s)", self.consumer_id, self.topics)
            self._consumer.subscribe(
                self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
            )
            while not self._stopping.is_set():
                self._commands.serve()
                for message in self._consumer.consume(100, POLL_S) or []:  # paused: only errors and events
                    error = message.error()
                    if error is not None and error.fatal():
                        raise KafkaException(error)
            asked = time.monotonic()
            self._consumer.close()
            log.info("%s left the brokers' group (%.1f s)", self.consumer_id, time.monotonic() - asked)
        except BaseException as exc:
            if self._stopping.is_set():  # leaving anyway: the brokers drop the seat at its session timeout
                log.warning(
                    "%s: the seat's close failed (%s); the brokers drop it at session.timeout.ms",
                    self.consumer_id,
                    describe(exc),
                )
            else:  # the switching member cannot follow the brokers: it says so and leaves
                self._on_failure(exc)
        finally:
            self._assigned = None
            self._closed.set()
            self._commands.fail_all(lambda: BrokersUnavailable(f"{self.consumer_id}: left the brokers' group"))
            if self._stopping.is_set():
                self._on_change("the seat left the brokers' group")

    def _subscribe(self, topics: list[str]) -> None:
        try:
            self._consumer.subscribe(
                topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
            )
        except KafkaException as exc:
            raise BrokersUnavailable(
                f"{self.consumer_id}: cannot subscribe the brokers' group seat to {topics}: {exc}"
            ) from exc
        self.topics = topics
        log.info("%s follows the brokers' group on topics %s", self.consumer_id, topics)

    def _commit_and_read(self, offsets: dict[TopicPartition, int], timeout: float) -> dict[TopicPartition, int]:
        tps = [KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())]
        try:
            results = self._consumer.commit(offsets=tps, asynchronous=False)
        except KafkaException as exc:
            raise CommitFailed(f"Kafka refused the commit as a group member: {exc}", sorted(offsets)) from exc
        failed = [tp for tp in results or [] if tp.error is not None]
        if failed:
            raise CommitFailed(
                f"Kafka refused the commit of {failed[0].topic}-{failed[0].partition}: {failed[0].error}",
                [(tp.topic, tp.partition) for tp in failed],
            )
        found = self._consumer.committed([KafkaTP(t, p) for t, p in sorted(offsets)], timeout=timeout)
        return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else -1) for tp in found}

    def _changed(self, why: str) -> None:
        member_id = self._consumer.memberid() if self._consumer is not None else None
        self._member_id = member_id or None
        self._on_change(why)

    def _on_assign(self, consumer: Any, partitions: list[KafkaTP]) -> None:
        consumer.incremental_assign(partitions)
        if partitions:
            consumer.pause(partitions)  # delivered by ZooKeeper's owner of it, never by this seat
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._assigned = frozenset((self._assigned or frozenset()) | keys)
        self._changed("the brokers assigned " + (", ".join(f"{t}-{p}" for t, p in sorted(keys)) or "nothing new"))

    def _on_revoke(self, consumer: Any, partitions: list[KafkaTP]) -> None:
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._assigned = frozenset((self._assigned or frozenset()) - keys)
        self._changed("the brokers revoked " + ", ".join(f"{t}-{p}" for t, p in sorted(keys)))
        self._wait_released(keys)
        consumer.incremental_unassign(partitions)

    def _wait_released(self, keys: set[TopicPartition]) -> None:
        """Hold the revocation (the brokers hand a partition on only once we rejoin after it) until the
        member no longer holds these partitions' owner nodes, serving its commits meanwhile: a member
        that takes a partition from the brokers alone (`zkconsumer.coordination=broker`, the rolling
        restart at `broker`) takes no owner node, so the owner node cannot keep it out; and only a
        released node says Kafka holds ZooKeeper's offset. At most `revoke_wait_s`, then it is named."""
        ends = time.monotonic() + self._revoke_wait_s
        while (held := keys & self._holding()) and not self._stopping.is_set():
            if time.monotonic() >= ends:
                log.warning(
                    "%s: the brokers revoked %s, still held by this member after %.0f s; handing them on",
                    self.consumer_id,
                    partitions_text(sorted(held)),
                    self._revoke_wait_s,
                )
                return
            self._commands.serve()
            time.sleep(RELEASE_POLL_S)

    def _on_lost(self, consumer: Any, partitions: list[KafkaTP]) -> None:
        consumer.incremental_unassign(partitions)
        self._assigned = None  # no news of what the brokers assign: nothing moves until they say
        self._changed("the brokers ended our membership")
