"""ZooKeeper coordination against broker coordination: the same ConsumerConnector code, side by side, alternated.

    .venv/bin/python scripts/bench/coordination.py [--messages 1000000] [--rate 2000] [--seconds 10] [--rounds 3]

One local cluster (ZooKeeper + one Kafka 3.9.1 broker). Per round, each contender in turn (the order
alternates from round to round: the machine's speed drifts, so neighbours compare):
  zookeeper  ConsumerConnector with the defaults (zkconsumer.coordination=zookeeper)
  broker     the same with zkconsumer.coordination=broker (the brokers' group coordinator)
and for each, two measures with one stream drained by `for msg in stream`, touching every value:
  throughput  a fresh group reads --messages 100-byte messages of an 8-partition topic produced
              beforehand, from offset 0: messages / (time of the last - time of the first)
  latency     a fresh group reads a fresh 8-partition topic from its end while a producer (a process
              of its own, this script with --producer) writes --rate msg/s for --seconds, each value
              holding its send time (CLOCK_MONOTONIC, one machine); latency = time next() returned
              it - its send time (the producer's own delay is in both contenders alike; it connects
              and has one warm-up message acknowledged before it starts the clock)
A warm-up round (--warmup, default 1: the broker's JVM compiles its hot paths in the first minute,
and the first contender would pay for it) runs both contenders first, printed, not counted. Each
round prints both contenders' figures and the load average; then the medians. The last line:
    zk_msgs_per_s= broker_msgs_per_s= throughput_ratio=<broker/zk> zk_p50_ms= zk_p99_ms=
    broker_p50_ms= broker_p99_ms= p99_ratio=<broker/zk> rounds= loadavg=
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from zkconsumer import ConsumerConnector, ConsumerTimeout  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, LocalCluster  # noqa: E402

PARTITIONS = 8
SIZE = 100
CONTENDERS = ("zookeeper", "broker")


def connector(cluster: LocalCluster, coordination: str, group: str, reset: str) -> ConsumerConnector:
    return ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group,
            "auto.offset.reset": reset,
            "consumer.timeout.ms": 200,
            "zkconsumer.coordination": coordination,
        }
    )


def throughput(cluster: LocalCluster, coordination: str, topic: str, messages: int) -> float:
    conn = connector(cluster, coordination, f"bench-{uuid.uuid4().hex[:8]}", "smallest")
    try:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        seen, first, last = 0, 0.0, 0.0
        deadline = time.monotonic() + 120 + messages / 20_000
        while seen < messages:
            try:
                for msg in stream:
                    msg.value()
                    seen += 1
                    if seen == 1:
                        first = time.perf_counter()
                    if seen == messages:
                        last = time.perf_counter()
                        break
            except ConsumerTimeout:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{coordination}: {seen} of {messages} messages within the time allowed") from None
        return (messages - 1) / (last - first) if last > first else float("inf")
    finally:
        conn.shutdown()


def latency(cluster: LocalCluster, coordination: str, rate: int, seconds: float) -> list[float]:
    topic = f"lat-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, PARTITIONS)
    conn = connector(cluster, coordination, f"bench-{uuid.uuid4().hex[:8]}", "largest")
    try:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        deadline = time.monotonic() + 30
        while len(conn.owned_partitions()) < PARTITIONS:
            if time.monotonic() > deadline:
                raise SystemExit(f"{coordination}: owns {len(conn.owned_partitions())} of {PARTITIONS} partitions")
            time.sleep(0.05)
        _drain_for(stream, 1.0)  # settle: the fetcher is at the end of every partition
        total = int(rate * seconds)
        producer = subprocess.Popen(
            [sys.executable, __file__, "--producer", cluster.bootstrap_servers, topic, str(rate), str(total)]
        )
        lags: list[float] = []
        end = time.monotonic() + seconds + 30
        try:
            while len(lags) < total and time.monotonic() < end:
                try:
                    for msg in stream:
                        sent = struct.unpack_from(">q", msg.value() or b"")[0]
                        if sent == 0:
                            continue  # the producer's warm-up message
                        lags.append((time.monotonic_ns() - sent) / 1e6)
                        if len(lags) >= total:
                            break
                except ConsumerTimeout:
                    continue
        finally:
            if producer.wait(timeout=seconds + 60) != 0:
                raise SystemExit(f"the producer failed (exit {producer.returncode})")
        if len(lags) < total:
            raise SystemExit(f"{coordination}: {len(lags)} of {total} messages delivered")
        return lags
    finally:
        conn.shutdown()


def _drain_for(stream, seconds: float) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            for _ in stream:
                pass
        except ConsumerTimeout:
            continue


def produce_timed(bootstrap: str, topic: str, rate: int, total: int) -> None:
    """The --producer process: `total` messages at `rate` msg/s, round-robin, each value its send time."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "all"})
    # connected and warm before the clock counts: a first message whose send time is 0 (not measured)
    producer.produce(topic, struct.pack(">q", 0) + b"x" * (SIZE - 8), partition=0)
    if producer.flush(30) != 0:
        raise SystemExit("the warm-up message was not acknowledged")
    start = time.monotonic()
    pad = b"x" * (SIZE - 8)
    for i in range(total):
        due = start + i / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        producer.produce(topic, struct.pack(">q", time.monotonic_ns()) + pad, partition=i % PARTITIONS)
        producer.poll(0)
    if producer.flush(30) != 0:
        raise SystemExit("messages left unacknowledged")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--producer":
        bootstrap, topic, rate, total = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        produce_timed(bootstrap, topic, rate, total)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and not counted")
    args = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {c: {"tput": [], "p50": [], "p99": []} for c in CONTENDERS}
    with (
        tempfile.TemporaryDirectory(prefix="coordination-bench-") as tmp,
        LocalCluster(brokers=1, chroot="/coordination", jvm_opts=SERVER_JVM_OPTS, workdir=Path(tmp)) as cluster,
    ):
        topic = "tput"
        cluster.create_topic(topic, PARTITIONS)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, args.messages, partitions=PARTITIONS, value_size=SIZE)
        for r in range(-args.warmup, args.rounds):
            order = CONTENDERS if r % 2 == 0 else CONTENDERS[::-1]
            for name in order:
                load = os.getloadavg()[0]
                tput = throughput(cluster, name, topic, args.messages)
                lags = latency(cluster, name, args.rate, args.seconds)
                p50, p99 = percentile(lags, 0.5), percentile(lags, 0.99)
                if r >= 0:
                    results[name]["tput"].append(tput)
                    results[name]["p50"].append(p50)
                    results[name]["p99"].append(p99)
                label = f"round {r + 1}" if r >= 0 else "warm-up"
                print(
                    f"{label} {name:9s} {tput:10.0f} msg/s  latency p50 {p50:7.2f} ms  p99 {p99:7.2f} ms"
                    f"  (load {load:.2f} at its start)",
                    flush=True,
                )
    med = {c: {k: statistics.median(v) for k, v in results[c].items()} for c in CONTENDERS}
    for c in CONTENDERS:
        print(
            f"median    {c:9s} {med[c]['tput']:10.0f} msg/s  latency p50 {med[c]['p50']:7.2f} ms  p99 {med[c]['p99']:7.2f} ms"
        )
    zk, br = med["zookeeper"], med["broker"]
    print(
        f"zk_msgs_per_s={zk['tput']:.0f} broker_msgs_per_s={br['tput']:.0f} throughput_ratio={br['tput'] / zk['tput']:.3f} "
        f"zk_p50_ms={zk['p50']:.2f} zk_p99_ms={zk['p99']:.2f} broker_p50_ms={br['p50']:.2f} broker_p99_ms={br['p99']:.2f} "
        f"p99_ratio={br['p99'] / zk['p99']:.3f} rounds={args.rounds} loadavg={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
