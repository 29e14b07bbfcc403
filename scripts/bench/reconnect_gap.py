"""The delivery gap a same-session reconnect costs a member: from kazoo's CONNECTED to the gate reopening.

    .venv/bin/python scripts/bench/reconnect_gap.py --rounds 20 --partitions 64

After a reconnect in the same session the member delivers nothing until a rebalance's reconcile
step has read its owner nodes afresh (issue 51, finding 2; docs/design.md, "The session state
machine"). This starts a standalone ZooKeeper server (a child JVM), registers one broker and a
topic of --partitions partitions by hand (the member reads only ZooKeeper: fetch=False, so no Kafka
is needed), lets one member own them all, then drops its connection --rounds times (the socket
shut down under kazoo, which reconnects at once in the same session) and reports per round the
hold the member measured (`Membership.reread_gap_s`) and the wall time from the drop to delivery
again. Last line: gap_median_ms= gap_max_ms= drop_to_delivery_median_ms= rounds= partitions= loadavg=
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer import ConsumerConnector  # noqa: E402
from zkconsumer.cluster.broker_nodes import BrokerInfo, encode_broker, encode_topic_partitions  # noqa: E402
from zkconsumer.testing.nodes import ZooKeeperNode  # noqa: E402
from zkconsumer.zookeeper import znodes  # noqa: E402
from zkconsumer.zookeeper.client import connect  # noqa: E402

TOPIC = "gap"


def wait_for(what: str, done, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.001)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zk-gap-") as tmp:
        server = ZooKeeperNode(Path(tmp))
        server.start()
        admin = connect(server.hosts, session_timeout_s=30.0, connect_timeout_s=10.0)
        conn = None
        try:
            broker = BrokerInfo(0, "127.0.0.1", 9, ("PLAINTEXT://127.0.0.1:9",), None, 4, timestamp="0")
            admin.create(znodes.broker_path(0), encode_broker(broker), makepath=True, ephemeral=True)
            partitions = encode_topic_partitions({p: [0] for p in range(args.partitions)})
            admin.create(znodes.topic_path(TOPIC), partitions, makepath=True)
            conn = ConsumerConnector(
                {"zookeeper.connect": server.hosts, "group.id": "gap", "auto.commit.enable": "false"}, fetch=False
            )
            conn.create_message_streams({TOPIC: 1})
            wait_for("the member to own every partition", lambda: len(conn.owned_partitions()) == args.partitions)
            gaps, walls = [], []
            for round_no in range(1, args.rounds + 1):
                before = conn.membership.reconnects
                dropped = time.monotonic()
                conn._zk._connection._socket.shutdown(socket.SHUT_RDWR)  # kazoo reconnects, same session
                wait_for("the reconnect", lambda: conn.membership.reconnects > before)  # noqa: B023
                wait_for("delivery again", conn.ownership_confirmed)
                wall = time.monotonic() - dropped
                gap = conn.membership.reread_gap_s or 0.0
                gaps.append(gap)
                walls.append(wall)
                print(
                    f"round {round_no}: held {gap * 1000:.1f} ms after the reconnect; {wall * 1000:.1f} ms drop to delivery"
                )
                assert len(conn.owned_partitions()) == args.partitions, (
                    "a reconnect in the same session lost partitions"
                )
                time.sleep(0.2)
            load = os.getloadavg()[0]
            print(
                f"gap_median_ms={statistics.median(gaps) * 1000:.1f} gap_max_ms={max(gaps) * 1000:.1f} "
                f"drop_to_delivery_median_ms={statistics.median(walls) * 1000:.1f} rounds={args.rounds} "
                f"partitions={args.partitions} loadavg={load:.2f}"
            )
        finally:
            if conn is not None:
                conn.shutdown()
            admin.stop()
            admin.close()
            server.stop()


if __name__ == "__main__":
    main()
