"""The Scala-joiner actor: a ZookeeperConsumerConnector of the oldest configured release, with its retry budget and its give-up.

A Scala member (0.8.2-1.1.1) rebalances when the children of ids/ change: up to
rebalance.max.retries attempts (4), rebalance.backoff.ms (2,000) apart; each releases what it
owns, computes the range assignment over every registered member and creates the owner nodes of
its share; one already taken fails the attempt (the nodes it created go again). After the last
failure it throws ConsumerRebalanceFailedException and owns nothing until ids/ changes again
(an owner node's deletion is no such change). It consumes what it owns to the log's end and
commits there, so the group's liveness check counts its share as delivered. Its deliveries are
not checked against our invariants (they are Scala's, not ours).
"""

from __future__ import annotations

import json
from typing import Any

from kazoo.exceptions import NodeExistsError

from harness.simulation import Delivery, SimLog
from harness.zkmodel import ZkModel
from zkconsumer.config.compat import DEFAULT
from zkconsumer.coordinator.assignors import AssignmentInput, assign
from zkconsumer.zookeeper import znodes

MAX_RETRIES = 4  # rebalance.max.retries, every release 0.8.2-1.1.1
BACKOFF_MS = 2000  # rebalance.backoff.ms


class ScalaJoiner:
    """One Scala member with one stream on `topic`; the driver calls `act()` as time passes."""

    def __init__(
        self, model: ZkModel, name: str, group: str, topic: str, log_: SimLog, deliveries: list[Delivery]
    ) -> None:
        self.model, self.group, self.topic, self.log = model, group, topic, log_
        self.consumer_id = f"{group}_{name}"
        self.thread = f"{self.consumer_id}-0"
        self.client: Any = model.client(name)
        self.client.start()
        self.owned: set[int] = set()
        self.attempts_left = 0
        self.next_at: int | None = None
        self.gave_up = 0  # ConsumerRebalanceFailedException thrown, so far
        self.gave_up_at: list[int] = []
        self.deliveries = deliveries  # the schedule's: the liveness check counts them
        self.registered_in: int | None = None  # the session our ids/ node lives in
        self._register()

    def _register(self) -> None:
        """Register (again, in a new session: ZKSessionExpireListener), then rebalance afresh."""
        session = self.session()
        if session is None or session == self.registered_in:
            return
        registration = {"version": 1, "subscription": {self.topic: 1}, "pattern": "static", "timestamp": "1"}
        try:
            self.client.create(
                znodes.member_path(self.group, self.consumer_id),
                json.dumps(registration).encode(),
                ephemeral=True,
                makepath=True,
            )
        except NodeExistsError:
            pass  # our create got through before its answer was lost
        except Exception:  # noqa: BLE001 - a fault: the next step registers again
            return
        self.registered_in, self.owned = session, set()
        self._watch_ids()

    def _watch_ids(self, _event: object = None) -> None:
        """ids/ or the topic's partitions changed (or we just registered): a fresh retry budget,
        the first attempt now."""
        try:
            self.client.get_children(znodes.ids_path(self.group), watch=self._watch_ids)
            self.client.get(znodes.topic_path(self.topic), watch=self._watch_ids)
        except Exception:  # noqa: BLE001 - a fault: the next attempt reads again
            pass
        self.attempts_left, self.next_at = MAX_RETRIES, self.model.now_ms

    @property
    def stranded(self) -> bool:
        """Gave up and waits for a change of ids/."""
        return self.next_at is None and self.attempts_left == 0

    def act(self) -> None:
        if not self.client.connected:
            self.model.reconnect(self.client)  # the client's own reconnect, in the same session if it lives
            if self.client.connected and self.session() == self.registered_in:
                # ZooKeeper's Java client sets its watches again on a reconnect, and those whose
                # node changed meanwhile fire: as good as a change of ids/.
                self._watch_ids()
        self.model.deliver(self.client)
        self._register()
        if self.next_at is not None and self.model.now_ms >= self.next_at:
            self._attempt()
        self._consume()

    def _share(self) -> set[int]:
        ids = self.client.get_children(znodes.ids_path(self.group))
        threads: list[str] = []
        for consumer_id in ids:
            try:
                data, _ = self.client.get(znodes.member_path(self.group, consumer_id))
                registration = json.loads(data)
                count = int(registration["subscription"].get(self.topic, 0))
            except Exception:  # noqa: BLE001 - a garbled peer, a nudge's trigger child: Scala skips it
                continue
            if registration.get("pattern") == "static":
                threads += [f"{consumer_id}-{i}" for i in range(count)]
        topic_data, _ = self.client.get(znodes.topic_path(self.topic))
        count = len(json.loads(topic_data)["partitions"])
        inp = AssignmentInput(
            consumers_for_topic={self.topic: sorted(threads)}, partitions_for_topic={self.topic: list(range(count))}
        )
        return {p for (_, p), thread in assign("range", inp, DEFAULT).items() if thread == self.thread}

    def _attempt(self) -> None:
        self.attempts_left -= 1
        created: list[int] = []
        try:
            for p in sorted(self.owned):  # releasePartitionOwnership: delete, no version check
                self.client.delete(znodes.owner_path(self.group, self.topic, p))
            self.owned = set()
            for p in sorted(self._share()):
                self._claim(p)
                created.append(p)
        except Exception:  # noqa: BLE001 - NodeExists (someone still owns it) or a fault: the attempt failed
            for p in created:
                try:
                    self.client.delete(znodes.owner_path(self.group, self.topic, p))
                except Exception:  # noqa: BLE001
                    pass
            if self.attempts_left <= 0:
                self.next_at, self.attempts_left = None, 0
                self.gave_up += 1
                self.gave_up_at.append(self.model.now_ms)
            else:
                self.next_at = self.model.now_ms + BACKOFF_MS
            return
        self.owned, self.next_at = set(created), None

    def _claim(self, p: int) -> None:
        """ZkUtils.createEphemeralPathExpectConflict: a node already there holding our thread id in
        our session is ours (an earlier create whose answer was lost)."""
        path = znodes.owner_path(self.group, self.topic, p)
        try:
            self.client.create(path, znodes.encode_owner(self.thread), ephemeral=True, makepath=True)
        except NodeExistsError:
            data, stat = self.client.get(path)
            if data != znodes.encode_owner(self.thread) or stat.ephemeralOwner != self.session():
                raise

    def _consume(self) -> None:
        for p in sorted(self.owned):
            key = (self.topic, p)
            path = znodes.offset_path(self.group, self.topic, p)
            try:
                start = int(self.client.get(path)[0]) if self.client.exists(path) else 0
                end = self.log.end(key)
                if end <= start:
                    continue
                self.deliveries += [
                    Delivery(self.thread, self.thread, key, o, self.model.now_ms) for o in range(start, end)
                ]
                if self.client.exists(path):
                    self.client.set(path, znodes.encode_offset(end))
                else:
                    self.client.create(path, znodes.encode_offset(end), makepath=True)
            except Exception:  # noqa: BLE001 - a fault: the next step consumes again
                pass

    def session(self) -> int | None:
        session = self.client._session
        return session.id if session is not None else None
