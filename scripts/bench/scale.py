"""Large groups: convergence time and ZooKeeper requests per membership change, and while idle.

    .venv/bin/python scripts/bench/scale.py --cells 8x256,32x1024,64x4096

Per cell MxP: M members (ConsumerConnector, fetch=False, one stream each, range assignment,
default settings) in this one process, one topic of P partitions. The topic lives in a chroot of
its own with a copy of the broker's registration, so the broker creates no logs for it and the
members need nothing of Kafka. Converged = every partition owned exactly once by the thread
range assignment names for the members present: timed to the moment what each member says it owns
matches, then confirmed against the owner nodes (that read, P requests, is neither timed nor
counted; a failed confirmation waits for a later match). For each cell:
  initial   all M members started at once, until converged
  join      one more member started, until converged (median and max of --repeats)
  leave     that member shut down, until converged (likewise)
  requests  ZooKeeper requests per change, per member (server's zk_packets_received, less the
            observer's own requests, over the M+1 members; the joiner's and leaver's own included)
  idle      requests per member per second over --idle seconds of a converged group, from two
            watchdog intervals after converging (pings and the lease included; the watchdog checks
            once per zkconsumer.watchdog.interval.ms)
  cpu       CPU seconds of this process per member per change, the observer's thread excluded
  --by-kind also prints, per change, the members' requests per member by kind and znode folder
            (counted in this process as kazoo queues them; the observer's excluded)
The last line is machine-readable:
  cells=N worst_join_s= worst_leave_s= idle_zk_req_per_member_s= zk_req_per_change_per_member=
  cpu_s_per_member_per_change= loadavg=
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer import ConsumerConnector  # noqa: E402
from zkconsumer.coordinator.assignors import AssignmentInput, range_assign  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.probes import four_letter_word  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402

TOPIC = "scale"
KINDS: RequestKinds | None = None


class RequestKinds:
    """Counts the requests kazoo clients in this process queue, by request kind and znode folder."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.skip: set[int] = set()
        original = KazooClient._call
        counts, skip = self.counts, self.skip

        def counting_call(client: KazooClient, request: object, async_object: object) -> object:
            if id(client) not in skip:
                counts[self.kind(request)] += 1
            return original(client, request, async_object)

        KazooClient._call = counting_call  # type: ignore[method-assign]

    @staticmethod
    def kind(request: object) -> str:
        name = type(request).__name__
        path = getattr(request, "path", None)
        if not isinstance(path, str):
            return name
        parts = path.strip("/").split("/")  # the chroot comes first
        at = parts.index("consumers") if "consumers" in parts else -1
        # <chroot>/consumers/<group>/<folder>/...: name the folder and how deep below it the node is
        folder = f"{parts[at + 2]}{'/*' * (len(parts) - at - 3)}" if 0 <= at < len(parts) - 2 else "/".join(parts[1:3])
        return f"{name} {folder}"

    def snapshot(self) -> collections.Counter[str]:
        return collections.Counter(self.counts)


def packets_received(port: int) -> int:
    """The server's count of requests received (mntr)."""
    reply = four_letter_word(port, "mntr", timeout=10) or ""
    for line in reply.splitlines():
        name, _, value = line.partition("\t")
        if name == "zk_packets_received":
            return int(value)
    raise RuntimeError(f"no zk_packets_received in mntr: {reply[:200]!r}")


class Observer:
    """Judges convergence from what the members say they own (no request), then confirms it once
    against the owner nodes from its own session, counting those requests (they are not the members')."""

    def __init__(self, client: KazooClient, group: str, partitions: int) -> None:
        self.client, self.group, self.partitions = client, group, partitions
        self.requests = 0

    def expected(self, members: list[ConsumerConnector]) -> dict[str, dict[tuple[str, int], str]]:
        """consumer id -> what range assignment gives its one thread, for these members."""
        wanted = range_assign(
            AssignmentInput({TOPIC: [f"{m.consumer_id}-0" for m in members]}, {TOPIC: list(range(self.partitions))})
        )
        mine: dict[str, dict[tuple[str, int], str]] = {m.consumer_id: {} for m in members}
        for key, thread in wanted.items():
            mine[thread[: -len("-0")]][key] = thread
        return mine

    def reports_match(self, members: list[ConsumerConnector], expected: dict[str, dict[tuple[str, int], str]]) -> bool:
        # No request: this check shares the GIL with the members it times.
        return all(m.owned_partitions() == expected[m.consumer_id] for m in members)

    def nodes_confirm(self, expected: dict[str, dict[tuple[str, int], str]]) -> bool:
        wanted = {k: t for share in expected.values() for k, t in share.items()}
        folder = znodes.owners_path(self.group, TOPIC)
        answers = [(p, self.client.get_async(f"{folder}/{p}")) for p in range(self.partitions)]
        self.requests += self.partitions
        try:
            return all(a.get(timeout=30)[0].decode() == wanted[(TOPIC, p)] for p, a in answers)
        except Exception:  # noqa: BLE001 - a node went between the list and the read: not converged
            return False

    def wait(self, members: list[ConsumerConnector], timeout: float) -> tuple[float, float]:
        """Seconds until converged, and this process's CPU seconds by then less this thread's.

        Converged is when every member's report matches the assignment, confirmed right after by
        the owner nodes: a member reports a partition only once its owner node was created, and a
        node has one owner, so matching reports mean matching nodes; the read (P requests from one
        client, a noticeable share of the GIL at thousands of partitions) confirms it and is not
        counted in the time. A failed confirmation goes on waiting for a later match.
        """
        began, cpu_began, own_began = time.monotonic(), time.process_time(), time.thread_time()
        expected = self.expected(members)
        while time.monotonic() - began < timeout:
            if self.reports_match(members, expected):
                took = time.monotonic() - began
                cpu = time.process_time() - cpu_began - (time.thread_time() - own_began)
                if self.nodes_confirm(expected):
                    return took, cpu
            time.sleep(0.05)
        raise RuntimeError(f"group {self.group} did not converge within {timeout:.0f} s")


def start_members(config: dict[str, object], count: int) -> list[ConsumerConnector]:
    members = [ConsumerConnector(config, fetch=False) for _ in range(count)]
    threads = [
        threading.Thread(target=m.create_message_streams, args=({TOPIC: 1},), name=f"start-{i}")
        for i, m in enumerate(members)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return members


def stop_members(members: list[ConsumerConnector]) -> None:
    """All at once: one by one, every leave would make the rest rebalance again."""
    threads = [threading.Thread(target=m.shutdown, name=f"stop-{i}") for i, m in enumerate(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_cell(cluster: LocalCluster, members_n: int, partitions: int, args: argparse.Namespace) -> dict[str, float]:
    chroot = f"/scale-{members_n}x{partitions}-{int(time.time())}"
    group = f"scale-{members_n}x{partitions}"
    port = int(cluster.zookeeper.hosts.rsplit(":", 1)[1])
    root = KazooClient(hosts=cluster.zookeeper.hosts)
    root.start(timeout=30)
    observer_client = KazooClient(hosts=cluster.zookeeper.hosts + chroot)
    members: list[ConsumerConnector] = []
    try:
        source = cluster.zk_client()
        try:
            broker_id = sorted(source.get_children(znodes.BROKER_IDS))[0]
            registration, _ = source.get(f"{znodes.BROKER_IDS}/{broker_id}")
        finally:
            source.stop()
        root.create(f"{chroot}{znodes.BROKER_IDS}/{broker_id}", registration, makepath=True)
        layout = {str(p): [int(broker_id)] for p in range(partitions)}
        root.create(
            f"{chroot}{znodes.BROKER_TOPICS}/{TOPIC}",
            json.dumps({"version": 1, "partitions": layout}).encode(),
            makepath=True,
        )
        observer_client.start(timeout=30)
        if KINDS is not None:
            KINDS.skip.add(id(observer_client))
        observer = Observer(observer_client, group, partitions)
        config = {
            "zookeeper.connect": cluster.zookeeper.hosts + chroot,
            "group.id": group,
            "zookeeper.session.timeout.ms": args.session_ms,
            "zkconsumer.watchdog.interval.ms": args.watchdog_ms,
        }
        began = time.monotonic()
        members = start_members(config, members_n)
        initial = time.monotonic() - began + observer.wait(members, args.timeout)[0]
        # A check skipped because the change was still under way leaves the first reads (every owner
        # node, arming its watch) to the next one: two intervals cover both.
        time.sleep(args.settle + 2 * args.watchdog_ms / 1000.0)
        before, seen = packets_received(port), observer.requests
        time.sleep(args.idle)
        idle = (packets_received(port) - before - 1 - (observer.requests - seen)) / members_n / args.idle
        joins: list[float] = []
        leaves: list[float] = []
        requests: list[float] = []
        cpu: list[float] = []
        extra: ConsumerConnector | None = None
        for _ in range(args.repeats):
            for kind in ("join", "leave"):
                time.sleep(args.settle)
                before, seen = packets_received(port), observer.requests
                kinds_before = KINDS.snapshot() if KINDS is not None else None
                cpu_before = time.process_time()
                began = time.monotonic()
                if kind == "join":
                    extra = start_members(config, 1)[0]
                    present = members + [extra]
                else:
                    assert extra is not None
                    extra.shutdown()
                    present = members
                started = time.monotonic() - began  # the joiner's start or the leaver's shutdown call
                start_cpu = time.process_time() - cpu_before  # a shutdown runs in this thread: it counts
                waited, wait_cpu = observer.wait(present, args.timeout)
                took = started + waited
                (joins if kind == "join" else leaves).append(took)
                sent = packets_received(port) - before - 1 - (observer.requests - seen)
                requests.append(sent / (members_n + 1))
                if kinds_before is not None:
                    assert KINDS is not None
                    moved = KINDS.snapshot() - kinds_before
                    print(
                        f"  {kind}: " + ", ".join(f"{k} {n / (members_n + 1):.1f}" for k, n in moved.most_common()),
                        flush=True,
                    )
                cpu.append((start_cpu + wait_cpu) / (members_n + 1))
        row = {
            "members": members_n,
            "partitions": partitions,
            "initial_s": initial,
            "join_median_s": statistics.median(joins),
            "join_max_s": max(joins),
            "leave_median_s": statistics.median(leaves),
            "leave_max_s": max(leaves),
            "zk_req_per_change_per_member": statistics.median(requests),
            "idle_zk_req_per_member_s": idle,
            "cpu_s_per_member_per_change": statistics.median(cpu),
        }
        print(
            f"{members_n:>3} x {partitions:<5} initial {initial:6.2f} s   join {row['join_median_s']:6.2f} s "
            f"(max {row['join_max_s']:.2f})   leave {row['leave_median_s']:6.2f} s (max {row['leave_max_s']:.2f})   "
            f"requests/change/member {row['zk_req_per_change_per_member']:8.1f}   idle requests/member/s "
            f"{idle:6.2f}   cpu/member/change {row['cpu_s_per_member_per_change']:.3f} s",
            flush=True,
        )
        return row
    finally:
        stop_members(members)
        observer_client.stop()
        if KINDS is not None:
            KINDS.skip.discard(id(observer_client))
        root.delete(chroot, recursive=True)
        root.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", default="8x256,32x1024", help="MxP,... (members x partitions)")
    parser.add_argument("--repeats", type=int, default=3, help="joins and leaves per cell")
    parser.add_argument("--idle", type=float, default=12.0, help="seconds of idle traffic measured")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before each measurement")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--watchdog-ms", type=int, default=10000)
    parser.add_argument("--timeout", type=float, default=300.0, help="longest wait for convergence")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--by-kind", action="store_true", help="print the members' requests by kind per change")
    args = parser.parse_args()
    global KINDS
    KINDS = RequestKinds() if args.by_kind else None
    logging.basicConfig(level=logging.ERROR, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cells = [tuple(int(x) for x in cell.split("x")) for cell in args.cells.split(",")]
    with LocalCluster(workdir=Path(args.workdir) if args.workdir else None) as cluster:
        rows = [run_cell(cluster, m, p, args) for m, p in cells]
    print(
        f"cells={len(rows)} worst_join_s={max(r['join_max_s'] for r in rows):.2f} "
        f"worst_leave_s={max(r['leave_max_s'] for r in rows):.2f} "
        f"idle_zk_req_per_member_s={max(r['idle_zk_req_per_member_s'] for r in rows):.2f} "
        f"zk_req_per_change_per_member={max(r['zk_req_per_change_per_member'] for r in rows):.1f} "
        f"cpu_s_per_member_per_change={max(r['cpu_s_per_member_per_change'] for r in rows):.3f} "
        f"loadavg={os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
