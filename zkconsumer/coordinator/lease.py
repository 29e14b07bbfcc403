"""SessionLease: the delivery lease, renewed by round trips the ensemble's leader confirmed in our session, and how long each lets delivery go on."""

from __future__ import annotations

import threading
from collections.abc import Callable

from zkconsumer.clock import lease_clock
from zkconsumer.config.timing import DEFAULT_TICK_MS, LEASE_FRACTION, RENEWALS_PER_SESSION, renewal_for
from zkconsumer.consumer.delivery import DeliveryGate
from zkconsumer.errors import ZkConsumerError
from zkconsumer.zookeeper.client import handshake_started_at, negotiated_timeout_ms
from zkconsumer.zookeeper.group import GroupZk

# The lease runs LEASE_FRACTION (config/timing.py) x the session timeout from a touch of the session
# the ensemble's leader has certainly heard of (`SessionLease.extend`; docs/design.md, "which clock
# and which server"): the leader expires the session a session timeout (rounded up to its tick)
# after it last heard of it, never sooner.

# How a lease renewal is confirmed. "sync": a sync, then the read, pipelined (the server answers
# the read only once it caught up with the leader; a follower that lost its leader cannot answer
# it). "check": a transaction of one check on our fence node (a write: a leader with a quorum
# commits it). "read": the read alone, which a follower answers from its own copy even after it
# lost its leader (kept to measure and show that gap, never the default). "auto" (the default):
# "sync" where the granted session and the servers' tickTime make it safe, else "check"
# (timing.renewal_for; docs/design.md, "Timing rules").
RENEWALS = ("auto", "sync", "check", "read")


class SessionLease:
    """The lease on `gate`: each confirmed renewal lets delivery go on until a deadline the session
    certainly outlives. Membership decides when a renewal may count (a registered, live session);
    this class makes the round trip and sets the deadline.

    Example::

        lease = SessionLease(group, gate, session_timeout_s=6.0)
        lease.renew()                                  # the lease's thread, every renewal_interval_s()
        lease.extend(sent_at)                          # a registration confirmed at `sent_at`
    """

    def __init__(
        self,
        group: GroupZk,
        gate: DeliveryGate,
        *,
        session_timeout_s: float,
        clock: Callable[[], float] = lease_clock,
        renewal: str = "auto",
        tick_s: float = DEFAULT_TICK_MS / 1000.0,
    ) -> None:
        if renewal not in RENEWALS:
            raise ValueError(f"renewal must be one of {', '.join(RENEWALS)}, not {renewal!r}")
        self.group, self.gate = group, gate
        self.configured_timeout_s = session_timeout_s
        self.renewal = renewal
        self._clock = clock
        self._tick_s = tick_s
        # Per session (reset when it changes): the start of a round trip the leader certainly heard
        # of, and the start of the last confirmed round trip (heard of once the next one confirms).
        self._lock = threading.Lock()  # the lease task's renewals, the state listener's handshakes
        self._touches_of: int | None = None
        self._heard_at: float | None = None
        self._confirmed_at: float | None = None

    def session_timeout_s(self) -> float:
        """The shorter of the configured and the granted timeout (the server may lower ours to its
        maxSessionTimeout; a lease longer than the real session would be unsafe). The granted one
        is read off the handshake by zkconsumer's kazoo handler (zookeeper/handler.py)."""
        granted = negotiated_timeout_ms(self.group.client)
        if granted is None:
            raise ZkConsumerError(
                f"{self.group.consumer_id}: the session timeout ZooKeeper granted is unknown (the kazoo client "
                "was not made by zkconsumer.zookeeper.client.connect); no delivery lease can be set safely"
            )
        return min(self.configured_timeout_s, granted / 1000.0)

    def renewal_interval_s(self) -> float:
        """How often the lease's thread renews (a reconnect may be granted a shorter session)."""
        return self.session_timeout_s() / RENEWALS_PER_SESSION

    def renew(self) -> None:
        """One renewal in the registered session: a round trip the leader confirms extends the lease;
        a fence check ZooKeeper refuses signals it (the rebalance it triggers fences again)."""
        sent = self._clock()
        registered = self.group.session
        kind = renewal_for(self.session_timeout_s(), self._tick_s) if self.renewal == "auto" else self.renewal
        if kind == "check":
            fence = self.group.require_fence()
            txn = self.group.io.transaction()
            fence.guard(txn)
            results = self.group.io.commit(txn, "check the session's fence node (lease)")
            if not fence.refused(results):
                self.extend(sent)
            else:
                self.group.signals.refused(str(fence.lost("the lease renewal's check", results)))
            return
        io, path = self.group.io, self.group.member_path
        stat = io.exists_after_sync(path) if kind == "sync" else io.exists(path)
        if stat is not None and registered is not None and stat.ephemeralOwner == registered:
            self.extend(sent)

    def extend_from_handshake(self) -> None:
        """A reconnect in our session: the server renewed it when it read the handshake, which was
        sent after the connection opened. Extend from that moment, never from now: kazoo runs the
        state listener after reading the handshake, and a process stalled in between (GC, SIGSTOP)
        would otherwise lease past an expiry. The stamp must come from this class's clock:
        zkconsumer's handler reads the lease clock (zkconsumer.clock, the default here), the
        simulation's fake handler the model's clock it passes here. No stamp: the next confirmed
        round trip renews the lease."""
        started = handshake_started_at(self.group.client)
        if started is not None:
            self.extend(started, heard=True)

    def extend(self, confirmed_at: float, *, heard: bool = False) -> None:
        """A round trip started at `confirmed_at` was confirmed. The leader hears of a session only
        through its own handshake (a session's creation, a reconnect's revalidation: `heard`) or,
        behind a follower, through the follower's answer to its next ping (every tickTime/2), which
        carries the sessions the follower's clients touched; a request the follower forwards (our
        sync, our check) touches nothing at the leader. So a renewal's touch is certainly heard of
        only once a later renewal got through the same link: the lease counts from the renewal
        before the last confirmed one (renewals are session_timeout/4 >= tickTime/2 apart, since
        ZooKeeper grants no session timeout under 2 x tickTime), or from the session's handshake.
        A renewal that comes late thereby shortens the lease instead of stretching it."""
        timeout_s = self.session_timeout_s()
        with self._lock:
            session = self.group.session
            if session != self._touches_of:  # a new session: its handshake is the leader's first word of it
                self._touches_of, self._confirmed_at = session, None
                self._heard_at = handshake_started_at(self.group.client)
            heard_now = confirmed_at if heard else self._confirmed_at
            if heard_now is None and self._heard_at is None:  # no handshake stamp (not made by `connect`)
                heard_now = confirmed_at - timeout_s / 4  # one renewal interval back
            self._heard_at = max(t for t in (self._heard_at, heard_now) if t is not None)
            self._confirmed_at = confirmed_at if self._confirmed_at is None else max(self._confirmed_at, confirmed_at)
            self.gate.renew(self._heard_at + LEASE_FRACTION * timeout_s)
