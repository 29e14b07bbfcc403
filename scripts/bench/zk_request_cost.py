"""CPU cost of one ZooKeeper request in this Python process (kazoo, our poll(2) handler), by request kind.

    .venv/bin/python scripts/bench/zk_request_cost.py --requests 20000

Starts a standalone ZooKeeper server (a child JVM, so its CPU is not counted), connects the way a
member does (`zookeeper.client.connect`), and times --requests requests of each kind, pipelined the way the
membership code issues them (`*_async`, then waiting for every result), plus one kind issued one
at a time (a blocking `get`). Reported per request: CPU seconds of this process (every thread:
the caller, kazoo's connection thread and its callbacks) and wall time. What a membership change
costs a member in CPU is at least its request count times these figures, which bounds how fast
M members in one process can converge (issue #18).
Last line: get_cpu_us= get_sync_cpu_us= exists_watch_cpu_us= create_cpu_us= set_cpu_us= delete_cpu_us=
children_cpu_us= loadavg=
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer.testing.nodes import ZooKeeperNode  # noqa: E402
from zkconsumer.zookeeper.client import connect  # noqa: E402


def timed(count: int, run: Callable[[], None]) -> tuple[float, float]:
    """(CPU µs, wall µs) per request of `run`, which issues `count` requests and waits for all."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return (time.process_time() - cpu) / count * 1e6, (time.perf_counter() - wall) / count * 1e6


def pipelined(calls: list[Callable[[], Any]]) -> Callable[[], None]:
    def run() -> None:
        for result in [call() for call in calls]:
            result.get(timeout=60)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    n = args.requests
    with tempfile.TemporaryDirectory(prefix="zk-cost-") as tmp:
        server = ZooKeeperNode(Path(tmp))
        server.start()
        client = None
        try:
            client = connect(server.hosts, session_timeout_s=30.0, connect_timeout_s=10.0)
            client.ensure_path("/cost")
            paths = [f"/cost/n{i:07d}" for i in range(n)]
            data = b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"0"}'
            results: dict[str, tuple[float, float]] = {}
            results["create"] = timed(n, pipelined([lambda p=p: client.create_async(p, data) for p in paths]))
            results["get"] = timed(n, pipelined([lambda p=p: client.get_async(p) for p in paths]))
            results["exists_watch"] = timed(
                n, pipelined([lambda p=p: client.exists_async(p, watch=lambda _e: None) for p in paths])
            )
            results["set"] = timed(n, pipelined([lambda p=p: client.set_async(p, data) for p in paths]))
            sync_n = max(1, n // 4)

            def sync_gets() -> None:
                for p in paths[:sync_n]:
                    client.get(p)

            results["get_sync"] = timed(sync_n, sync_gets)
            children_n = max(1, n // 100)
            results["children"] = timed(
                children_n, pipelined([lambda: client.get_children_async("/cost") for _ in range(children_n)])
            )
            results["delete"] = timed(n, pipelined([lambda p=p: client.delete_async(p) for p in paths]))
        finally:
            if client is not None:
                client.stop()
                client.close()
            server.stop()
    for kind, (cpu, wall) in results.items():
        note = f" (a folder of {n} children)" if kind == "children" else ""
        print(f"{kind:>13}: {cpu:8.1f} µs CPU, {wall:8.1f} µs wall per request{note}")
    print(" ".join(f"{k}_cpu_us={v[0]:.1f}" for k, v in results.items()) + f" loadavg={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
