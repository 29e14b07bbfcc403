"""The lease clock (zkconsumer.clock): CLOCK_BOOTTIME where the OS has it, read afresh at every call."""

from __future__ import annotations

import sys
import time

import pytest

from zkconsumer import clock


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CLOCK_BOOTTIME is Linux's")
def test_on_linux_the_lease_clock_is_boottime() -> None:
    assert clock.LEASE_CLOCK_NAME == "CLOCK_BOOTTIME"
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    reading = clock.lease_clock()
    assert before <= reading <= time.clock_gettime(time.CLOCK_BOOTTIME)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CLOCK_BOOTTIME is Linux's")
def test_the_lease_clock_reads_the_os_at_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # What lets a simulated host (tests/harness/sim_host.py) stand in its clocks for the OS's.
    monkeypatch.setattr(time, "clock_gettime", lambda clock_id: 1234.5)
    assert clock.lease_clock() == 1234.5
