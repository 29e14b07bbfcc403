"""What `zkconsumer exporter` costs: ZooKeeper requests per second at steady state, refresh and scrape time, memory.

    .venv/bin/python scripts/bench/exporter_load.py --groups 100 --partitions 100 --commits-per-s 50

Starts a local cluster (ZooKeeper + one Kafka broker, from the jars), creates one topic of
--partitions partitions with 10 messages in each, and writes committed offsets for --groups groups
of every partition (a script, no consumers: every partition is unowned, every group has lag). Runs
the exporter in this process (the real Exporter, LogEnds and HTTP server, --interval, --window),
then measures:

- the first refresh (everything read once), then the refreshes' duration at steady state;
- ZooKeeper requests per second the exporter makes (its own counter) for --seconds while nothing
  changes, then while a writer commits --commits-per-s offsets a second to random partitions;
- GET /metrics: wall time over --scrapes scrapes (median and max), size and series; then as
  Prometheus asks for it (Accept-Encoding: gzip), median and size;
- this process's peak RSS (rss_mb; the offsets' writer and the scrapes' client included), its
  RSS once the offsets are written, before the exporter starts (rss_writer_mb: the interpreter,
  its libraries and the writer, not the exporter's), and its RSS after the scrapes (rss_now_mb).

Last line: groups= partitions= series= first_refresh_s= refresh_s= (the last refresh's duration)
refresh_max_s= (the longer of the refreshes after each steady-state measurement) idle_zk_rps= commits_per_s=
(made, at most --commits-per-s) busy_zk_rps= scrape_median_s= scrape_max_s= metrics_bytes=
gzip_scrape_median_s= gzip_bytes= rss_mb=
rss_writer_mb= rss_now_mb= loadavg=
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer.exporter.exporter import Exporter  # noqa: E402
from zkconsumer.exporter.log_ends import LogEnds  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.kafka import produce_bulk  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402
from zkconsumer.zookeeper.client import close_quietly, connect  # noqa: E402

TOPIC = "load"


def write_offsets(client: object, groups: int, partitions: int) -> None:
    """Every group's offset node of every partition, pipelined (ensure_path once per folder)."""
    pending = []
    for g in range(groups):
        client.ensure_path(znodes.offsets_path(f"load-{g}", TOPIC))  # type: ignore[attr-defined]
        for p in range(partitions):
            path = znodes.offset_path(f"load-{g}", TOPIC, p)
            pending.append(client.create_async(path, str(p % 10).encode()))  # type: ignore[attr-defined]
        if len(pending) > 5000:
            for result in pending:
                result.get(timeout=60)
            pending = []
    for result in pending:
        result.get(timeout=60)


def _rss_now_mb() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def requests_per_s(exporter: Exporter, seconds: float) -> float:
    before, began = exporter.health().zookeeper_requests, time.monotonic()
    time.sleep(seconds)
    return (exporter.health().zookeeper_requests - before) / (time.monotonic() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--seconds", type=float, default=30.0, help="each steady-state measurement")
    parser.add_argument("--commits-per-s", type=float, default=50.0)
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="exporter-load-") as tmp,
        LocalCluster(brokers=1, chroot="/load", workdir=Path(tmp) / "cluster") as cluster,
    ):
        cluster.create_topic(TOPIC, args.partitions)
        produce_bulk(cluster.bootstrap_servers, TOPIC, 10 * args.partitions, 100, args.partitions)
        writer = connect(cluster.zookeeper_connect, session_timeout_s=30.0, connect_timeout_s=10.0)
        client = connect(cluster.zookeeper_connect, session_timeout_s=30.0, connect_timeout_s=10.0)
        write_offsets(writer, args.groups, args.partitions)
        rss_writer = _rss_now_mb()
        with LogEnds(cluster.bootstrap_servers) as ends:
            exporter = Exporter(client, ends, host="127.0.0.1", port=0, interval_s=args.interval, window_s=args.window)
            began = time.monotonic()
            exporter.start()
            try:
                exporter.wait_for_refresh(0, timeout_s=600)
                first = time.monotonic() - began
                time.sleep(args.interval)  # the watches of the first read are armed
                idle = requests_per_s(exporter, args.seconds)
                refreshes = [exporter.health().refresh_seconds]
                stop = threading.Event()
                made = [0]

                def commit() -> None:
                    rng = random.Random(1)
                    while not stop.wait(1.0 / args.commits_per_s):
                        g, p = rng.randrange(args.groups), rng.randrange(args.partitions)
                        writer.set(znodes.offset_path(f"load-{g}", TOPIC, p), str(rng.randrange(10)).encode())
                        made[0] += 1

                committer = threading.Thread(target=commit, name="load-committer", daemon=True)
                committer.start()
                busy_began = time.monotonic()
                busy = requests_per_s(exporter, args.seconds)
                stop.set()
                commits_made = made[0] / (time.monotonic() - busy_began)
                committer.join(10)
                refresh = exporter.health().refresh_seconds
                refreshes.append(refresh)
                times, size = [], 0
                for _ in range(args.scrapes):
                    t0 = time.perf_counter()
                    with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=60) as r:
                        body = r.read()
                    times.append(time.perf_counter() - t0)
                    size = len(body)
                zipped = []
                for _ in range(args.scrapes):
                    request = urllib.request.Request(
                        f"http://127.0.0.1:{exporter.port}/metrics", headers={"Accept-Encoding": "gzip"}
                    )
                    t0 = time.perf_counter()
                    with urllib.request.urlopen(request, timeout=60) as r:
                        gzip_size = len(r.read())
                    zipped.append(time.perf_counter() - t0)
                series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
                del body
                rss_now = _rss_now_mb()
                rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the cluster's teardown
            finally:
                exporter.stop(timeout_s=30)
                close_quietly(client, 10)
                close_quietly(writer, 10)
    print(
        f"groups={args.groups} partitions={args.partitions} series={series} first_refresh_s={first:.2f} "
        f"refresh_s={refresh:.2f} refresh_max_s={max(refreshes):.2f} idle_zk_rps={idle:.2f} commits_per_s={commits_made:.1f} busy_zk_rps={busy:.1f} "
        f"scrape_median_s={statistics.median(times):.4f} scrape_max_s={max(times):.4f} metrics_bytes={size} "
        f"gzip_scrape_median_s={statistics.median(zipped):.4f} gzip_bytes={gzip_size} "
        f"rss_mb={rss_mb:.0f} rss_writer_mb={rss_writer:.0f} rss_now_mb={rss_now:.0f} loadavg={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
