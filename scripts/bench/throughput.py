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
  (a3) caller    one thread, no connector: consume(10000) with the tuned settings in the caller's own
                 thread, each batch split by zkconsumer.consumer.fetcher.runs.split_runs into chunks that a real
                 zkconsumer ConsumerIterator hands out (`for msg in it`, touching msg.value()); its
                 queue is a stand-in whose take() calls consume(). The upper bound of a one-stream
                 connector that fetches in the application's thread and keeps today's per-message path
  (a4) lean      the same one-thread loop without split_runs: each batch is handed out whole through
                 one stoppable itertools.compress (the iterator's per-message mechanism, checked per
                 batch instead of per 128 messages), the only per-message Python-visible work being
                 an error check per batch (map in C); positions stay exact by reading the live
                 batch's cursor at commit time and folding each partition's last offset from the
                 finished batches only every few batches (newest first, stopping once every
                 assigned partition was found): see OneThreadLoop and delivery_cost.py
  (b) iterator   ConsumerConnector, one stream, `for msg in stream` touching msg.value(); the
                 reader fetches in its own thread when its queue is empty (zkconsumer.fetch.in.reader)
  (b0) threaded  (b) with zkconsumer.fetch.in.reader=false: only the fetcher thread fetches
  (c) streams    ConsumerConnector, N streams drained by N threads
  (d) batches    ConsumerConnector, one stream, `for batch in stream.batches()`
  (e) scala      kafka 1.1.1 `kafka.tools.ConsumerPerformance --zookeeper ... --threads 1` (the
                 Scala ZooKeeper consumer; its own clock includes its rebalance, so it is a bit
                 pessimistic for Scala), in the JVM kafka-consumer-perf-test.sh gives it: 512 MB
                 heap and kafka-run-class.sh's performance options (G1, MaxGCPauseMillis=20, the
                 full tiered JIT), not the test harness's C1-only JVM, which roughly halves it
  (f) pykafka    BalancedConsumer, if pykafka is installed (else skipped, with a message)
The last line is machine-readable:
ratio=<b/a> batch_ratio=<d/a> scala_ratio=<d/e> iterator_scala_ratio=<b/e> default_ratio=<a0/a>
handed_ratio=<a2/a> batch_handed_ratio=<d/a2> iterator_handed_ratio=<b/a2> a3_ratio=<a3/a> a4_ratio=<a4/a>
fetcher_thread_ratio=<b0/a> raw_msgs_per_s=<a> ... a_cpu_ns=<the process's CPU ns per message in row a>
(a2 a3 a4 b b0 d alike)
loadavg=<1-minute load when the run ended>
(a3) and (a4) check after timing that the positions they would commit are exact (every message
handed out counts, except the last one, still being processed).
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from operator import length_hint
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the test harness: tests/harness

from harness.scala import run_tool  # noqa: E402
from zkconsumer import ConsumerConnector, ConsumerTimeout  # noqa: E402
from zkconsumer.consumer.chunks import Chunk, PartitionTopicInfo  # noqa: E402
from zkconsumer.consumer.delivery import ConsumerIterator, DeliveryGate  # noqa: E402
from zkconsumer.consumer.fetcher import FetchSettings  # noqa: E402
from zkconsumer.consumer.fetcher.runs import spans, split_runs  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, TEST_JVM_OPTS, LocalCluster  # noqa: E402

PARTITIONS = 8
BATCH = 10_000  # consume()'s batch, as in the fetcher
_error, _partition = Message.error, Message.partition


def produce(bootstrap: str, topic: str, count: int, size: int) -> None:
    kafka.produce_bulk(bootstrap, topic, count, size, PARTITIONS)


class Clock:
    """Started at a reader's first message: wall time for the rate, the process's CPU time (every
    thread, librdkafka's included), which a shared machine's load inflates much less, and (--rows)
    the CPU time Python's garbage collector took (in whichever thread collected) and each Python
    thread's CPU time."""

    cpu_ns: dict[str, float] = {}  # row -> CPU ns per message of its fastest repeat
    threads_ns: dict[str, dict[str, float]] = {}  # row -> Python thread name -> its CPU ns per message
    gc_ns: dict[str, float] = {}  # row -> GC ns per message of the same repeat
    rates: dict[str, float] = {}  # row -> msg/s of its fastest repeat
    row = ""  # the row being measured
    in_gc = 0.0  # seconds spent collecting so far
    _gc_began = 0.0

    def __init__(self) -> None:
        self.wall, self.cpu, self.gc = time.perf_counter(), time.process_time(), Clock.in_gc
        self.threads = thread_cpu()

    def rate(self, count: int) -> float:
        wall, cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        threads = thread_cpu()
        rate, row = count / wall, Clock.row
        if rate > Clock.rates.get(row, 0.0):
            Clock.rates[row] = rate
            Clock.cpu_ns[row] = cpu * 1e9 / count
            Clock.threads_ns[row] = {
                name.rsplit("-", 1)[-1] if name.endswith(("-fetcher", "-lease")) else name: (
                    t - self.threads.get(name, 0.0)
                )
                * 1e9
                / count
                for name, t in threads.items()
                if t - self.threads.get(name, 0.0) > 0
            }
            Clock.gc_ns[row] = (Clock.in_gc - self.gc) * 1e9 / count
        return rate

    @staticmethod
    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            Clock._gc_began = time.thread_time()  # a collection starts and stops in one thread
        else:
            Clock.in_gc += time.thread_time() - Clock._gc_began


_TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each live Python thread, by name (Linux /proc; clock ticks, so 10 ms steps)."""
    out = {}
    for t in threading.enumerate():
        try:
            with open(f"/proc/self/task/{t.native_id}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[t.name] = (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime
    return out


def best_of(row: str, repeat: int, run: Callable[[], float]) -> float:
    Clock.row = row
    return max(run() for _ in range(repeat))


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
    clock = None
    while seen < count:
        for m in next_batch():
            if m.error() is None:
                if clock is None:
                    clock = Clock()
                seen += 1
                nbytes += len(m.value())
    return clock.rate(count)  # type: ignore[union-attr]


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


class Consuming(Protocol):
    """What the one-thread loops need of a Consumer (delivery_cost.py passes premade batches)."""

    def consume(self, num_messages: int, timeout: float) -> list[Message]: ...


class CallerQueue:
    """(a3): a stand-in for the StreamQueue a ConsumerIterator takes chunks from (take() is all it
    calls), fed by consume() in the caller's own thread: no fetcher thread, no lock, no hand-off.
    Per batch it does what Fetcher._route does per batch and run (split_runs, one Chunk per run,
    the info looked up by (topic, partition), fetched_offset moved on); the per-message path is
    the real ConsumerIterator's."""

    def __init__(self, consumer: Consuming, infos: dict[tuple[str, int], PartitionTopicInfo]) -> None:
        self._consumer = consumer
        self._infos = infos
        self._ready: collections.deque[Chunk] = collections.deque()

    def take(self, timeout: float | None) -> Chunk | None:
        ready, infos = self._ready, self._infos
        deadline = None if timeout is None else time.monotonic() + timeout
        while not ready:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            for run in split_runs(self._consumer.consume(BATCH, 0.1)):
                head = run[0]
                if head.error() is not None:
                    raise KafkaException(head.error())
                info = infos[(head.topic(), head.partition())]  # type: ignore[index]
                info.fetched_offset = run[-1].offset() + 1  # type: ignore[operator]
                ready.append(Chunk(info, run))  # type: ignore[arg-type]
        return ready.popleft()


def caller_iterator(consumer: Consuming, topic: str) -> tuple[ConsumerIterator, list[PartitionTopicInfo]]:
    """A real ConsumerIterator over a CallerQueue (its gate a live DeliveryGate, as a connector's)."""
    infos = {(topic, p): PartitionTopicInfo(topic, p, f"t-{p}", None, 0) for p in range(PARTITIONS)}  # type: ignore[arg-type]
    stand_in: Any = CallerQueue(consumer, infos)
    return ConsumerIterator(stand_in, 5000, DeliveryGate()), list(infos.values())


class OneThreadLoop:
    """(a4): consume() in the caller's thread, each batch handed out whole, positions exact.

    Per batch: one error check (map in C; a batch with an error is not handed out), then the batch
    plus a sentinel goes out through `compress(cursor, stop)` like the iterator's slices (clearing
    `stop` stops it before the next message: a release, a closed gate, a lapsed lease). Nothing is
    recorded per message: a finished batch is only appended to `_settled`, and every `fold_every`
    batches (and at commit time) the newest settled batches are scanned newest first, each
    partition's last offset taken from runs.spans over the partitions (galloping, verified in C),
    until every assigned partition was found; older ones are dropped unread. `positions()` adds the
    live batch's handed-out prefix, read from the cursor (commit time only).
    """

    def __init__(self, consumer: Consuming, partitions: int, gate: DeliveryGate, fold_every: int = 4) -> None:
        self._consumer = consumer
        self._partitions = partitions
        self._gate = gate
        self._fold_every = fold_every
        self._positions: dict[int, int] = {}  # partition -> next offset not finished
        self._settled: list[list[Message]] = []  # finished batches not folded yet, oldest first
        self._live: tuple[list[Any], Iterator[Any], list[int]] | None = None

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain.from_iterable(self._batches())

    def _batches(self) -> Iterator[Iterator[Message]]:
        consume, settled = self._consumer.consume, self._settled
        while True:
            live, self._live = self._live, None
            if live is not None:  # its sentinel was pulled: handed out whole, and more asked for
                settled.append(live[0])
                if len(settled) >= self._fold_every:
                    self._fold()
            batch = consume(BATCH, 0.1)
            if not batch:
                continue
            if any(map(_error, batch)):
                raise KafkaException(next(m.error() for m in batch if m.error() is not None))
            data: list[Any] = batch
            data.append(None)  # the sentinel (the batch is ours: consume() built the list)
            cursor, stop = iter(data), [1] * (len(data) - 1)
            self._live = (data, cursor, stop)
            if not self._gate.usable():
                stop.clear()
            yield itertools.compress(cursor, stop)

    def _fold(self) -> None:
        found: dict[int, int] = {}
        for data in reversed(self._settled):
            partitions = list(map(_partition, itertools.islice(data, len(data) - 1)))
            for i, j in reversed(spans(partitions)):
                found.setdefault(partitions[i], j)  # a partition's last run in the newest batch holding it
            for p, j in found.items():
                if j >= 0:
                    self._positions[p] = data[j - 1].offset() + 1
                    found[p] = -1  # taken
            if len(found) >= self._partitions:
                break
        self._settled.clear()

    def positions(self) -> dict[int, int]:
        """What a commit would write now (the next offset not finished, per partition)."""
        self._fold()
        out = dict(self._positions)
        if self._live is not None:
            data, cursor, _ = self._live
            pulled = len(data) - length_hint(cursor)
            if pulled >= len(data):
                handed, current = data[:-1], None  # all handed out, and more asked for
            else:
                handed, current = data[: max(0, pulled - 1)], (data[pulled - 1] if pulled else None)
            for m in handed:
                out[m.partition()] = m.offset() + 1
            if current is not None:
                out[current.partition()] = current.offset()  # still being processed: not finished
        return out


def one_thread_caller(bootstrap: str, topic: str, count: int) -> float:
    """(a3): the tuned consumer read through CallerQueue and a real ConsumerIterator."""
    consumer = tuned_consumer(bootstrap, topic, "a3")
    it, infos = caller_iterator(consumer, topic)
    rate = touch_each(it, count)
    finished = sum(info.consumed_offset for info in infos)
    consumer.close()
    assert finished == count - 1, f"a3 would commit {finished} finished messages, not {count - 1}"
    return rate


def one_thread_lean(bootstrap: str, topic: str, count: int) -> float:
    """(a4): the tuned consumer read through OneThreadLoop."""
    consumer = tuned_consumer(bootstrap, topic, "a4")
    loop = OneThreadLoop(consumer, PARTITIONS, DeliveryGate())
    rate = touch_each(loop, count)
    finished = sum(loop.positions().values())
    consumer.close()
    assert finished == count - 1, f"a4 would commit {finished} finished messages, not {count - 1}"
    return rate


def tuned_consumer(bootstrap: str, topic: str, name: str) -> Consumer:
    settings = FetchSettings(
        bootstrap_servers=bootstrap, group_id=f"bench-{name}-{uuid.uuid4().hex[:6]}", client_id=f"bench-{name}"
    )
    consumer = Consumer(settings.consumer_config())
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    return consumer


def touch_each(messages: Any, count: int) -> float:
    """Row (b)'s loop: `for msg in ...` touching msg.value(), the clock from the first message on."""
    seen = nbytes = 0
    clock = Clock()
    for msg in messages:
        if not seen:
            clock = Clock()
        seen += 1
        nbytes += len(msg.value())
        if seen == count:
            break
    return clock.rate(count)


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


# What kafka-consumer-perf-test.sh runs ConsumerPerformance with: its KAFKA_HEAP_OPTS and
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
PERF_TEST_JVM_OPTS = (
    "-Xmx512M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)


def scala(zookeeper: str, topic: str, count: int) -> float:
    """kafka 1.1.1 ConsumerPerformance on the old (ZooKeeper) consumer, one thread, in the JVM
    kafka-consumer-perf-test.sh gives it; its nMsg.sec."""
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
        jvm_opts=PERF_TEST_JVM_OPTS,
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


def connector(zookeeper: str, *, in_reader: bool = True) -> ConsumerConnector:
    return ConsumerConnector(
        {
            "zookeeper.connect": zookeeper,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "smallest",
            "auto.commit.enable": "false",
            "consumer.timeout.ms": 5000,
            "zkconsumer.fetch.in.reader": in_reader,
        }
    )


def iterator(zookeeper: str, topic: str, count: int, *, in_reader: bool = True) -> float:
    with connector(zookeeper, in_reader=in_reader) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        return touch_each(stream, count)


def batches(zookeeper: str, topic: str, count: int) -> float:
    with connector(zookeeper) as conn:
        stream = conn.create_message_streams({topic: 1})[topic][0]
        seen = nbytes = 0
        clock = Clock()
        for batch in stream.batches():
            if not seen:
                clock = Clock()
            for msg in batch:
                nbytes += len(msg.value())
            seen += len(batch)
            if seen >= count:
                break
        return clock.rate(count)


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


def only(rows: list[str], boot: str, zk: str, topic: str, n: int, rep: int) -> None:
    """--rows: the rows named, each with its GC time and its CPU by thread (the full run leaves GC
    untimed: the callback makes two clock calls per collection, a system call on some machines)."""
    gc.callbacks.append(Clock.on_gc)
    runs: dict[str, Callable[[], float]] = {
        "a": lambda: raw(boot, topic, n),
        "a2": lambda: raw_handed(boot, topic, n),
        "a3": lambda: one_thread_caller(boot, topic, n),
        "a4": lambda: one_thread_lean(boot, topic, n),
        "b": lambda: iterator(zk, topic, n),
        "b0": lambda: iterator(zk, topic, n, in_reader=False),
        "d": lambda: batches(zk, topic, n),
    }
    for row in rows:
        rate = best_of(row, rep, runs[row])
        print(f"({row}): {rate:12,.0f} msg/s  cpu {Clock.cpu_ns[row]:5.0f} ns/msg  gc {Clock.gc_ns[row]:4.0f} ns/msg")
        python = sum(Clock.threads_ns[row].values())
        by_thread = ", ".join(f"{name} {ns:.0f}" for name, ns in sorted(Clock.threads_ns[row].items()))
        print(
            f"    CPU ns/msg by Python thread: {by_thread}; librdkafka's own threads {Clock.cpu_ns[row] - python:.0f}"
        )
    print(
        " ".join(
            f"{r}_msgs_per_s={Clock.rates[r]:.0f} {r}_cpu_ns={Clock.cpu_ns[r]:.0f} {r}_gc_ns={Clock.gc_ns[r]:.0f}"
            for r in rows
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs for (a), (a2), (a3), (a4), (b) and (d)")
    parser.add_argument("--smoke", action="store_true", help="small heaps (for the test suite)")
    parser.add_argument(
        "--rows",
        help="only these rows, comma-separated, of a a2 a3 a4 b b0 d (to profile one, e.g. under py-spy); "
        "the last line is then <row>_msgs_per_s= <row>_cpu_ns= <row>_gc_ns= per row",
    )
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
        zk, boot, n, rep = cluster.zookeeper_connect, cluster.bootstrap_servers, args.messages, args.repeat
        cpu = Clock.cpu_ns

        def show(label: str, row: str, rate: float) -> None:
            ratio = "" if row == "a" else f"  ({rate / a:.2f} of tuned raw)"
            print(f"{label:<29}: {rate:12,.0f} msg/s  cpu {cpu[row]:5.0f} ns/msg{ratio}", flush=True)

        if args.rows:
            only(args.rows.split(","), boot, zk, topic, n, rep)
            return
        a = best_of("a", rep, lambda: raw(boot, topic, n))
        show("(a) tuned raw consume loop", "a", a)
        a0 = best_of("a0", 1, lambda: raw_default(boot, topic, n))
        show("(a0) default-settings loop", "a0", a0)
        a2 = best_of("a2", rep, lambda: raw_handed(boot, topic, n))
        show("(a2) raw loop over 2 threads", "a2", a2)
        a3 = best_of("a3", rep, lambda: one_thread_caller(boot, topic, n))
        show("(a3) 1 thread, split+iterator", "a3", a3)
        a4 = best_of("a4", rep, lambda: one_thread_lean(boot, topic, n))
        show("(a4) 1 thread, lean positions", "a4", a4)
        b = best_of("b", rep, lambda: iterator(zk, topic, n))
        show("(b) one ConsumerIterator", "b", b)
        b0 = best_of("b0", rep, lambda: iterator(zk, topic, n, in_reader=False))
        show("(b0) (b), fetcher thread only", "b0", b0)
        c = many_streams(zk, topic, args.messages, args.streams)
        print(
            f"(c) {args.streams} streams, {args.streams} threads   : {c:12,.0f} msg/s  ({c / a:.2f} of tuned raw)",
            flush=True,
        )
        d = best_of("d", rep, lambda: batches(zk, topic, n))
        show("(d) one stream, batches()", "d", d)
        e = scala(zk, topic, args.messages)
        if e <= 0:  # seen under heavy load: its old consumer timed out before the first message
            print("(e) Scala reported 0 msg/s: its ratios are printed as 0", flush=True)
            e = float("inf")
        print(
            f"(e) Scala 1.1.1 ConsumerPerformance, 1 thread: {e:12,.0f} msg/s  ({e / a:.2f} of tuned raw)", flush=True
        )
        f = pykafka_rate(zk, cluster.bootstrap_servers, topic, min(args.messages, 200_000))
        if f is not None:
            print(f"(f) pykafka BalancedConsumer : {f:12,.0f} msg/s  ({f / a:.2f} of tuned raw)", flush=True)
        print(
            f"ratio={b / a:.3f} batch_ratio={d / a:.3f} scala_ratio={d / e:.3f} iterator_scala_ratio={b / e:.3f} "
            f"default_ratio={a0 / a:.3f} handed_ratio={a2 / a:.3f} batch_handed_ratio={d / a2:.3f} "
            f"iterator_handed_ratio={b / a2:.3f} a3_ratio={a3 / a:.3f} a4_ratio={a4 / a:.3f} "
            f"fetcher_thread_ratio={b0 / a:.3f} "
            f"raw_msgs_per_s={a:.0f} iterator_msgs_per_s={b:.0f} "
            f"streams_msgs_per_s={c:.0f} batch_msgs_per_s={d:.0f} scala_msgs_per_s={e if e < float('inf') else 0:.0f} "
            + "".join(f"{row}_cpu_ns={cpu[row]:.0f} " for row in ("a", "a2", "a3", "a4", "b", "b0", "d"))
            + f"loadavg={os.getloadavg()[0]:.2f}"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
