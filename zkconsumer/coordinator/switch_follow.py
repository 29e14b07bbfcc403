"""SwitchFollower: a ZooKeeper-mode member's side of the live switch (docs/live-switch.md): the step, the target, the seat, the marker."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from kazoo.protocol.states import EventType, WatchedEvent

from zkconsumer.errors import ZOOKEEPER_FAILURES, ZkConsumerError, describe, is_retriable
from zkconsumer.migration.switch import BROKER, HANDOVER, JOINING, SWITCH_PROTOCOL, ZOOKEEPER, decode_switch_node
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper.group import GroupZk
from zkconsumer.zookeeper.switch_node import read_switch_node_watched

log = logging.getLogger("zkconsumer.coordinator.rebalancer")  # these lines are the rebalancer's
SEAT_SUBSCRIBE_S = 10.0  # how long the rebalance thread waits for the seat's poll thread to subscribe anew
LEAVING_RETRY_S = 0.5  # between a leaving member's refused Kafka commits: the seat's poll thread rejoins meanwhile
LEAVING_TRY_S = 5.0  # one Kafka commit of a leaving member, at most (the coordinator answers in milliseconds)


class BrokerSeat(Protocol):
    """A member's seat in the brokers' group (broker_coordination.shadow.ShadowGroupMember)."""

    @property
    def member_id(self) -> str | None: ...

    def start(self) -> None: ...

    def assigned(self) -> frozenset[TopicPartition] | None: ...

    @property
    def topics(self) -> list[str]: ...

    def follow_topics(self, topics: list[str], timeout: float) -> None: ...

    def commit(self, offsets: Mapping[TopicPartition, int], timeout: float) -> dict[TopicPartition, int]: ...

    def leave(self) -> None: ...

    def wait_left(self, timeout: float) -> bool: ...


def switch_target(
    step: str,
    zookeeper_target: Mapping[TopicPartition, str],
    brokers_assigned: frozenset[TopicPartition] | None,
    my_threads: Mapping[str, list[str]],
    owned: Mapping[TopicPartition, str],
) -> dict[TopicPartition, str]:
    """Pure: what this member should own at `step`. Up to `joining`, ZooKeeper's assignor's share; from
    `handover`, the partitions the brokers assigned us (each topic's on our thread ids in turn), or,
    before the brokers said anything, what we own (nothing moves on no news)."""
    if step in (ZOOKEEPER, JOINING):
        return dict(zookeeper_target)
    if brokers_assigned is None:
        return dict(owned)
    out: dict[TopicPartition, str] = {}
    by_topic: dict[str, list[TopicPartition]] = {}
    for key in sorted(brokers_assigned):
        by_topic.setdefault(key[0], []).append(key)
    for topic, keys in by_topic.items():
        threads = sorted(my_threads.get(topic, []))
        if not threads:
            continue  # a topic we do not subscribe to (a wildcard that changed): not ours to deliver
        for index, key in enumerate(keys):
            out[key] = owned[key] if key in owned and owned[key] in threads else threads[index % len(threads)]
    return out


class SwitchFollower:
    """Follows the group's switch node; owned by the rebalance thread (every method but `on_seat_change`
    and `on_node_changed`, which only trigger a rebalance, runs there or at shutdown).

    Each attempt reads the step (arming a watch: a change triggers the next attempt), starts the seat
    in the brokers' group from `joining` on and, at `zookeeper`, asks it to leave, and steers the
    attempt's target (switch_target). The seat leaves on its own thread: its LeaveGroup and close are
    I/O, never waited for under the rebalance lock; the member's shutdown waits for them within its
    deadline (`stop`). After the attempt, `publish` writes the step acted on into our marker, with our
    member id in the brokers' group: what `migrate switch` waits for; `zookeeper` only once every seat
    asked to leave has left (its leaving triggers the attempt that says so).
    """

    def __init__(
        self,
        group: GroupZk,
        marker: Callable[[str], bytes],
        make_seat: Callable[[list[str], Callable[[str], None], Callable[[], set[TopicPartition]]], BrokerSeat],
        trigger: Callable[[str], None],
        held: Callable[[], set[TopicPartition]],
    ) -> None:
        """`make_seat(topics, on_change, holding)`; `held`: the partitions whose owner nodes the member holds
        (installed, or pending deletion)."""
        self.group = group
        self.consumer_id = group.consumer_id
        self._marker = marker
        self._make_seat = make_seat
        self._trigger = trigger
        self._held = held
        self.step = ZOOKEEPER
        self.seat: BrokerSeat | None = None
        # Seats asked to leave and not yet gone. Their list and `_stopped` are shared with the
        # shutdown's thread (which may overlap a late attempt): swapped under `_seats`, no I/O held.
        self._leaving: tuple[BrokerSeat, ...] = ()
        self._stopped = False
        self._seats = threading.Lock()
        self._acted: str | None = None  # the step the last attempt acted on fully
        self._published: bytes | None = None
        # What we last wrote to Kafka as a member: a hint that saves resending an unchanged offset (a
        # stale entry costs one write more, never a skipped one: a release reads Kafka back itself).
        self._kafka: dict[TopicPartition, int] = {}

    # ---- kazoo's or the seat's thread: no I/O ------------------------------------------------------
    def on_node_changed(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self._trigger("the live switch's step changed")

    def holding(self) -> set[TopicPartition]:
        """What a revocation by the brokers waits for (the seat's thread): the owner nodes we hold while
        we follow the brokers' assignment (`handover`, `broker`); nothing before, when ZooKeeper's
        assignor decides and the brokers' revocations move nothing."""
        return self._held() if self.step in (HANDOVER, BROKER) else set()

    def on_seat_change(self, why: str) -> None:
        if self.step in (HANDOVER, BROKER) or self._acted != self.step:
            self._trigger(f"brokers' group: {why}")

    # ---- the rebalance thread ----------------------------------------------------------------------
    def read_step(self, topics: set[str]) -> str:
        """Read the step (a node we cannot read keeps the last step: only the command writes it), and
        start or stop the seat to match."""
        try:
            node = read_switch_node_watched(self.group.client, self.group.group_id, self.on_node_changed)
            step = decode_switch_node(node.data, node.path)
        except ZOOKEEPER_FAILURES as exc:  # ZkConsumerError too: a node no zkconsumer wrote
            log.warning(
                "%s: cannot read the live switch's node (%s); staying at %s", self.consumer_id, describe(exc), self.step
            )
            step = self.step
        if step != self.step:
            log.info("%s: live switch step %s -> %s", self.consumer_id, self.step, step)
            self.step = step
        if step == ZOOKEEPER and self.seat is not None:
            self._leave_seat()
        elif step != ZOOKEEPER and self.seat is None and topics:
            with self._seats:
                if self._stopped:  # the member is leaving: no new seat
                    return step
                self.seat = self._make_seat(sorted(topics), self.on_seat_change, self.holding)
            self.seat.start()
        elif step != ZOOKEEPER and self.seat is not None and topics and sorted(topics) != self.seat.topics:
            self._follow_topics(sorted(topics))
        return step

    def _follow_topics(self, topics: list[str]) -> None:
        """A wildcard subscription's topics changed: the seat subscribes to them too, so that the brokers
        assign a new topic's partitions (its seat's list alone would leave them to nobody from `handover`)."""
        assert self.seat is not None
        try:
            self.seat.follow_topics(topics, SEAT_SUBSCRIBE_S)
        except ZkConsumerError as exc:
            log.warning(
                "%s: the brokers' group seat cannot follow topics %s (%s); a later attempt tries again",
                self.consumer_id,
                topics,
                describe(exc),
            )

    def target(
        self,
        zookeeper_target: Mapping[TopicPartition, str],
        my_threads: Mapping[str, list[str]],
        owned: Mapping[TopicPartition, str],
    ) -> dict[TopicPartition, str]:
        assigned = self.seat.assigned() if self.seat is not None else None
        return switch_target(self.step, zookeeper_target, assigned, my_threads, owned)

    def carry(self, pending: Mapping[TopicPartition, int], timeout: float) -> dict[TopicPartition, int]:
        """From `joining` on (the rebalance thread, holding no lock: this waits on the group coordinator),
        the partitions being released (key -> ZooKeeper's committed offset, -1: none): their offsets
        committed to Kafka as a group member and read back; returns those Kafka reads back equal. A
        refused commit carries nothing (the nodes stay; the caller tries again)."""
        seat = self.seat  # read once: `read_step` may leave the seat in a later attempt
        carried = {k: o for k, o in pending.items() if o >= 0}
        if self.step == ZOOKEEPER or seat is None or not carried:
            return {}
        try:
            found = seat.commit(carried, timeout)
        except ZkConsumerError as exc:
            log.warning(
                "%s: keeping the owner nodes of %s: Kafka's commit as a group member failed (%s)",
                self.consumer_id,
                partitions_text(sorted(carried)),
                describe(exc),
            )
            return {}
        equal = {k: o for k, o in carried.items() if found.get(k) == o}
        self._kafka.update(equal)
        # the hand-over's own evidence that Kafka = ZooKeeper (the switch's audit counts these lines)
        log.info(
            "%s: live switch release check (ZooKeeper/Kafka): %s",
            self.consumer_id,
            ", ".join(f"{t}-{p} {o}/{found.get((t, p), -1)}" for (t, p), o in sorted(carried.items())),
        )
        return equal

    def carry_on_leaving(
        self, pending: Mapping[TopicPartition, int], timeout: float, vouch: Callable[[], str | None]
    ) -> dict[TopicPartition, int]:
        """The member's shutdown, from `joining` on, after its final commit and before its session (and
        with it its owner nodes) goes: ZooKeeper's offsets (key -> offset, -1: none) committed to Kafka
        as a group member and read back, so that whoever takes a partition from the brokers alone (a
        member restarted with `zkconsumer.coordination=broker`) starts where ZooKeeper says. A refused
        commit (a rebalance in progress, the coordinator moving) is tried again every LEAVING_RETRY_S
        within `timeout`, holding no lock: the seat's poll thread rejoins meanwhile. Each try only while
        ZooKeeper vouches that the owner nodes are still ours (`vouch`: why not, or None): else a successor
        may have committed since, and ours would rewind Kafka. Returns what Kafka did not read back equal,
        named in a warning."""
        seat = self.seat  # read once: the shutdown's thread, beside a late attempt
        left = {k: o for k, o in pending.items() if o >= 0}
        if self.step == ZOOKEEPER or seat is None or not left:
            return {}
        ends = time.monotonic() + timeout
        why = "no time left"
        while left and (remaining := ends - time.monotonic()) > 0:
            unconfirmed = vouch()
            if unconfirmed is not None:
                why = unconfirmed
                break
            try:
                found = seat.commit(left, min(remaining, LEAVING_TRY_S))
                left = {k: o for k, o in left.items() if found.get(k) != o}
                why = "Kafka read back another offset"
            except ZkConsumerError as exc:
                why = describe(exc)
                if not is_retriable(exc) or seat.wait_left(0.0):  # a seat that is gone takes no commit
                    break
            if left:
                time.sleep(max(0.0, min(LEAVING_RETRY_S, ends - time.monotonic())))
        if left:
            log.warning(
                "%s: leaving with Kafka's committed offsets of %s behind ZooKeeper's (%s, within %.1f s): a member "
                "that takes them from the brokers alone starts there and delivers committed messages again",
                self.consumer_id,
                partitions_text(sorted(left)),
                why,
                timeout,
            )
        else:
            log.info(
                "%s: leaving: Kafka holds ZooKeeper's offsets of %s", self.consumer_id, partitions_text(sorted(pending))
            )
            self._kafka.update(pending)
        return left

    def releasable(
        self, pending: Mapping[TopicPartition, int], carried: Mapping[TopicPartition, int]
    ) -> set[TopicPartition]:
        """Of the partitions being released (key -> ZooKeeper's committed offset now, -1: none), those whose
        owner node may go: every one at `zookeeper`; from `joining` on, one with no offset or whose
        offset Kafka was seen to hold (`carried`, from `carry`)."""
        if self.step == ZOOKEEPER or self.seat is None:
            return set(pending)
        return {k for k, o in pending.items() if o < 0 or carried.get(k) == o}

    def mirror(self, committed: Mapping[TopicPartition, int], timeout: float) -> None:
        """From `joining` on, write what ZooKeeper just took (fenced) to Kafka as a group member too;
        best effort: a failure is logged, the next commit or the release carries it."""
        seat = self.seat  # read once: the rebalance thread may leave the seat meanwhile
        if self.step == ZOOKEEPER or seat is None or seat.member_id is None:
            return
        moved = {k: o for k, o in committed.items() if o >= 0 and self._kafka.get(k) != o}
        if not moved:
            return
        try:
            found = seat.commit(moved, timeout)
        except ZkConsumerError as exc:
            log.info(
                "%s: Kafka commit as a group member failed (%s); the next one carries it",
                self.consumer_id,
                describe(exc),
            )
            return
        self._kafka.update({k: o for k, o in moved.items() if found.get(k) == o})

    def publish(self, attempt_ok: bool) -> None:
        """Write into our marker the step this member acts on: `joining` and later once the seat has
        its member id and first assignment, and the attempt that followed the step succeeded."""
        seat = self.seat
        seated = seat is not None and seat.member_id is not None and seat.assigned() is not None
        if attempt_ok and ((self.step == ZOOKEEPER and self._all_left()) or (self.step != ZOOKEEPER and seated)):
            self._acted = self.step
        seen = self._acted or ZOOKEEPER
        member_id = seat.member_id if seat is not None else None
        field = json.dumps(
            {"protocol": SWITCH_PROTOCOL, "seen": seen, "broker_member_id": member_id}, separators=(",", ":")
        )
        data = self._marker(field)
        if data == self._published:
            return
        try:
            if self.group.rewrite_marker(data):
                self._published = data
        except ZOOKEEPER_FAILURES as exc:
            log.warning("%s: cannot write the live switch's step into our marker (%s)", self.consumer_id, describe(exc))

    def marker_now(self) -> bytes:
        """The marker a new session creates (our step as last published)."""
        seen = self._acted or ZOOKEEPER
        member_id = self.seat.member_id if self.seat is not None else None
        return self._marker(
            json.dumps(
                {"protocol": SWITCH_PROTOCOL, "seen": seen, "broker_member_id": member_id}, separators=(",", ":")
            )
        )

    def stop(self, timeout: float) -> None:
        """The member's shutdown: the seat leaves (no new one is made), and every seat still leaving is
        waited for within `timeout` seconds in all; one that did not finish is named in a warning (the
        brokers drop it at its session timeout)."""
        with self._seats:
            self._stopped = True
        self._leave_seat()
        with self._seats:
            leaving = self._leaving
        ends = time.monotonic() + timeout
        for seat in leaving:
            if not seat.wait_left(max(0.0, ends - time.monotonic())):
                log.warning(
                    "%s: the live switch's seat did not leave the brokers' group within %.1f s; the brokers drop "
                    "it at its session timeout",
                    self.consumer_id,
                    timeout,
                )
        self._all_left()

    def _leave_seat(self) -> None:
        """Detach the seat and ask it to leave (no wait: its poll thread makes the I/O)."""
        with self._seats:
            seat, self.seat = self.seat, None
            if seat is not None:
                self._leaving = (*self._leaving, seat)
        self._kafka.clear()
        if seat is not None:
            seat.leave()

    def _all_left(self) -> bool:
        """Forget the seats that have left; True when none is still leaving."""
        with self._seats:
            self._leaving = tuple(s for s in self._leaving if not s.wait_left(0.0))
            return not self._leaving
