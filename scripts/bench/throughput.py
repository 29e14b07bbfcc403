"""Throughput: bare confluent-kafka loops, our iterator and batches, and the Scala consumer; one run, one cluster.

    .venv/bin/python scripts/bench/throughput.py --messages 2000000

Measures, over the same 8-partition topic of 100-byte messages (each reader starts at offset 0;
our clocks start at the reader's first message, so connection set-up is not counted):
  (a) raw        confluent_kafka.Consumer with our fetcher's librdkafka settings ("tuned raw"),
                 assign() + consume(10000) loop, touching every value
  (a0) default   the same loop with librdkafka's default settings (what a user writes first)
  (a2) handed    the tuned loop split over two threads: one calls consume(10000) and hands each batch
                 over a bounded queue, the other runs the loop body. This is the shape the legacy API
                 imposes (fetching in the background, streams read by the application's threads),
                 with none of zkconsumer's code: the bound for (b) and (d) under one GIL
  (b) iterator   ConsumerConnector, one stream, `for msg in stream` touching msg.value()
  (c) streams    ConsumerConnector, N streams drained by N threads
  (d) batches    ConsumerConnector, one stream, `for batch in stream.batches()`
  (e) scala      kafka 1.1.1 `kafka.tools.ConsumerPerformance --zookeeper ... --threads 1` (the
                 Scala ZooKeeper consumer; its own clock includes its rebalance, so it is a bit
                 pessimistic for Scala)
  (f) pykafka    BalancedConsumer, if pykafka is installed (else skipped, with a message)
The last line is machine-readable:
ratio=<b/a> batch_ratio=<d/a> scala_ratio=<d/e> iterator_scala_ratio=<b/e> default_ratio=<a0/a>
handed_ratio=<a2/a> batch_handed_ratio=<d/a2> iterator_handed_ratio=<b/a2>
raw_msgs_per_s=<a> ... loadavg=<1-minute load when the run ended>
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Message, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the test harness: tests/harness

from harness.scala import run_tool  # noqa: E402
from zkconsumer import ConsumerConnector, ConsumerTimeout  # noqa: E402
from zkconsumer.fetch_settings import FetchSettings  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, TEST_JVM_OPTS, LocalCluster  # noqa: E402

PARTITIONS = 8


def produce(bootstrap: str, topic: str, count: int, size: int) -> None:
    kafka.produce_bulk(bootstrap, topic, count, size, PARTITIONS)


def consume_loop(config: dict[str, object], topic: str, count: int) -> float:
    """assign() + consume(10000) loop touching every value; the clock starts at the first message."""
    consumer = Consumer(config)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    rate = timed_loop(count, lambda: consumer.consume(10000, 1.0))
    consumer.close()
    return rate


def timed_loop(count: int, next_batch: Callable[[], list[Message]]) -> float:
    """The raw loop body over batches until `count` messages: msg/s from the first message on."""
    seen = nbytes = 0
    began = None
    while seen < count:
        for m in next_batch():
            if m.error() is None:
                if began is None:
                    began = time.perf_counter()
                seen += 1
                nbytes += len(m.value())
    return count / (time.perf_counter() - began)  # type: ignore[operator]


def raw(bootstrap: str, topic: str, count: int) -> float:
    """The same librdkafka settings our fetcher uses."""
    settings = FetchSettings(
        bootstrap_servers=bootstrap, group_id=f"bench-raw-{uuid.uuid4().hex[:6]}", client_id="bench-raw"
    )
    return consume_loop(settings.consumer_config(), topic, count)


def raw_handed(bootstrap: str, topic: str, count: int) -> float:
    """The tuned loop with consume() in a thread of its own, batches handed over a queue of 4."""
    settings = FetchSettings(
        bootstrap_servers=bootstrap, group_id=f"bench-handed-{uuid.uuid4().hex[:6]}", client_id="bench-handed"
    )
    consumer = Consumer(settings.consumer_config())
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    batches: queue.Queue[list[Message] | None] = queue.Queue(4)
    stop = threading.Event()

    def fetch() -> None:
        try:
            while not stop.is_set():
                batch = consumer.consume(10000, 0.1)
                if batch:
                    batches.put(batch)
        finally:
            batches.put(None)

    fetcher = threading.Thread(target=fetch, name="bench-handed-fetch", daemon=True)
    fetcher.start()

    def handed() -> list[Message]:
        batch = batches.get(timeout=60)
        if batch is None:
            raise RuntimeError("the fetch thread ended early")
        return batch

    rate = timed_loop(count, handed)
    stop.set()
    while fetcher.is_alive():  # drain so a blocked put() sees the stop
        if batches.get(timeout=5) is None:
            break
    fetcher.join(10)
    consumer.close()
    return rate


def raw_default(bootstrap: str, topic: str, count: int) -> float:
    """librdkafka's defaults: only what a consumer must be told."""
    return consume_loop(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-default-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        },
        topic,
        count,
    )


def scala(zookeeper: str, topic: str, count: int) -> float:
    """kafka 1.1.1 ConsumerPerformance on the old (ZooKeeper) consumer, one thread; its nMsg.sec."""
    out = run_tool(
        "kafka.tools.ConsumerPerformance",
        "--zookeeper",
        zookeeper,
        "--topic",
        topic,
        "--messages",
        str(count),
        "--threads",
        "1",
        "--group",
        f"bench-scala-{uuid.uuid4().hex[:6]}",
        timeout=600,
    )
    header, *rows = [line for line in out.splitlines() if "," in line]
    fields = [f.strip() for f in header.split(",")]
    values = [v.strip() for v in rows[-1].split(",")]
    return float(values[fields.index("nMsg.sec")])


def pykafka_rate(zookeeper: str, bootstrap: str, topic: str, count: int) -> float | None:
    try:
        from pykafka import KafkaClient  # type: ignore[import-not-found]
    except ImportError:
        print("(f) pykafka                  : skipped (pykafka is not installed)", flush=True)
        return None
    client = KafkaClient(hosts=bootstrap)
    consumer = client.topics[topic.encode()].get_balanced_consumer(
        consumer_group=f"bench-pykafka-{uuid.uuid4().hex[:6]}".encode(),
        zookeeper_connect=zookeeper,
        auto_offset_reset=-2,
        consumer_timeout_ms=5000,
    )
    seen, began = 0, 0.0
    for msg in consumer:
        if msg is None:
            break
        if not seen:
            began = time.perf_counter()
        seen += 1
        if seen == count:
            break
    consumer.stop()
    return seen / (time.perf_counter() - began) if seen else None


def connector(zookeeper: str) -> ConsumerConnector:
    return ConsumerConnector(
        {
            "zookeeper.connect": zookeeper,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "smallest",
            "auto.commit.enable": "false",
            "consumer.timeout.ms": 5000,
        }
    )


def iterator(zookeeper: str, topic: str, count: int) -> float:
    with connector(zookeeper) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        seen = nbytes = 0
        began = 0.0
        for msg in stream:
            if not seen:
                began = time.perf_counter()
            seen += 1
            nbytes += len(msg.value())
            if seen == count:
                break
        return count / (time.perf_counter() - began)


def batches(zookeeper: str, topic: str, count: int) -> float:
    with connector(zookeeper) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        seen = nbytes = 0
        began = 0.0
        for batch in stream.batches():
            if not seen:
                began = time.perf_counter()
            for msg in batch:
                nbytes += len(msg.value())
            seen += len(batch)
            if seen >= count:
                break
        return count / (time.perf_counter() - began)


def many_streams(zookeeper: str, topic: str, count: int, streams: int) -> float:
    with connector(zookeeper) as conn:
        all_streams = conn.create_message_streams({topic: streams})[topic]
        counts = [0] * streams
        done = threading.Event()

        def drain(i: int) -> None:
            try:
                for _ in all_streams[i]:
                    counts[i] += 1
                    if sum(counts) >= count:
                        done.set()
                        return
            except ConsumerTimeout:
                return

        began = time.perf_counter()
        threads = [threading.Thread(target=drain, args=(i,), daemon=True) for i in range(streams)]
        for t in threads:
            t.start()
        done.wait(600)
        return count / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs for (a) and (b)")
    parser.add_argument("--smoke", action="store_true", help="small heaps (for the test suite)")
    args = parser.parse_args()
    cluster = LocalCluster(brokers=1, chroot="/bench", jvm_opts=TEST_JVM_OPTS if args.smoke else SERVER_JVM_OPTS)
    cluster.start()
    try:
        topic = "bench"
        kafka.create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
        began = time.perf_counter()
        produce(cluster.bootstrap_servers, topic, args.messages, args.size)
        print(f"produced {args.messages} x {args.size} B in {time.perf_counter() - began:.1f}s", flush=True)
        raw(cluster.bootstrap_servers, topic, min(args.messages, 200_000))  # warm the broker's page cache/JIT
        zk = cluster.zookeeper_connect
        a = max(raw(cluster.bootstrap_servers, topic, args.messages) for _ in range(args.repeat))
        print(f"(a) tuned raw consume loop   : {a:12,.0f} msg/s", flush=True)
        a0 = raw_default(cluster.bootstrap_servers, topic, args.messages)
        print(f"(a0) default-settings loop   : {a0:12,.0f} msg/s  ({a0 / a:.2f} of tuned raw)", flush=True)
        a2 = max(raw_handed(cluster.bootstrap_servers, topic, args.messages) for _ in range(args.repeat))
        print(f"(a2) raw loop over 2 threads : {a2:12,.0f} msg/s  ({a2 / a:.2f} of tuned raw)", flush=True)
        b = max(iterator(zk, topic, args.messages) for _ in range(args.repeat))
        print(f"(b) one ConsumerIterator     : {b:12,.0f} msg/s  ({b / a:.2f} of tuned raw)", flush=True)
        c = many_streams(zk, topic, args.messages, args.streams)
        print(
            f"(c) {args.streams} streams, {args.streams} threads   : {c:12,.0f} msg/s  ({c / a:.2f} of tuned raw)",
            flush=True,
        )
        d = max(batches(zk, topic, args.messages) for _ in range(args.repeat))
        print(f"(d) one stream, batches()    : {d:12,.0f} msg/s  ({d / a:.2f} of tuned raw)", flush=True)
        e = scala(zk, topic, args.messages)
        print(
            f"(e) Scala 1.1.1 ConsumerPerformance, 1 thread: {e:12,.0f} msg/s  ({e / a:.2f} of tuned raw)", flush=True
        )
        f = pykafka_rate(zk, cluster.bootstrap_servers, topic, min(args.messages, 200_000))
        if f is not None:
            print(f"(f) pykafka BalancedConsumer : {f:12,.0f} msg/s  ({f / a:.2f} of tuned raw)", flush=True)
        print(
            f"ratio={b / a:.3f} batch_ratio={d / a:.3f} scala_ratio={d / e:.3f} iterator_scala_ratio={b / e:.3f} "
            f"default_ratio={a0 / a:.3f} handed_ratio={a2 / a:.3f} batch_handed_ratio={d / a2:.3f} "
            f"iterator_handed_ratio={b / a2:.3f} raw_msgs_per_s={a:.0f} iterator_msgs_per_s={b:.0f} "
            f"streams_msgs_per_s={c:.0f} batch_msgs_per_s={d:.0f} scala_msgs_per_s={e:.0f} "
            f"loadavg={os.getloadavg()[0]:.2f}"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
