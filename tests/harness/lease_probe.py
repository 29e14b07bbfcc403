"""`python -m harness.lease_probe HOSTS GROUP ID [--renewal sync|check|read]`: one member's session and lease, as JSON lines.

A member reduced to its session: zkconsumer's own connect, GroupZk, Membership and DeliveryGate,
registered in GROUP as ID, renewing its lease on the schedule a ConsumerConnector uses (every
quarter of the granted session timeout). It prints when its delivery gate opens and closes
("usable", read every 10 ms on the lease clock: what every iterator slice and the Spark planner
check), so a lab test can put the moments next to the session's expiry as the leader saw it.
`--renewal` picks how renewals are confirmed (Membership's `renewal`); without it, the default.

    {"event": "ready", "session": 123, "path": "/consumers/g/ids/c1", "t": 1.5}
    {"event": "usable", "usable": false, "t": 9.75}
    {"event": "done", "renewals": 40, "confirmed": 36, "failed": 4, "t": 21.0}

It runs until its stdin closes (or a line arrives on it). Lines are stamped with `now()`.
"""

from __future__ import annotations

import argparse
import json
import logging
import select
import sys
import threading
import time
from typing import Any

from zkconsumer.consumer.delivery import DeliveryGate
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.coordinator.membership import Membership
from zkconsumer.coordinator.periodic import PeriodicTask
from zkconsumer.errors import is_retriable
from zkconsumer.zookeeper.client import close_quietly, connect
from zkconsumer.zookeeper.group import GroupZk


def now() -> float:
    """The time stamp of every line, and of what a lab test sets next to them: CLOCK_BOOTTIME,
    the same in every namespace of the host (lab tests run on Linux only)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _say(**fields: Any) -> None:
    print(json.dumps({**fields, "t": round(now(), 3)}), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("hosts")
    parser.add_argument("group")
    parser.add_argument("consumer_id")
    parser.add_argument("--renewal", choices=["sync", "check", "read"])
    parser.add_argument("--session-ms", type=int, default=4000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    timeout_s = args.session_ms / 1000.0
    client = connect(args.hosts, session_timeout_s=timeout_s, connect_timeout_s=30.0)
    group = GroupZk(client, args.group, args.consumer_id, timeout_s=timeout_s)
    gate = DeliveryGate()
    chosen = {} if args.renewal is None else {"renewal": args.renewal}

    def reconciled(_reason: str) -> None:
        # What the rebalance thread does after a same-session reconnect: re-read the owned nodes (this
        # member owns none) and let delivery go on. On its own thread: the trigger may come under
        # Membership's lock.
        threading.Thread(target=lambda: membership.owned_nodes_reread(membership.reconnects), daemon=True).start()

    membership = Membership(
        group,
        Assignment(),
        gate,
        registration=lambda: b'{"version":1,"subscription":{},"pattern":"static","timestamp":"1"}',
        session_timeout_s=timeout_s,
        trigger=reconciled,
        **chosen,
    )
    counts = {"renewals": 0, "confirmed": 0, "failed": 0}

    def renew() -> None:
        before = gate.lease_until
        counts["renewals"] += 1
        try:
            membership.renew_lease()
        except Exception as exc:
            counts["failed"] += 1
            if not is_retriable(exc):
                raise
            return
        counts["confirmed" if gate.lease_until != before else "failed"] += 1

    membership.start()
    group.ensure_paths()
    membership.ensure_registered()
    renewer = PeriodicTask(f"{args.consumer_id}-lease", lambda: membership.lease.session_timeout_s() / 4.0, renew)
    renewer.start()
    _say(event="ready", session=group.session, path=group.member_path)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    usable = gate.usable()
    _say(event="usable", usable=usable)
    while not stop.wait(0.01):
        now = gate.usable()
        if now != usable:
            usable = now
            _say(event="usable", usable=usable)
    renewer.stop(timeout=timeout_s + 2.0)
    membership.stop()
    close_quietly(client, 5.0)
    _say(event="done", **counts)
    return 0


def read_lines(proc: Any, until: str, timeout: float) -> list[dict[str, Any]]:
    """The JSON lines `proc` prints up to and including the first whose event is `until` (at most `timeout` s)."""
    lines: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        text = proc.stdout.readline()
        if not text:
            break
        line = json.loads(text)
        lines.append(line)
        if line.get("event") == until:
            return lines
    raise RuntimeError(f"no {until!r} line within {timeout:.0f}s; got {lines}")


if __name__ == "__main__":
    sys.exit(main())
