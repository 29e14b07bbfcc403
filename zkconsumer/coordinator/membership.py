"""The member's ZooKeeper session as a state machine: registration, connection events, the lease, watch triggers.

The transition table (`transition`) is pure and tested exhaustively; `Membership` applies its
actions. The rules it encodes:

- SUSPENDED (link down, session maybe alive): own everything still and deliver until the lease
  runs out (no round trip renews it while the link is down, and it ends before the session can).
- LOST (session expired): every ephemeral node of that session is gone, so every partition is
  lost at once (nothing to release) and a rebalance re-registers in the new session.
- CONNECTED in the registered session after SUSPENDED: kazoo dropped every watch with the link and
  re-arms none, so an owner node of ours deleted and created again by another session meanwhile
  (a Scala member releasing blindly, an operator) went unheard. Delivery stops until a rebalance's
  reconcile step has read our owner nodes afresh, re-arming their watches
  (`Membership.owned_nodes_reread`); the session itself is vouched for by the handshake.
- CONNECTED in another session without a LOST first: treated as LOST.
- A missing session id (kazoo's `client_id` is None while the link is down) is never taken for
  a new session: it means "unknown, wait".
- kazoo CLOSED for good while the member is not stopping (its connection thread died): no
  reconnect will ever come, so the member must leave (`on_closed`), not wait forever.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.protocol.states import EventType, KazooState, KeeperState, WatchedEvent

from zkconsumer.clock import lease_clock
from zkconsumer.config.timing import DEFAULT_TICK_MS
from zkconsumer.consumer.delivery import DeliveryGate
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.lease import SessionLease
from zkconsumer.errors import (
    ZOOKEEPER_FAILURES,
    RegistrationConflict,
    SessionLost,
    ZooKeeperClosed,
    ZooKeeperUnavailable,
    describe,
)
from zkconsumer.partitions import TopicPartition, partitions_text
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk

log = logging.getLogger(__name__)


class State(enum.Enum):
    UNREGISTERED = "unregistered"  # no member node of the current session yet
    CONNECTED = "connected"  # registered, link up
    SUSPENDED = "suspended"  # registered, link down: the session may still be alive
    EXPIRED = "expired"  # the registered session ended; re-registration pending
    STOPPED = "stopped"


class Event(enum.Enum):
    REGISTERED = "registered"
    SUSPENDED = "suspended"
    LOST = "lost"
    CONNECTED_SAME = "connected in the registered session"
    CONNECTED_OTHER = "connected in another session"
    STOP = "stop"


@dataclass(frozen=True)
class Transition:
    state: State
    deliver: bool | None = None  # True: open the gate, False: close it, None: leave it
    lose_ownership: bool = False  # the owner nodes went with the old session
    rebalance: str | None = None  # reason to trigger a rebalance
    reread: bool = False  # watches lost: deliver nothing until our owner nodes are read again


def transition(state: State, event: Event) -> Transition:
    """What an event does in a state (pure)."""
    if state is State.STOPPED or event is Event.STOP:
        return Transition(State.STOPPED, deliver=None)
    if event is Event.REGISTERED:
        return Transition(State.CONNECTED, deliver=True)
    if event is Event.SUSPENDED:
        if state in (State.CONNECTED, State.SUSPENDED):
            # The lease alone decides: it ends before the server can expire the session (so before
            # anyone else can own our partitions), and a link that comes back in time (an ensemble
            # election, a server restart) costs no delivery gap.
            return Transition(State.SUSPENDED, deliver=None)
        return Transition(state, deliver=False)
    if event is Event.LOST:
        # Also when EXPIRED already: the session that ended may be the one a registration under way
        # was made in, and counting the loss (Assignment.sessions_lost) is what voids that registration.
        return Transition(State.EXPIRED, deliver=False, lose_ownership=True, rebalance="ZooKeeper session expired")
    if event is Event.CONNECTED_SAME:
        if state is State.SUSPENDED:
            # kazoo drops every watch when the link drops and re-arms none: what happened to our owner
            # nodes meanwhile is unknown until a rebalance reads them again.
            return Transition(
                State.CONNECTED,
                deliver=False,
                reread=True,
                rebalance="reconnected; re-reading our owner nodes before delivering again",
            )
        return Transition(state)  # connected already, expired or not registered yet: nothing changes
    # CONNECTED_OTHER
    if state in (State.CONNECTED, State.SUSPENDED):
        return Transition(
            State.EXPIRED, deliver=False, lose_ownership=True, rebalance="reconnected in a new ZooKeeper session"
        )
    return Transition(state, rebalance="connected in a new ZooKeeper session")


class Membership:
    """Owns this member's session: (re-)registration, kazoo's state listener, the watch callbacks
    that trigger rebalances, and every event that stops delivery: a session lost or replaced, a
    reconnect that left our owner nodes unwatched, an owner node in doubt, a topic deleted (the
    lease running out is the gate's own; `lease`, a SessionLease, renews it).

    Example::

        membership = Membership(group, assignment, gate, registration=lambda: data,
                                session_timeout_s=6.0, trigger=worker.trigger)
        membership.start()
        membership.ensure_registered()   # from the rebalance thread
    """

    def __init__(
        self,
        group: GroupZk,
        assignment: Assignment,
        gate: DeliveryGate,
        *,
        registration: Callable[[], bytes],
        session_timeout_s: float,
        trigger: Callable[[str], None],
        on_closed: Callable[[BaseException], None] = lambda _error: None,
        marker: bytes | Callable[[], bytes] | None = None,
        clock: Callable[[], float] = lease_clock,
        renewal: str = "auto",
        tick_s: float = DEFAULT_TICK_MS / 1000.0,
    ) -> None:
        self.lease = SessionLease(
            group, gate, session_timeout_s=session_timeout_s, clock=clock, renewal=renewal, tick_s=tick_s
        )
        self.group = group
        self.assignment = assignment
        self.gate = gate
        self._registration = registration
        self._configured_timeout_s = session_timeout_s
        self._trigger = trigger
        self._on_closed = on_closed  # kazoo closed for good while we were not stopping: leave
        self._clock = clock
        self._lock = threading.Lock()
        self.state = State.UNREGISTERED
        self.waiting_for_brokers = False
        self._marker = marker
        self._marked_session: int | None = None
        # Same-session reconnects (each bumps it) whose watches are not re-armed yet: delivery waits
        # for owned_nodes_reread with the count it read before its reads.
        self.reconnects = 0
        self._awaiting_reread = False
        self._blind_since: float | None = None
        self.reread_gap_s: float | None = None  # the last such hold, reconnect to re-read (measured)

    # ---- session ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Follow the session's states and the ownership signals (every event that stops delivery)."""
        self.group.signals.subscribe(doubt=self.on_doubt, refused=self.on_refused)
        self.group.client.add_listener(self.on_connection_state)

    def stop(self) -> None:
        self._apply(Event.STOP)
        try:
            self.group.client.remove_listener(self.on_connection_state)
        except (KeyError, ValueError):
            pass

    def ensure_registered(self) -> None:
        """Called at the start of every rebalance attempt: (re-)register if our node or session is gone."""
        live = self.group.live_session
        if live is None:
            self._check_closed()
            raise ZooKeeperUnavailable("not connected to ZooKeeper; ownership cannot be confirmed")
        registered = self.group.session
        if registered is not None and live != registered:
            self._apply(Event.CONNECTED_OTHER)  # kazoo's LOST may not have reached us yet
        if self.state is State.STOPPED:
            raise SessionLost("the member is stopping")
        if self.state is not State.EXPIRED and live == registered and self.group.is_registered():
            self._mark()
            return
        # A new session, or our node deleted by hand (owner nodes of the same session stay ours).
        lost_before = self.assignment.sessions_lost
        self._mark()
        sent = self._clock()
        try:
            session = self.group.register(self._registration(), wait_for_stale_s=self._configured_timeout_s)
        except RegistrationConflict:
            # Our marker must not vouch for whoever holds this consumer id (maybe a Scala member).
            self._marked_session = None
            self.group.unmark_as_zkconsumer()
            raise
        # Judged under the lock a LOST takes too: one that lands after the registration cannot be
        # overridden by it (the member would then deliver with no member node in its session).
        if not self._apply(Event.REGISTERED, unless_lost_since=lost_before, lease_from=sent):
            raise SessionLost(f"session 0x{session:x} ended while registering; registering again")
        log.info("%s registered in group %s (session 0x%x)", self.group.consumer_id, self.group.group_id, session)

    def _mark(self) -> None:
        """Mark this member as a zkconsumer member once per session (best effort: unmarked only
        makes other zkconsumer members linger before handing partitions to us)."""
        session = self.group.live_session
        if self._marker is None or session is None or self._marked_session == session:
            return
        try:
            data = self._marker() if callable(self._marker) else self._marker  # the live switch's step may change it
            if self.group.mark_as_zkconsumer(data):
                self._marked_session = session
        except ZOOKEEPER_FAILURES as exc:
            log.warning(
                "%s: could not write the zkconsumer marker yet (%s); peers linger before handing partitions to us",
                self.group.consumer_id,
                describe(exc),
            )

    def set_marker(self, marker: bytes | Callable[[], bytes]) -> None:
        """What our marker holds when a session creates it (the live switch's step may change it later)."""
        self._marker = marker

    def renew_lease(self) -> None:
        """The lease's thread: renew while registered in a live session (SessionLease.renew)."""
        self._check_closed()
        if self.group.session is not None and self.state in (State.CONNECTED, State.SUSPENDED):
            self.lease.renew()

    def _check_closed(self) -> None:
        """Raise ZooKeeperClosed (not retriable: the caller's thread makes the member leave) if kazoo
        is closed for good while we are not stopping. The state listener usually says so first, but
        kazoo tells listeners only of state changes, and CLOSED right after a LOST (a SASL login
        refused on reconnect, a connection thread that dies opening the next session) is none."""
        if self.group.client.client_state == KeeperState.CLOSED and self.state is not State.STOPPED:
            raise self._closed_error()

    def _closed_error(self) -> ZooKeeperClosed:
        return ZooKeeperClosed(
            f"{self.group.consumer_id}: the ZooKeeper client closed while the member was running "
            "(kazoo's connection thread ended); leaving the group"
        )

    # ---- kazoo's state listener (kazoo's thread: no blocking, no ZooKeeper calls) ------------------
    def on_connection_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._apply(Event.LOST)
            if self.group.client.client_state == KeeperState.CLOSED and self.state is not State.STOPPED:
                # kazoo's connection thread ended (it died, or someone closed the client under us):
                # no reconnect will come, so the member leaves rather than retrying forever.
                self._on_closed(self._closed_error())
        elif state == KazooState.SUSPENDED:
            self._apply(Event.SUSPENDED)
        else:
            live, registered = self.group.live_session, self.group.session
            if registered is None or live is None:
                return
            self._apply(Event.CONNECTED_SAME if live == registered else Event.CONNECTED_OTHER)

    def _apply(self, event: Event, *, unless_lost_since: int | None = None, lease_from: float | None = None) -> bool:
        """Apply `event` under the lock; False, doing nothing, if `unless_lost_since` is given and a
        session was lost since that count of `Assignment.sessions_lost`. `lease_from`: extend the
        lease from that confirmed round trip as part of the same step."""
        # The actions run under the lock too: a REGISTERED from the rebalance thread must not reopen
        # the gate between a LOST's state change and its gate.close() on kazoo's thread.
        with self._lock:
            if unless_lost_since is not None and self.assignment.sessions_lost != unless_lost_since:
                return False
            live = self.group.live_session
            if event is Event.REGISTERED and live is not None and live != self.group.session:
                return False  # kazoo moved to another session since: that registration is gone
            before = self.state
            step = transition(before, event)
            if lease_from is not None:
                self.lease.extend(lease_from)
            self.state = step.state
            lost = self.assignment.lose_all() if step.lose_ownership else []
            if step.lose_ownership:
                self._awaiting_reread = False  # nothing left to read again: the nodes went with the session
            if step.reread:
                self.reconnects += 1
                self._awaiting_reread = True
                self._blind_since = self._clock()
                self.lease.extend_from_handshake()  # the session is vouched for; our nodes are not
            if step.deliver is True and not self._awaiting_reread:
                self.gate.reopen()
            elif step.deliver is False:
                self.gate.close()
        if lost:
            log.warning(
                "%s: ZooKeeper session ended; its %d owner nodes went with it", self.group.consumer_id, len(lost)
            )
        if before is not step.state:
            log.info("%s: session %s -> %s (%s)", self.group.consumer_id, before.value, step.state.value, event.value)
        if step.rebalance:
            self._trigger(step.rebalance)
        return True

    @property
    def holding_for_reread(self) -> bool:
        """Delivery waits for our owner nodes to be read again after a same-session reconnect."""
        return self._awaiting_reread

    def owned_nodes_reread(self, reconnects: int) -> None:
        """The rebalance thread read every owned node afresh (re-arming its watch) after the
        same-session reconnect number `reconnects`, and resolved what was not ours: delivery may go
        on, unless the link dropped again since (its own re-read will say so) or the state moved."""
        with self._lock:
            if not self._awaiting_reread or reconnects != self.reconnects or self.state is not State.CONNECTED:
                return
            self._awaiting_reread = False
            gap = self._clock() - self._blind_since if self._blind_since is not None else 0.0
            self.reread_gap_s = gap
            self.gate.reopen()
        log.info("%s: owner nodes read again %.3fs after the reconnect; delivering again", self.group.consumer_id, gap)

    # ---- ownership signals (zookeeper/signals.py; kazoo's or a committing thread: no blocking) -------
    def on_doubt(self, keys: list[TopicPartition], why: str) -> None:
        """An owner node we hold deleted or rewritten by someone else (its watch fired), or found
        foreign by a commit: its delivery stops here, before anything else (Assignment.doubt), and
        only the rebalance it triggers reads the node again and releases, drops or claims it
        (reconcile.py)."""
        stopped = self.assignment.doubt(keys)
        if stopped:
            log.warning("%s: stopped delivering %s: %s", self.group.consumer_id, partitions_text(stopped), why)
            self._trigger(f"ownership in doubt: {why}")

    def on_refused(self, why: str) -> None:
        """A write refused on our session fence: the rebalance's `ensure_registered` finds the fence
        not ours (GroupZk.is_registered) and registers and fences again, so a fence node deleted or
        written to by hand costs one attempt."""
        self._trigger(f"a fenced write was refused: {why}")

    # ---- watch callbacks (kazoo's thread) --------------------------------------------------------
    # An event of type NONE is kazoo dropping the watch on a disconnect; the reconnect rebalances.
    def on_members_changed(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self._trigger("group membership changed")

    def on_topic_list_changed(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self._trigger("topic list changed")

    def on_brokers_changed(self, event: WatchedEvent) -> None:
        if self.waiting_for_brokers and event.type != EventType.NONE:
            self._trigger("brokers changed")

    def on_topic_changed(self, event: WatchedEvent) -> None:
        if event.type == EventType.NONE:
            return
        topic = topic_of_path(event.path or "")
        if event.type == EventType.DELETED and topic:
            # Positions of a deleted topic mean nothing in a re-created one: stop at once.
            fenced = self.assignment.fence_topic(topic, None)
            if fenced:
                log.warning(
                    "%s: topic %s deleted; stopped delivering %d partitions", self.group.consumer_id, topic, len(fenced)
                )
        self._trigger(f"topic {topic} changed")


def topic_of_path(path: str) -> str:
    """The topic of /brokers/topics/<topic>."""
    prefix = znodes.BROKER_TOPICS + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path
