"""The lease clock: the one reading of time every lease stamp and check uses, counting while the host is suspended.

ZooKeeper's session clock runs on the servers, and it keeps running while a member's host or VM is
suspended. CLOCK_MONOTONIC stops then (Linux counts no suspended time in it), so a lease measured
on it would still look valid to a member waking from a suspend longer than its session, while its
session and owner nodes are gone. CLOCK_BOOTTIME is CLOCK_MONOTONIC plus the time suspended; where
the OS has no such clock, time.monotonic() is the best there is (macOS's monotonic clock already
counts sleep; Windows has neither difference nor CLOCK_BOOTTIME).

The clock is read through `time.clock_gettime` at each call, never bound once, so a test can stand
in a simulated host's clocks for the OS's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["LEASE_CLOCK_NAME", "lease_clock"]


def _boottime_id() -> int | None:
    """CLOCK_BOOTTIME's id if this OS has it and it answers, else None."""
    clock_id: int | None = getattr(time, "CLOCK_BOOTTIME", None)
    if clock_id is None:
        return None
    try:
        time.clock_gettime(clock_id)
    except OSError:  # named by the Python build, refused by the kernel (Linux before 2.6.39)
        return None
    return clock_id


_BOOTTIME = _boottime_id()
LEASE_CLOCK_NAME = "CLOCK_BOOTTIME" if _BOOTTIME is not None else "time.monotonic"


def _boottime() -> float:
    return time.clock_gettime(_BOOTTIME)  # type: ignore[arg-type]  # only chosen when the id exists


def _monotonic() -> float:
    return time.monotonic()


lease_clock: Callable[[], float] = _boottime if _BOOTTIME is not None else _monotonic
"""Seconds on the lease clock (comparable only with other readings of it)."""
