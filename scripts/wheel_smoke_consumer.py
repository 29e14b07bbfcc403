"""Run by scripts/wheel_smoke.sh in a fresh venv holding only the built wheel: produce N, consume all N, commit."""

from __future__ import annotations

import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

import zkconsumer
from zkconsumer import ConsumerConnector, ConsumerTimeout

TOPIC, GROUP, PARTITIONS = "wheel-smoke", "wheel-smoke-group", 3


def main(zookeeper: str, bootstrap: str, count: int, venv: str) -> int:
    if not zkconsumer.__file__.startswith(venv):
        raise SystemExit(f"imported zkconsumer from {zkconsumer.__file__}, not from the wheel in {venv}")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(TOPIC, f"message-{i}".encode(), partition=i % PARTITIONS)
    if producer.flush(60):
        raise SystemExit("produce: messages still unsent after 60 s")
    print(f"produced {count} to {TOPIC}")

    config = {
        "zookeeper.connect": zookeeper,
        "group.id": GROUP,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 1000,
        "auto.commit.enable": False,
    }
    got: set[bytes] = set()
    conn = ConsumerConnector(config)
    try:
        stream = conn.create_message_streams({TOPIC: 1})[TOPIC][0]
        deadline = time.monotonic() + 120
        while len(got) < count and time.monotonic() < deadline:
            try:
                for msg in stream:
                    got.add(msg.value())
                    if len(got) == count:
                        break
            except ConsumerTimeout:
                pass
        conn.commit_offsets()
    finally:
        unwritten = conn.shutdown()
    if len(got) != count or unwritten:
        raise SystemExit(f"consumed {len(got)} of {count} distinct messages; offsets not committed: {unwritten}")

    zk = KazooClient(hosts=zookeeper)
    zk.start(30)
    try:
        committed = sum(int(zk.get(f"/consumers/{GROUP}/offsets/{TOPIC}/{p}")[0]) for p in range(PARTITIONS))
    finally:
        zk.stop()
    if committed != count:
        raise SystemExit(f"consumed {count}, but the committed offsets in ZooKeeper add up to {committed}")
    print(
        f"consumed {count} with zkconsumer {zkconsumer.__version__} from {zkconsumer.__file__}; committed {committed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
