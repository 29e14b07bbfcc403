"""Unit tests of zkconsumer.coordinator.membership: the pure session transition table and Membership's connection listener."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

import pytest
from kazoo.protocol.states import KazooState, KeeperState

from zkconsumer.config.timing import LEASE_FRACTION
from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import DeliveryGate
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.lease import SessionLease
from zkconsumer.coordinator.membership import Event, Membership, State, Transition, transition
from zkconsumer.errors import SessionLost, ZkConsumerError, ZooKeeperClosed, is_retriable
from zkconsumer.zookeeper.signals import OwnershipSignals

S, E = State, Event
R = "rebalance"  # a rebalance is asked for (any non-empty reason)
_ = None

# (state, event) -> (next state, deliver, lose_ownership, rebalance?), written out from the module
# docstring's rules: SUSPENDED keeps ownership and leaves delivery to the lease; LOST loses everything held in the
# session and rebalances; CONNECTED in the registered session delivers again (and rebalances after a
# SUSPENDED, because kazoo dropped the watches); CONNECTED in another session is a LOST for a registered
# member; STOP ends everything.
EXPECTED: dict[tuple[State, Event], tuple[State, bool | None, bool, str | None]] = {
    # UNREGISTERED: no member node of the current session yet
    (S.UNREGISTERED, E.REGISTERED): (S.CONNECTED, True, False, _),
    (S.UNREGISTERED, E.SUSPENDED): (S.UNREGISTERED, False, False, _),
    (S.UNREGISTERED, E.LOST): (S.EXPIRED, False, True, R),
    (S.UNREGISTERED, E.CONNECTED_SAME): (S.UNREGISTERED, _, False, _),
    # Nothing registered to lose: wait for the rebalance (which registers) instead of expiring.
    (S.UNREGISTERED, E.CONNECTED_OTHER): (S.UNREGISTERED, _, False, R),
    (S.UNREGISTERED, E.STOP): (S.STOPPED, _, False, _),
    # CONNECTED: registered, link up
    (S.CONNECTED, E.REGISTERED): (S.CONNECTED, True, False, _),
    (S.CONNECTED, E.SUSPENDED): (S.SUSPENDED, _, False, _),
    (S.CONNECTED, E.LOST): (S.EXPIRED, False, True, R),
    (S.CONNECTED, E.CONNECTED_SAME): (S.CONNECTED, _, False, _),
    (S.CONNECTED, E.CONNECTED_OTHER): (S.EXPIRED, False, True, R),
    (S.CONNECTED, E.STOP): (S.STOPPED, _, False, _),
    # SUSPENDED: registered, link down, session maybe alive
    (S.SUSPENDED, E.REGISTERED): (S.CONNECTED, True, False, _),
    (S.SUSPENDED, E.SUSPENDED): (S.SUSPENDED, _, False, _),
    (S.SUSPENDED, E.LOST): (S.EXPIRED, False, True, R),
    (S.SUSPENDED, E.CONNECTED_SAME): (S.CONNECTED, False, False, R),  # until our owner nodes are read again
    (S.SUSPENDED, E.CONNECTED_OTHER): (S.EXPIRED, False, True, R),
    (S.SUSPENDED, E.STOP): (S.STOPPED, _, False, _),
    # EXPIRED: the session ended, ownership already lost, re-registration pending
    (S.EXPIRED, E.REGISTERED): (S.CONNECTED, True, False, _),
    (S.EXPIRED, E.SUSPENDED): (S.EXPIRED, False, False, _),
    (S.EXPIRED, E.LOST): (S.EXPIRED, False, True, R),
    (S.EXPIRED, E.CONNECTED_SAME): (S.EXPIRED, _, False, _),
    (S.EXPIRED, E.CONNECTED_OTHER): (S.EXPIRED, _, False, R),
    (S.EXPIRED, E.STOP): (S.STOPPED, _, False, _),
    # STOPPED: absorbing
    (S.STOPPED, E.REGISTERED): (S.STOPPED, _, False, _),
    (S.STOPPED, E.SUSPENDED): (S.STOPPED, _, False, _),
    (S.STOPPED, E.LOST): (S.STOPPED, _, False, _),
    (S.STOPPED, E.CONNECTED_SAME): (S.STOPPED, _, False, _),
    (S.STOPPED, E.CONNECTED_OTHER): (S.STOPPED, _, False, _),
    (S.STOPPED, E.STOP): (S.STOPPED, _, False, _),
}

ALL_PAIRS = list(itertools.product(State, Event))


def test_the_table_covers_every_pair() -> None:
    assert set(EXPECTED) == set(ALL_PAIRS)
    assert len(EXPECTED) == len(State) * len(Event) == 30


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda x: x.name)
def test_transition_table(state: State, event: Event) -> None:
    step = transition(state, event)
    want_state, want_deliver, want_lose, want_rebalance = EXPECTED[(state, event)]
    assert isinstance(step, Transition)
    assert step.state is want_state
    assert step.deliver is want_deliver
    assert step.lose_ownership is want_lose
    if want_rebalance:
        assert isinstance(step.rebalance, str) and step.rebalance
    else:
        assert step.rebalance is None


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda x: x.name)
def test_transition_is_pure(state: State, event: Event) -> None:
    assert transition(state, event) == transition(state, event)


# ---- properties over the whole table ---------------------------------------------------------------


@pytest.mark.parametrize("event", list(Event), ids=lambda e: e.name)
def test_stopped_is_absorbing(event: Event) -> None:
    assert transition(State.STOPPED, event) == Transition(State.STOPPED)


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.name)
def test_stop_always_stops_and_asks_nothing_else(state: State) -> None:
    step = transition(state, Event.STOP)
    assert step.state is State.STOPPED
    assert not step.lose_ownership and step.rebalance is None


@pytest.mark.parametrize("state", [s for s in State if s is not State.STOPPED], ids=lambda s: s.name)
def test_lost_closes_delivery_and_rebalances(state: State) -> None:
    step = transition(state, Event.LOST)
    assert step.state is State.EXPIRED
    assert step.deliver is False
    assert step.rebalance


HELD_NODES_ON = {  # states leaving which, on this event, means the session's owner nodes went away
    # EXPIRED too: the session a registration under way was made in may be the one that ended
    Event.LOST: {State.CONNECTED, State.SUSPENDED, State.UNREGISTERED, State.EXPIRED},
    Event.CONNECTED_OTHER: {State.CONNECTED, State.SUSPENDED},
}


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda x: x.name)
def test_lose_ownership_only_when_leaving_a_session_that_held_nodes(state: State, event: Event) -> None:
    step = transition(state, event)
    assert step.lose_ownership is (state in HELD_NODES_ON.get(event, set()))
    if step.lose_ownership:
        assert step.state is State.EXPIRED and step.deliver is False and step.rebalance


def test_reconnect_in_the_same_session_after_suspended_holds_delivery_and_rebalances() -> None:
    step = transition(State.SUSPENDED, Event.CONNECTED_SAME)
    assert step == Transition(
        State.CONNECTED, deliver=False, lose_ownership=False, rebalance=step.rebalance, reread=True
    )
    assert step.rebalance  # kazoo dropped every watch with the link


@pytest.mark.parametrize("state", list(State), ids=lambda s: s.name)
def test_suspended_never_loses_ownership_nor_opens_delivery(state: State) -> None:
    step = transition(state, Event.SUSPENDED)
    assert not step.lose_ownership
    assert step.deliver is not True


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda x: x.name)
def test_only_registration_opens_delivery(state: State, event: Event) -> None:
    if transition(state, event).deliver is True:
        assert event is Event.REGISTERED
        assert state in (State.UNREGISTERED, State.CONNECTED, State.SUSPENDED, State.EXPIRED)


# ---- Membership.on_connection_state with a stub group ----------------------------------------------


class StubHandler:
    def __init__(self, negotiated_ms: int | None) -> None:
        self.negotiated_session_timeout_ms = negotiated_ms
        self.handshake_started_at: float | None = None  # set by a test that reconnects


class StubClient:
    def __init__(self, negotiated_ms: int | None = 6000) -> None:
        self.listeners: list[object] = []
        self.handler = StubHandler(negotiated_ms)  # zkconsumer's handler reads it off the handshake
        self.client_state = KeeperState.CONNECTED

    def add_listener(self, fn: object) -> None:
        self.listeners.append(fn)

    def remove_listener(self, fn: object) -> None:
        self.listeners.remove(fn)


class StubGroup:
    def __init__(self, session: int | None, live: int | None, negotiated_ms: int | None = 6000) -> None:
        self.client = StubClient(negotiated_ms)
        self.session = session
        self.live_session = live
        self.consumer_id = "g_host-1-abc"
        self.group_id = "g"
        self.signals = OwnershipSignals()


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


KEYS = [("a", 0), ("a", 1), ("b", 0)]


def make_member(
    state: State,
    *,
    session: int | None = 0x11,
    live: int | None = 0x11,
    negotiated_ms: int | None = 6000,
    timeout_s: float = 6.0,
    on_closed: Callable[[BaseException], None] = lambda _error: None,
):
    clock = Clock()
    group = StubGroup(session, live, negotiated_ms)
    assignment = Assignment()
    infos = [PartitionTopicInfo(t, p, "g_host-1-abc-0", StreamQueue(2), 10, epoch=7) for t, p in KEYS]
    assignment.install(infos)
    gate = DeliveryGate(clock=clock)
    triggers: list[str] = []
    member = Membership(
        group,
        assignment,
        gate,
        registration=lambda: b"{}",  # type: ignore[arg-type]
        session_timeout_s=timeout_s,
        trigger=triggers.append,
        on_closed=on_closed,
        clock=clock,
    )
    member.state = state
    return member, group, assignment, infos, gate, triggers, clock


def test_start_and_stop_register_the_listener() -> None:
    member, group, assignment, _infos, _gate, triggers, _clock = make_member(State.CONNECTED)
    member.start()
    assert group.client.listeners == [member.on_connection_state]
    group.signals.doubt([("a", 0)], "its owner node was deleted")  # signals reach the member once started
    group.signals.refused("the fence node is gone")
    assert triggers == [
        "ownership in doubt: its owner node was deleted",
        "a fenced write was refused: the fence node is gone",
    ]
    member.stop()
    assert group.client.listeners == []
    assert member.state is State.STOPPED
    member.stop()  # a second stop finds no listener: no error


def test_suspended_keeps_every_partition_and_delivers_until_the_lease_runs_out() -> None:
    member, _g, assignment, infos, gate, triggers, clock = make_member(State.CONNECTED)
    gate.renew(clock.now + 2.0)  # the last confirmed round trip's lease
    member.on_connection_state(KazooState.SUSPENDED)
    assert member.state is State.SUSPENDED
    assert gate.open is True and gate.usable()  # a short disconnection costs no delivery
    assert set(assignment.owned()) == set(KEYS)
    assert all(i.active for i in infos)
    assert triggers == []
    clock.now += 2.5  # no round trip renews the lease while the link is down
    assert not gate.usable() and gate.enforce_lease()
    member.on_connection_state(KazooState.SUSPENDED)  # a second SUSPENDED does not reopen anything
    assert not gate.usable()


@pytest.mark.parametrize("state", [State.CONNECTED, State.SUSPENDED], ids=lambda s: s.name)
def test_lost_loses_every_partition_and_triggers(state: State) -> None:
    member, _g, assignment, infos, gate, triggers, _c = make_member(state)
    moving = assignment.begin_release([KEYS[0]])
    member.on_connection_state(KazooState.LOST)
    assert member.state is State.EXPIRED
    assert assignment.owned() == {} and assignment.releasing() == {} and assignment.committable() == []
    assert all(i.active is False for i in infos + moving)
    assert gate.open is False
    assert len(triggers) == 1 and triggers[0]


@pytest.mark.parametrize(("negotiated_ms", "effective_s"), [(4000, 4.0), (10000, 6.0), (6000, 6.0)])
def test_reconnect_in_the_registered_session_extends_the_lease_from_the_handshake_and_reopens_after_the_reread(
    negotiated_ms: int | None, effective_s: float
) -> None:
    member, group, assignment, infos, gate, triggers, clock = make_member(State.CONNECTED, negotiated_ms=negotiated_ms)
    gate.renew(clock.now + 1.0)
    member.on_connection_state(KazooState.SUSPENDED)
    clock.now += 3.0  # the old lease has lapsed
    assert not gate.usable()
    handshake = clock.now - 0.5  # the connection opened before the server renewed the session
    group.client.handler.handshake_started_at = handshake
    clock.now += 0.2  # kazoo runs the listener after reading the handshake
    member.on_connection_state(KazooState.CONNECTED)
    assert member.state is State.CONNECTED
    assert gate.open is False, "nothing delivered before our owner nodes are read again"
    assert gate.lease_until == pytest.approx(handshake + LEASE_FRACTION * effective_s)
    assert set(assignment.owned()) == set(KEYS) and all(i.active for i in infos)
    assert len(triggers) == 1 and triggers[0]  # re-arm the watches kazoo dropped
    member.owned_nodes_reread(member.reconnects)
    assert gate.open is True and gate.usable()


def test_a_listener_run_late_after_a_stall_does_not_lease_past_the_session() -> None:
    """The review's case: the handshake renewed the session, then the process stalled longer than the
    session before kazoo ran the CONNECTED listener. The lease counts from the handshake, so it is
    already out; before, it counted from the listener's "now" and delivered on a dead session."""
    member, group, _assignment, _infos, gate, _triggers, clock = make_member(State.CONNECTED, negotiated_ms=6000)
    member.on_connection_state(KazooState.SUSPENDED)
    group.client.handler.handshake_started_at = clock.now
    clock.now += 7.0  # stalled past the 6 s session between the handshake and the listener
    member.on_connection_state(KazooState.CONNECTED)
    assert gate.lease_until < clock.now and not gate.usable()


def test_a_reconnect_without_a_handshake_stamp_waits_for_the_next_round_trip() -> None:
    member, _group, _assignment, _infos, gate, _triggers, clock = make_member(State.CONNECTED)
    gate.renew(clock.now + 1.0)
    member.on_connection_state(KazooState.SUSPENDED)
    clock.now += 3.0
    member.on_connection_state(KazooState.CONNECTED)
    member.owned_nodes_reread(member.reconnects)
    assert gate.open is True and not gate.usable()  # reopened, but nothing vouched for the session yet


def test_session_timeout_is_the_shorter_of_configured_and_negotiated() -> None:
    assert make_member(State.CONNECTED, negotiated_ms=2500)[0].lease.session_timeout_s() == pytest.approx(2.5)
    assert make_member(State.CONNECTED, negotiated_ms=30000)[0].lease.session_timeout_s() == pytest.approx(6.0)


def test_an_unknown_granted_timeout_is_an_error_not_a_guess() -> None:
    # A lease taken from the configured timeout could outlive a session the server capped lower.
    member = make_member(State.CONNECTED, negotiated_ms=None)[0]
    with pytest.raises(ZkConsumerError, match="granted is unknown"):
        member.lease.session_timeout_s()


@pytest.mark.parametrize("state", [State.CONNECTED, State.SUSPENDED], ids=lambda s: s.name)
def test_connected_in_another_session_loses_ownership(state: State) -> None:
    member, _g, assignment, infos, gate, triggers, _c = make_member(state, session=0x11, live=0x22)
    member.on_connection_state(KazooState.CONNECTED)
    assert member.state is State.EXPIRED
    assert assignment.owned() == {}
    assert all(i.active is False for i in infos)
    assert gate.open is False
    assert len(triggers) == 1


@pytest.mark.parametrize("state", [State.CONNECTED, State.SUSPENDED], ids=lambda s: s.name)
def test_a_missing_live_session_is_never_a_new_session(state: State) -> None:
    member, _g, assignment, infos, gate, triggers, _c = make_member(state, session=0x11, live=None)
    if state is State.SUSPENDED:
        gate.close()
    open_before, lease_before = gate.open, gate.lease_until
    member.on_connection_state(KazooState.CONNECTED)
    assert member.state is state
    assert set(assignment.owned()) == set(KEYS) and all(i.active for i in infos)
    assert (gate.open, gate.lease_until) == (open_before, lease_before)
    assert triggers == []


def test_connected_before_any_registration_does_nothing() -> None:
    member, _g, assignment, infos, gate, triggers, _c = make_member(State.UNREGISTERED, session=None, live=0x33)
    member.on_connection_state(KazooState.CONNECTED)
    assert member.state is State.UNREGISTERED
    assert all(i.active for i in infos) and triggers == [] and gate.open


def test_after_stop_connection_events_change_nothing() -> None:
    member, _g, assignment, infos, gate, triggers, _c = make_member(State.CONNECTED, session=0x11, live=0x22)
    member.stop()
    for state in (KazooState.SUSPENDED, KazooState.LOST, KazooState.CONNECTED):
        member.on_connection_state(state)
    assert member.state is State.STOPPED
    assert set(assignment.owned()) == set(KEYS) and all(i.active for i in infos)
    assert triggers == [] and gate.open


# ---- kazoo closed for good (finding 4 of issue #34) ------------------------------------------------------


def test_kazoo_closed_while_running_makes_the_member_leave() -> None:
    left: list[BaseException] = []
    member, group, assignment, infos, gate, _t, _c = make_member(State.CONNECTED, on_closed=left.append)
    group.client.client_state = KeeperState.CLOSED  # kazoo's connection thread ended: no reconnect comes
    member.on_connection_state(KazooState.LOST)
    assert len(left) == 1 and isinstance(left[0], ZooKeeperClosed) and not is_retriable(left[0])
    assert member.state is State.EXPIRED and gate.open is False and assignment.owned() == {}


@pytest.mark.parametrize("keeper_state", [KeeperState.EXPIRED_SESSION, KeeperState.AUTH_FAILED])
def test_an_expired_session_is_no_reason_to_leave(keeper_state: str) -> None:
    left: list[BaseException] = []
    member, group, *_rest = make_member(State.CONNECTED, on_closed=left.append)
    group.client.client_state = keeper_state
    member.on_connection_state(KazooState.LOST)
    assert left == [] and member.state is State.EXPIRED


def test_closing_the_client_after_stop_is_no_failure() -> None:
    left: list[BaseException] = []
    member, group, *_rest = make_member(State.CONNECTED, on_closed=left.append)
    member.stop()
    group.client.client_state = KeeperState.CLOSED
    member.on_connection_state(KazooState.LOST)
    assert left == []


# ---- a LOST during registration (finding 2 of issue #34) --------------------------------------------------


class RegisteringGroup(StubGroup):
    """A group whose register() succeeds in session 0x22, with the member's node there afterwards."""

    def __init__(self) -> None:
        super().__init__(None, 0x22)
        self.member_path = "/consumers/g/ids/g_host-1-abc"

    def is_registered(self) -> bool:
        return self.session is not None and self.session == self.live_session

    def register(self, data: bytes, *, wait_for_stale_s: float = 0.0) -> int:
        self.session = self.live_session
        return 0x22

    def mark_as_zkconsumer(self, data: bytes) -> bool:
        return True


def _registering_member() -> tuple[Membership, RegisteringGroup, Assignment, DeliveryGate]:
    group = RegisteringGroup()
    assignment = Assignment()
    gate = DeliveryGate(clock=Clock())
    member = Membership(
        group,  # type: ignore[arg-type]
        assignment,
        gate,
        registration=lambda: b"{}",
        session_timeout_s=6.0,
        trigger=lambda _reason: None,
        clock=Clock(),
    )
    member.state = State.EXPIRED
    return member, group, assignment, gate


def test_a_lost_landing_just_before_registered_is_not_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    # kazoo delivers LOST on its own thread: here it lands right after the registration, while the
    # rebalance thread is about to mark the member registered. The member must not end up
    # CONNECTED, delivering, in a session whose member node is gone.
    member, group, _assignment, gate = _registering_member()
    lost: list[threading.Thread] = []
    real = SessionLease.extend

    def lease_then_lost(self: SessionLease, confirmed_at: float, *, heard: bool = False) -> None:
        real(self, confirmed_at, heard=heard)
        if not lost:
            thread = threading.Thread(target=member.on_connection_state, args=(KazooState.LOST,))
            lost.append(thread)
            thread.start()
            thread.join(0.5)  # it runs at once, or waits for the lock the registration holds

    monkeypatch.setattr(SessionLease, "extend", lease_then_lost)
    try:
        member.ensure_registered()
    except SessionLost:
        pass  # refused: also correct
    lost[0].join(5)
    assert member.state is State.EXPIRED and gate.open is False


def test_a_registration_a_lost_overtook_is_refused() -> None:
    member, group, assignment, gate = _registering_member()
    real = group.register

    def register_then_lost(data: bytes, *, wait_for_stale_s: float = 0.0) -> int:
        session = real(data)
        member.on_connection_state(KazooState.LOST)  # LOST applied before the member marks itself registered
        return session

    group.register = register_then_lost  # type: ignore[method-assign]
    with pytest.raises(SessionLost):
        member.ensure_registered()
    assert member.state is State.EXPIRED and gate.open is False


def test_kazoo_closed_right_after_a_lost_is_found_by_the_next_attempt_and_the_lease() -> None:
    # kazoo tells listeners only of state changes: CLOSED right after a LOST (a SASL login refused on
    # reconnect, its connection thread dying while it opens the next session) reaches no listener.
    left: list[BaseException] = []
    member, group, *_rest = make_member(State.CONNECTED, on_closed=left.append)
    group.client.client_state = KeeperState.AUTH_FAILED
    member.on_connection_state(KazooState.LOST)
    group.client.client_state, group.live_session = KeeperState.CLOSED, None  # ...then CLOSED, silently
    assert left == []
    with pytest.raises(ZooKeeperClosed):
        member.ensure_registered()  # the rebalance thread: not retriable, so the member leaves
    with pytest.raises(ZooKeeperClosed):
        member.renew_lease()  # and the lease's thread, whichever comes first


def test_an_unknown_way_of_renewing_the_lease_is_refused() -> None:
    with pytest.raises(ValueError, match="renewal must be one of auto, sync, check, read"):
        Membership(
            StubGroup(0x11, 0x11),  # type: ignore[arg-type]
            Assignment(),
            DeliveryGate(clock=Clock()),
            registration=lambda: b"{}",
            session_timeout_s=6.0,
            trigger=lambda _reason: None,
            renewal="exists",
        )


def test_the_lease_counts_from_the_renewal_before_the_last_confirmed_one() -> None:
    """Behind a follower the leader hears of a renewal's touch only in the follower's next ping
    answer: the lease counts from a touch it certainly heard of (docs/design.md)."""
    member, group, _assignment, _infos, gate, _triggers, _clock = make_member(State.CONNECTED)
    group.client.handler.handshake_started_at = 990.0  # the session's handshake: the leader's own word
    member.lease.extend(1000.0)  # the registration
    assert gate.lease_until == pytest.approx(990.0 + LEASE_FRACTION * 6.0)
    member.lease.extend(1001.5)  # a renewal
    assert gate.lease_until == pytest.approx(1000.0 + LEASE_FRACTION * 6.0)
    member.lease.extend(1005.0)  # a late renewal shortens the lease: counted from the one before
    assert gate.lease_until == pytest.approx(1001.5 + LEASE_FRACTION * 6.0)
    group.client.handler.handshake_started_at = 1006.0  # a reconnect the leader revalidated
    member.lease.extend(1006.0, heard=True)
    assert gate.lease_until == pytest.approx(1006.0 + LEASE_FRACTION * 6.0)
    group.session = 0x12  # a new session: its handshake is the first touch heard of
    group.client.handler.handshake_started_at = 1010.0
    member.lease.extend(1011.0)
    assert gate.lease_until == pytest.approx(1010.0 + LEASE_FRACTION * 6.0)


def test_a_same_session_reconnect_delivers_nothing_until_the_owner_nodes_are_read_again() -> None:
    """Issue 51, finding 2: kazoo re-arms no watch after a reconnect, and CONNECTED_SAME reopened the
    gate at once: a node of ours deleted and re-created by another session while the link was down
    was delivered beside its new owner until the next reconcile."""
    member, group, _assignment, _infos, gate, triggers, clock = make_member(State.CONNECTED)
    gate.renew(clock.now + 5.0)
    member.on_connection_state(KazooState.SUSPENDED)
    assert gate.usable()  # the lease decides while the link is down
    group.client.handler.handshake_started_at = clock.now
    member.on_connection_state(KazooState.CONNECTED)
    assert not gate.usable() and triggers
    read_from = member.reconnects  # a re-read starts ...
    member.on_connection_state(KazooState.SUSPENDED)  # ... the link drops again while it is on the wire
    member.on_connection_state(KazooState.CONNECTED)
    member.owned_nodes_reread(read_from)
    assert not gate.usable(), "a read from before the second drop vouches for nothing after it"
    member._apply(Event.REGISTERED)  # re-registering (our member node was gone) reads no owner node
    assert not gate.usable()
    member.owned_nodes_reread(member.reconnects)
    assert gate.usable()


def test_a_lost_session_needs_no_reread_before_a_new_registration_delivers() -> None:
    member, _group, assignment, _infos, gate, _triggers, clock = make_member(State.CONNECTED)
    member.on_connection_state(KazooState.SUSPENDED)
    member.on_connection_state(KazooState.CONNECTED)
    member.on_connection_state(KazooState.LOST)
    assert assignment.owned() == {}
    member._apply(Event.REGISTERED, lease_from=clock.now)
    assert gate.open is True
