"""Throughput beside the Scala consumer, timed alike and alternated: raw loop, iterator, batches(), Scala 1.1.1.

    .venv/bin/python scripts/bench/beside_scala.py [--messages 10000000] [--rounds 3]

One 8-partition topic of --messages 100-byte messages; each round reads all of it with every
contender in turn (raw, iterator, batches, scala), each from offset 0 in a group of its own, every
clock started at the contender's first message and stopped at its last, so neither a JVM's start
nor a group's first rebalance is counted:
  raw        confluent_kafka.Consumer with our fetcher's librdkafka settings, consume(10000) loop
             touching every value (throughput.py's row a)
  iterator   ConsumerConnector, one stream, `for msg in stream` touching msg.value() (row b)
  batches    ConsumerConnector, one stream, `for batch in stream.batches()` (row d)
  scala      the Scala 1.1.1 high-level consumer, one stream (tests/harness/java/ScalaBench.java
             --count), in the JVM kafka-consumer-perf-test.sh gives ConsumerPerformance: 512 MB
             heap, G1, the full tiered JIT
Each round prints every contender's rate with the load average at its start; then the medians and
their ratios. Last line:
    iterator_raw= batches_raw= iterator_scala= batches_scala= raw_msgs_per_s= iterator_msgs_per_s=
    batches_msgs_per_s= scala_msgs_per_s= rounds= messages= loadavg=
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import PERF_TEST_JVM_OPTS, batches, iterator, produce, raw  # noqa: E402

from harness.scala import bench_command  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, TEST_JVM_OPTS, LocalCluster  # noqa: E402

PARTITIONS = 8


def scala(zookeeper: str, topic: str, count: int, workdir: Path, jvm_opts: tuple[str, ...]) -> float:
    """ScalaBench --count: msg/s from its first message to its `count`th."""
    command, out = bench_command(
        zookeeper, topic, workdir, reset="smallest", jvm_opts=jvm_opts, mode=("--count", str(count))
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"the Scala consumer failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    seen, seconds, _ = out.read_text().split()
    if int(seen) != count:
        raise SystemExit(f"the Scala consumer read {seen} of {count} messages")
    return count / float(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="small heaps (for the test suite)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="zkconsumer-beside-scala-"))
    jvm = TEST_JVM_OPTS if args.smoke else SERVER_JVM_OPTS
    with LocalCluster(brokers=1, chroot="/bench", jvm_opts=jvm, workdir=workdir / "cluster") as cluster:
        zk, boot, n, topic = cluster.zookeeper_connect, cluster.bootstrap_servers, args.messages, "bench"
        kafka.create_topic(boot, topic, PARTITIONS)
        produce(boot, topic, n, args.size)
        raw(boot, topic, min(n, 200_000))  # warms the broker's page cache
        contenders = {
            "raw": lambda: raw(boot, topic, n),
            "iterator": lambda: iterator(zk, topic, n),
            "batches": lambda: batches(zk, topic, n),
            "scala": lambda: scala(zk, topic, n, workdir, PERF_TEST_JVM_OPTS),
        }
        rates: dict[str, list[float]] = {name: [] for name in contenders}
        loads = []
        for round_no in range(1, args.rounds + 1):
            for name, run in contenders.items():
                loads.append(os.getloadavg()[0])
                rates[name].append(run())
                print(
                    f"round {round_no} {name:9s} load {loads[-1]:5.2f}  {rates[name][-1]:12,.0f} msg/s",
                    flush=True,
                )
    med = {name: statistics.median(r) for name, r in rates.items()}
    for name, rate in med.items():
        print(f"median {name:9s} {rate:12,.0f} msg/s", flush=True)
    print(
        f"iterator_raw={med['iterator'] / med['raw']:.3f} batches_raw={med['batches'] / med['raw']:.3f} "
        f"iterator_scala={med['iterator'] / med['scala']:.3f} batches_scala={med['batches'] / med['scala']:.3f} "
        + " ".join(f"{name}_msgs_per_s={rate:.0f}" for name, rate in med.items())
        + f" rounds={args.rounds} messages={n} loadavg={statistics.median(loads):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
