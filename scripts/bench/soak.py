"""Memory soak: a member consuming at full speed beside one slow stream must keep a flat, bounded RSS.

    .venv/bin/python scripts/bench/soak.py --seconds 600

One ConsumerConnector with two streams over an 8-partition topic that a producer thread keeps
filling: stream 0 is drained as fast as it comes, stream 1 sleeps 1 ms per message, so its
queue stays full and the fetcher holds and pauses its partitions. RSS is sampled every second.

bound_mb is what the queues may hold, by the settings: librdkafka's prefetch
(queued.max.messages.kbytes) plus, per stream, queued.max.message.chunks chunks of at most one
prefetch each and one held run, times 3 for the Python objects around each 100-byte message,
plus the RSS at the first sample (interpreter, librdkafka, connector).
The last line is machine-readable:
    rss_start_mb=<first sample> rss_warm_mb=<after the first minute or 10%> rss_max_mb=<max> rss_end_mb=<last>
    bound_mb=<bound> consumed=<messages> seconds=<n> loadavg=<1-minute load at the end>
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid

from confluent_kafka import Producer

from zkconsumer import ConsumerConnector, ConsumerTimeout
from zkconsumer.consumer.fetcher import FetchSettings
from zkconsumer.testing import kafka
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, TEST_JVM_OPTS, LocalCluster

PARTITIONS = 8
OBJECT_OVERHEAD = 3  # Python Message + bytes objects around a 100-byte value


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def produce_forever(bootstrap: str, topic: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    payload = b"x" * 100
    while not stop.is_set():
        for _ in range(10000):
            try:
                producer.produce(topic, payload)
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(30)


def drain(stream, counts: list[int], i: int, delay: float, stop: threading.Event) -> None:  # type: ignore[no-untyped-def]
    while not stop.is_set():
        try:
            for _msg in stream:
                counts[i] += 1
                if delay:
                    time.sleep(delay)
                if stop.is_set():
                    return
        except ConsumerTimeout:
            continue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--smoke", action="store_true", help="small heaps (for the test suite)")
    args = parser.parse_args()
    cluster = LocalCluster(brokers=1, chroot="/soak", jvm_opts=TEST_JVM_OPTS if args.smoke else SERVER_JVM_OPTS)
    cluster.start()
    stop = threading.Event()
    try:
        topic = "soak"
        kafka.create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
        producer = threading.Thread(
            target=produce_forever, args=(cluster.bootstrap_servers, topic, stop), name="soak-producer", daemon=True
        )
        producer.start()
        conf = {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": f"soak-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 1000,
        }
        with ConsumerConnector(conf) as conn:
            streams = conn.create_message_streams({topic: 2})[topic]
            counts = [0, 0]
            drains = [
                threading.Thread(
                    target=drain, args=(s, counts, i, 0.001 * i, stop), name=f"soak-drain-{i}", daemon=True
                )
                for i, s in enumerate(streams)
            ]
            for t in drains:
                t.start()
            samples = []
            began = time.monotonic()
            warm_after = min(60.0, args.seconds / 10)
            warm = None
            while time.monotonic() - began < args.seconds:
                time.sleep(1.0)
                samples.append(rss_mb())
                if warm is None and time.monotonic() - began >= warm_after:
                    warm = samples[-1]
            stop.set()
            for t in drains:
                t.join(10)
        settings = FetchSettings("", "", "")
        prefetch_mb = settings.consumer_config()["queued.max.messages.kbytes"] / 1024  # type: ignore[operator]
        per_stream = settings.queued_max_message_chunks + 1
        bound = samples[0] + OBJECT_OVERHEAD * prefetch_mb * (1 + 2 * per_stream)
        print(
            f"rss_start_mb={samples[0]:.0f} rss_warm_mb={warm or samples[-1]:.0f} rss_max_mb={max(samples):.0f} "
            f"rss_end_mb={samples[-1]:.0f} bound_mb={bound:.0f} consumed={sum(counts)} seconds={args.seconds} "
            f"loadavg={os.getloadavg()[0]:.2f}"
        )
    finally:
        stop.set()
        cluster.stop()


if __name__ == "__main__":
    main()
