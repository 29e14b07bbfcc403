"""The host-suspend actor: a member's host whose CLOCK_MONOTONIC stops while the model's time (ZooKeeper's session clock) runs on.

A laptop lid, a VM paused by its hypervisor, a host suspended to RAM: the member's process stops,
no ping leaves it, and its kernel counts the time in CLOCK_BOOTTIME but not in CLOCK_MONOTONIC.
ZooKeeper's servers are elsewhere: their session clock never stops. `SimHost` gives the member
both clocks over the model's time, `clock_gettime` to stand in for `time.clock_gettime`
(production's lease clock reads CLOCK_BOOTTIME through it), and `suspend` / `wake`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.simulation import SimMember
from harness.zkmodel import ZkModel


class SimHost:
    """One host's clocks over a ZkModel's time, with the time it spent suspended taken out of CLOCK_MONOTONIC.

    Example::

        host = SimHost(model)
        monkeypatch.setattr(time, "clock_gettime", host.clock_gettime(time.clock_gettime))
        host.suspend(member, 8000)   # the world moves on 8 s; the member's monotonic clock does not
        host.wake(member)            # its threads run again before kazoo reads the server's EOF
    """

    def __init__(self, model: ZkModel) -> None:
        self.model = model
        self.slept_ms = 0

    def boottime(self) -> float:
        return self.model.now_ms / 1000.0

    def monotonic(self) -> float:
        return (self.model.now_ms - self.slept_ms) / 1000.0

    def clock_gettime(self, real: Callable[[int], float]) -> Callable[[int], float]:
        """time.clock_gettime for code on this host: its two clocks simulated, any other clock real."""

        def read(clock_id: int) -> float:
            if clock_id == getattr(time, "CLOCK_BOOTTIME", None):
                return self.boottime()
            if clock_id == time.CLOCK_MONOTONIC:
                return self.monotonic()
            return real(clock_id)

        return read

    def suspend(self, member: SimMember, ms: int) -> None:
        """The host sleeps `ms`: the member's process stops (no pings, no callbacks) while the model's time runs."""
        self.model.freeze(member.client)
        member.frozen = True
        self.model.advance(ms)
        self.slept_ms += ms

    def wake(self, member: SimMember) -> None:
        """The process runs again. kazoo has not read the server's EOF yet (its connection thread
        wakes like every other thread): the member's iterators may run first, as on a real host."""
        member.client._frozen = False  # not model.thaw(): that would replay the EOF and LOST at once
        member.frozen = False

    def eof(self, member: SimMember) -> None:
        """kazoo reads the EOF the server sent when it expired the session: SUSPENDED, and no reconnect yet."""
        member.client._link = False
        member.client._suspend()
        self.model.deliver_listeners(member.client)
