"""What the delivery lease's renewals cost, per member per second, on a ZooKeeper follower of a given release.

    .venv/bin/python scripts/bench/lease_renewal_cost.py --release 3.4.14 --members 64 --seconds 20
    .venv/bin/python scripts/bench/lease_renewal_cost.py --release 3.8 --members 64 --seconds 20

Starts a 3-server ensemble of --release (child JVMs, so their CPU is not counted) and connects
--members sessions to one follower the way a member connects (`zookeeper.client.connect`). Each
renews as `Membership.renew_lease` does, every session/4 (6 s sessions: 1.5 s), in both kinds,
one after the other: "sync" (a sync, then the exists of the member's node, pipelined) and "check"
(a transaction of one check, a write the leader commits). Behind every renewal the same session
sends a plain get, as a member's other requests do, whose latency shows what the renewal holds:
on 3.4 a follower holds a session's requests behind its sync until the leader answers
(issue 51, finding 6). Reported per kind: requests and CPU µs of this process per member per second,
the renewal's latency and the get's (p50, p99).
Last line: release= members= sync_cpu_us_per_member_s= sync_p99_ms= sync_get_p99_ms=
check_cpu_us_per_member_s= check_p99_ms= check_get_p99_ms= loadavg=
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer.testing.ensemble import ZooKeeperEnsemble  # noqa: E402
from zkconsumer.testing.versions import ZOOKEEPER  # noqa: E402
from zkconsumer.zookeeper.client import connect  # noqa: E402

SESSION_S = 6.0
INTERVAL_S = SESSION_S / 4  # config.timing.RENEWALS_PER_SESSION


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run_kind(clients: list[Any], kind: str, seconds: float) -> dict[str, float]:
    renewals: list[float] = []
    gets: list[float] = []
    requests = 0
    cpu, began = time.process_time(), time.monotonic()
    while time.monotonic() - began < seconds:
        tick = time.monotonic()
        pending = []
        for i, client in enumerate(clients):
            path = f"/lease/m{i}"
            sent = time.monotonic()
            if kind == "sync":
                first = client.sync_async(path)
                second = client.exists_async(path)
                requests += 2
            else:
                txn = client.transaction()
                txn.check(path, 0)
                first, second = txn.commit_async(), None
                requests += 1
            get = client.get_async(path)
            requests += 1
            pending.append((sent, first, second, get))
        for sent, first, second, get in pending:
            first.get(timeout=30)
            if second is not None:
                second.get(timeout=30)
            renewals.append(time.monotonic() - sent)
            get.get(timeout=30)
            gets.append(time.monotonic() - sent)
        time.sleep(max(0.0, INTERVAL_S - (time.monotonic() - tick)))
    elapsed = time.monotonic() - began
    member_s = elapsed * len(clients)
    return {
        "requests_per_member_s": requests / member_s,
        "cpu_us_per_member_s": (time.process_time() - cpu) / member_s * 1e6,
        "p50_ms": p(renewals, 0.5),
        "p99_ms": p(renewals, 0.99),
        "get_p50_ms": p(gets, 0.5),
        "get_p99_ms": p(gets, 0.99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", default="3.8", help="ZooKeeper release (zkconsumer.testing.versions.ZOOKEEPER)")
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2, help="sync and check alternate this many times")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zk-lease-") as tmp:
        ensemble = ZooKeeperEnsemble(Path(tmp), 3, release=ZOOKEEPER[args.release])
        ensemble.start()
        clients: list[Any] = []
        try:
            leader = ensemble.wait_leader()
            follower = next(s for s in ensemble.servers if s is not leader)
            admin = connect(ensemble.hosts, session_timeout_s=30.0, connect_timeout_s=20.0)
            admin.ensure_path("/lease")
            for i in range(args.members):
                client = connect(follower.hosts, session_timeout_s=SESSION_S, connect_timeout_s=20.0)
                client.create(f"/lease/m{i}", b"{}", ephemeral=True)
                clients.append(client)
            admin.stop()
            admin.close()
            results: dict[str, list[dict[str, float]]] = {"sync": [], "check": []}
            for round_no in range(1, args.rounds + 1):
                for kind in ("sync", "check"):
                    got = run_kind(clients, kind, args.seconds / (2 * args.rounds))
                    results[kind].append(got)
                    print(
                        f"round {round_no} {kind:>5}: {got['requests_per_member_s']:.2f} requests and "
                        f"{got['cpu_us_per_member_s']:.0f} µs CPU per member per second; renewal p50 "
                        f"{got['p50_ms']:.1f} ms p99 {got['p99_ms']:.1f} ms; get behind it p50 "
                        f"{got['get_p50_ms']:.1f} ms p99 {got['get_p99_ms']:.1f} ms"
                    )
        finally:
            for client in clients:
                client.stop()
                client.close()
            ensemble.stop()

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in results[kind])

    print(
        f"release={args.release} members={args.members} "
        + " ".join(
            f"{kind}_cpu_us_per_member_s={median(kind, 'cpu_us_per_member_s'):.0f} {kind}_p99_ms={median(kind, 'p99_ms'):.1f} "
            f"{kind}_get_p99_ms={median(kind, 'get_p99_ms'):.1f}"
            for kind in ("sync", "check")
        )
        + f" loadavg={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
