"""`zkconsumer exporter` beside Burrow 1.2.1 on one ZooKeeper: requests per second, time from a commit to its lag, memory.

    .venv/bin/python scripts/bench/exporter_vs_burrow.py --groups 1000 --partitions 100 --freshness 5 --rounds 5

Starts a local cluster (ZooKeeper + one Kafka broker, from the jars), one topic of --partitions
partitions with 10 messages each, then Burrow (its `kafka_zk` module, offset-refresh --freshness)
and, once Burrow knows the topic's log ends, writes committed offsets of every partition for
--groups groups (a script, no consumers). Then the exporter, as `zkconsumer exporter` in its own
process (--interval --freshness, --window). Both are separate processes, measured alike:

- ZooKeeper requests per second of each: ZooKeeper's `cons` command lists every connection with
  the packets it received (pings included); a tool's connections are those that appeared when it
  started. Measured over --seconds while a writer commits --commits-per-s offsets a second to
  random partitions of random groups (the same commits for both: they run at the same time);
- time from a commit to the new lag in each tool's output (the exporter's /v1/groups/G/partitions,
  Burrow's /v3/kafka/local/consumer/G/lag), --probes commits per tool per round, the tools taking
  turns (which goes first alternates by round);
- resident memory (VmRSS, and the peak VmHWM) of each process after each round.

One line per round, then the medians; the last line is machine-readable key=value.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from exporter_load import TOPIC, write_offsets  # noqa: E402

from harness.burrow import Burrow  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.kafka import produce_bulk  # noqa: E402
from zkconsumer.testing.probes import free_port  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402
from zkconsumer.zookeeper.client import close_quietly, connect  # noqa: E402

CONS_LINE = re.compile(r"\((?:[^)]*,)?recved=(\d+),[^)]*sid=(0x[0-9a-f]+)")


def four_letter(host: str, port: int, command: str) -> str:
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(command.encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def received(host: str, port: int) -> dict[str, int]:
    """session id -> packets ZooKeeper received on it (`cons`)."""
    return {sid: int(count) for count, sid in CONS_LINE.findall(four_letter(host, port, "cons"))}


def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:g} s")
        time.sleep(0.5)


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def exporter_offset(port: int, group: str, partition: int) -> int | None:
    doc = get_json(f"http://127.0.0.1:{port}/v1/groups/{group}/partitions")
    row = next((p for p in doc.get("partitions", []) if p["topic"] == TOPIC and p["partition"] == partition), None)
    return None if row is None or row["lag"] is None else row["current_offset"]


def burrow_offset(burrow: Burrow, group: str, partition: int) -> int | None:
    status = burrow.group_lag(group).get("status") or {}
    for p in status.get("partitions") or []:
        if p["topic"] == TOPIC and p["partition"] == partition:
            return int((p.get("end") or {}).get("offset", -1))
    return None


def commit_to_lag(
    writer: Any, read: Callable[[str, int], int | None], groups: int, partitions: int, rng: random.Random
) -> float:
    """Commit a new offset to a random partition and time until `read` shows it (seconds)."""
    group, partition = f"load-{rng.randrange(groups)}", rng.randrange(partitions)
    path = znodes.offset_path(group, TOPIC, partition)
    now = int(writer.get(path)[0])
    value = (now + 1 + rng.randrange(9)) % 10  # another offset within the log (10 messages each)
    writer.set(path, str(value).encode())
    began = time.monotonic()
    while time.monotonic() - began < 120:
        if read(group, partition) == value:
            return time.monotonic() - began
        time.sleep(0.1)
    raise TimeoutError(f"{path} = {value} not shown within 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--freshness", type=int, default=5, help="exporter --interval = Burrow offset-refresh (s)")
    parser.add_argument("--window", type=float, default=60.0, help="the exporter's --window")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0, help="each round's requests measurement")
    parser.add_argument("--commits-per-s", type=float, default=10.0)
    parser.add_argument("--probes", type=int, default=3, help="commits timed per tool per round")
    args = parser.parse_args()
    rng = random.Random(7)
    with (
        tempfile.TemporaryDirectory(prefix="exporter-vs-burrow-") as tmp,
        LocalCluster(brokers=1, chroot="/bench", workdir=Path(tmp) / "cluster") as cluster,
    ):
        zk_host, zk_port = cluster.zookeeper_hosts.split(",")[0].rsplit(":", 1)

        def sids() -> set[str]:
            return set(received(zk_host, int(zk_port)))

        cluster.create_topic(TOPIC, args.partitions)
        produce_bulk(cluster.bootstrap_servers, TOPIC, 10 * args.partitions, 100, args.partitions)
        writer = connect(cluster.zookeeper_connect, session_timeout_s=30.0, connect_timeout_s=10.0)
        before = sids()
        burrow = Burrow(
            cluster.zookeeper_connect, cluster.bootstrap_servers, Path(tmp) / "burrow", offset_refresh=args.freshness
        )
        burrow.start()
        exporter: subprocess.Popen[bytes] | None = None
        try:
            burrow.wait_for_topic(TOPIC, args.partitions)
            burrow_sids = sids() - before
            began = time.monotonic()
            write_offsets(writer, args.groups, args.partitions)
            until(lambda: len(burrow.groups()) >= args.groups, 900, f"Burrow listing {args.groups} groups")
            burrow_ready = time.monotonic() - began
            port, before = free_port(), sids()
            began = time.monotonic()
            exporter = subprocess.Popen(
                [sys.executable, "-c", "import sys; from zkconsumer.cli.main import main; sys.exit(main())",
                 "exporter", "--zookeeper", cluster.zookeeper_connect, "--bootstrap-server", cluster.bootstrap_servers,
                 "--listen", f"127.0.0.1:{port}", "--interval", str(args.freshness), "--window", str(args.window)],
                env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.DEVNULL,
            )  # fmt: skip

            def exporter_ready() -> bool:
                try:
                    return bool(len(get_json(f"http://127.0.0.1:{port}/v1/groups")["groups"]) >= args.groups)
                except OSError:
                    return False

            until(exporter_ready, 900, f"the exporter listing {args.groups} groups")
            exporter_first = time.monotonic() - began
            exporter_sids = sids() - before - burrow_sids
            print(f"# ready: burrow {burrow_ready:.1f} s after the offsets were written (sessions {sorted(burrow_sids)}), "
                  f"exporter {exporter_first:.1f} s after its start (sessions {sorted(exporter_sids)})", flush=True)  # fmt: skip
            time.sleep(2 * args.freshness)  # both past their first full read
            readers: dict[str, Callable[[str, int], int | None]] = {
                "exporter": lambda g, p: exporter_offset(port, g, p),
                "burrow": lambda g, p: burrow_offset(burrow, g, p),
            }
            rows: list[dict[str, float]] = []
            for round_no in range(1, args.rounds + 1):
                rps = requests_per_s(zk_host, int(zk_port), {"exporter": exporter_sids, "burrow": burrow_sids},
                                     writer, args, rng)  # fmt: skip
                order = ["exporter", "burrow"] if round_no % 2 else ["burrow", "exporter"]
                lags: dict[str, list[float]] = {name: [] for name in order}
                for _ in range(args.probes):
                    for name in order:
                        lags[name].append(commit_to_lag(writer, readers[name], args.groups, args.partitions, rng))
                e_rss, e_hwm = rss_mb(exporter.pid)
                b_rss, b_hwm = rss_mb(burrow.process.pid or 0)
                row = {
                    "exporter_zk_rps": rps["exporter"], "burrow_zk_rps": rps["burrow"],
                    "exporter_lag_s": statistics.median(lags["exporter"]), "burrow_lag_s": statistics.median(lags["burrow"]),
                    "exporter_lag_max_s": max(lags["exporter"]), "burrow_lag_max_s": max(lags["burrow"]),
                    "exporter_rss_mb": e_rss, "burrow_rss_mb": b_rss, "exporter_hwm_mb": e_hwm, "burrow_hwm_mb": b_hwm,
                    "loadavg": os.getloadavg()[0],
                }  # fmt: skip
                rows.append(row)
                print(f"round {round_no} (first: {order[0]}): " + " ".join(f"{k}={v:.2f}" for k, v in row.items())
                      + f" lag_probes={json.dumps({k: [round(x, 2) for x in v] for k, v in lags.items()})}", flush=True)  # fmt: skip
        finally:
            if exporter is not None:
                exporter.terminate()
                exporter.wait(30)
            burrow.stop()
            close_quietly(writer, 10)
    medians = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    print(
        f"groups={args.groups} partitions={args.partitions} freshness_s={args.freshness} rounds={args.rounds} "
        f"commits_per_s={args.commits_per_s:g} cores={os.cpu_count()} burrow_ready_s={burrow_ready:.1f} "
        f"exporter_first_s={exporter_first:.1f} " + " ".join(f"{k}={v:.2f}" for k, v in medians.items())
    )


def requests_per_s(
    host: str, port: int, tools: dict[str, set[str]], writer: Any, args: argparse.Namespace, rng: random.Random
) -> dict[str, float]:
    """Each tool's packets to ZooKeeper a second over --seconds while a writer commits."""
    stop = threading.Event()

    def commit() -> None:
        while not stop.wait(1.0 / args.commits_per_s):
            g, p = rng.randrange(args.groups), rng.randrange(args.partitions)
            writer.set(znodes.offset_path(f"load-{g}", TOPIC, p), str(rng.randrange(10)).encode())

    committer = threading.Thread(target=commit, name="bench-committer", daemon=True)
    first, began = received(host, port), time.monotonic()
    committer.start()
    time.sleep(args.seconds)
    last, spent = received(host, port), time.monotonic() - began
    stop.set()
    committer.join(10)
    return {name: sum(last.get(sid, 0) - first.get(sid, 0) for sid in sids) / spent for name, sids in tools.items()}


if __name__ == "__main__":
    main()
