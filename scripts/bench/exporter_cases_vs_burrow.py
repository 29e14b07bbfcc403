"""The operator review's cases (issue 53) on one real cluster, answered by Burrow 1.2.1 and by the exporter side by side: docs/operating.md's table, measured.

    .venv/bin/python scripts/bench/exporter_cases_vs_burrow.py --expire 60

Starts a local cluster (ZooKeeper + one broker), Burrow (`kafka_zk`, offset-refresh 2 s,
expire-group --expire seconds) and the exporter in this process (interval 2 s, the same expiry for
groups and retired topics), then makes one group per case:

- retired-topic: a member subscribed to `live` (owning and committing it every 2 s) with offsets
  left on `retired`, a topic nobody subscribes to;
- retired-group: one commit on `live`, no member, then nothing;
- no-commit: a member owning `nocommit-0` (10 messages) that never committed;
- past-end: a member owning `past-0` (10 messages) whose offset node says 1000;
- below-start: a member owning `below-0` (10 messages, the first 6 deleted) whose offset says 2;
- broker-down: one commit on `down` (offset 0 of 10), no member; the broker is killed later.

Three snapshots of what each tool says (status, total lag, each partition's status and lag; a
group Burrow no longer lists is "not listed"): after --settle seconds, --down seconds after the
broker was killed, and after --expire seconds from the first commits. The last line is key=value.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from harness.burrow import Burrow  # noqa: E402
from zkconsumer.exporter.exporter import Exporter  # noqa: E402
from zkconsumer.exporter.log_ends import LogEnds  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.kafka import produce_bulk  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402
from zkconsumer.zookeeper.client import close_quietly, connect  # noqa: E402

TOPICS = {"live": 2, "retired": 2, "nocommit": 1, "past": 1, "below": 1, "down": 1}
CASES = ("retired-topic", "retired-group", "no-commit", "past-end", "below-start", "broker-down")


def registration(topic: str) -> bytes:
    return json.dumps({"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}).encode()


def join(zk: Any, group: str, topic: str, partitions: int) -> None:
    """A member of `group` subscribed to `topic`, owning each of its partitions (ephemeral nodes)."""
    member = f"{group}_host-1"
    zk.create(znodes.member_path(group, member), registration(topic), ephemeral=True, makepath=True)
    for partition in range(partitions):
        zk.create(znodes.owner_path(group, topic, partition), f"{member}-0".encode(), ephemeral=True, makepath=True)


def commit(zk: Any, group: str, topic: str, partition: int, offset: int) -> None:
    path = znodes.offset_path(group, topic, partition)
    if zk.exists(path) is None:
        zk.create(path, str(offset).encode(), makepath=True)
    else:
        zk.set(path, str(offset).encode())


def burrow_says(burrow: Burrow, group: str) -> str:
    if group not in burrow.groups():
        return "not listed"
    answer = burrow.group_lag(group)
    status = answer.get("status") or {}
    if answer.get("error") or not status:
        return f"error: {answer.get('message')}"
    parts = ", ".join(
        f"{p['topic']}-{p['partition']} {p['status']} lag {p.get('current_lag')}"
        for p in sorted(status.get("partitions") or [], key=lambda p: (p["topic"], p["partition"]))
    )
    return f"{status.get('status')} totallag {status.get('totallag')} [{parts}]"


def exporter_says(exporter: Exporter, group: str) -> str:
    state = exporter.view.state
    if group in state.expired:
        return "expired (left out)"
    found = state.groups.get(group)
    if found is None:
        return "not listed"
    verdict = found.verdict
    parts = ", ".join(
        f"{t}-{p} {v.status.name} lag {v.lag}{' unseen' if v.unseen else ''}"
        f"{'' if v.ownership.name == 'OWNED' else ' ' + v.ownership.name.lower()}"
        for (t, p), v in sorted(verdict.partitions.items())
    )
    return f"{verdict.status.name} total_lag {verdict.total_lag} [{parts}]"


def snapshot(label: str, burrow: Burrow, exporter: Exporter) -> dict[str, tuple[str, str]]:
    rows = {case: (burrow_says(burrow, f"c-{case}"), exporter_says(exporter, f"c-{case}")) for case in CASES}
    print(f"## {label}", flush=True)
    for case, (b, e) in rows.items():
        print(f"{case}:\n  burrow:   {b}\n  exporter: {e}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--expire", type=int, default=60, help="Burrow's expire-group = the exporter's expiries (s)")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds before the first snapshot")
    parser.add_argument("--down", type=float, default=20.0, help="seconds after the kill for the second")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="exporter-cases-") as tmp,
        LocalCluster(brokers=1, chroot="/cases", workdir=Path(tmp) / "cluster") as cluster,
    ):
        for topic, partitions in TOPICS.items():
            cluster.create_topic(topic, partitions)
            produce_bulk(cluster.bootstrap_servers, topic, 10 * partitions, 10, partitions)
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        for future in admin.delete_records([TopicPartition("below", 0, 6)]).values():
            future.result(30)
        zk = connect(cluster.zookeeper_connect, session_timeout_s=30.0, connect_timeout_s=10.0)
        burrow = Burrow(
            cluster.zookeeper_connect, cluster.bootstrap_servers, Path(tmp) / "burrow",
            offset_refresh=2, expire_group=args.expire,
        )  # fmt: skip
        burrow.start()
        stop = threading.Event()
        client = connect(cluster.zookeeper_connect, session_timeout_s=30.0, connect_timeout_s=10.0)
        try:
            for topic, partitions in TOPICS.items():
                burrow.wait_for_topic(topic, partitions)  # Burrow drops commits made before it knows the log ends
            join(zk, "c-retired-topic", "live", 2)
            for partition in (0, 1):
                commit(zk, "c-retired-topic", "retired", partition, 5)
            commit(zk, "c-retired-group", "live", 0, 3)
            join(zk, "c-no-commit", "nocommit", 1)
            join(zk, "c-past-end", "past", 1)
            commit(zk, "c-past-end", "past", 0, 1000)
            join(zk, "c-below-start", "below", 1)
            commit(zk, "c-below-start", "below", 0, 2)
            commit(zk, "c-broker-down", "down", 0, 0)
            first_commits = time.monotonic()

            def keep_committing() -> None:  # the live member of retired-topic: caught up, committing
                while not stop.wait(2.0):
                    for partition in (0, 1):
                        commit(zk, "c-retired-topic", "live", partition, 10)

            committer = threading.Thread(target=keep_committing, name="cases-committer", daemon=True)
            committer.start()
            with LogEnds(cluster.bootstrap_servers, timeout_s=1.0) as ends:
                exporter = Exporter(
                    client, ends, host="127.0.0.1", port=0, interval_s=2.0, window_s=60.0,
                    retired_after_s=args.expire, expire_group_after_s=args.expire,
                )  # fmt: skip
                exporter.start()
                try:
                    time.sleep(args.settle)
                    before = snapshot(f"{args.settle:g} s after the commits", burrow, exporter)
                    cluster.brokers[0].kill()
                    time.sleep(args.down)
                    down = snapshot(f"{args.down:g} s after the broker was killed", burrow, exporter)
                    time.sleep(max(0.0, first_commits + args.expire + 10 - time.monotonic()))
                    late = snapshot(
                        f"{args.expire + 10} s after the first commits (expiry {args.expire} s)", burrow, exporter
                    )
                finally:
                    stop.set()
                    committer.join(10)
                    exporter.stop(10)
        finally:
            burrow.stop()
            close_quietly(client, 10)
            close_quietly(zk, 10)
    print("| Case | Burrow 1.2.1 (measured) | exporter (measured) |")
    print("|---|---|---|")
    for case in CASES:
        for label, rows in (("", before), ("broker killed: ", down), ("after expiry: ", late)):
            print(f"| {label}{case} | {rows[case][0]} | {rows[case][1]} |")
    listed = sum(1 for case in CASES if late[case][0] != "not listed")
    print(f"cases={len(CASES)} expire_s={args.expire} burrow_listed_at_end={listed}")


if __name__ == "__main__":
    main()
