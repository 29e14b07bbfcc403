"""Delivery latency at a steady rate: the producer's acknowledgement to the message leaving next(), side by side.

    .venv/bin/python scripts/bench/latency.py [--rates 5000,50000] [--seconds 10] [--rounds 3]

Per rate and round, each contender in turn (raw, iterator, batches, scala, then again next round:
the VM's speed drifts within minutes, so only neighbours compare) reads a fresh 8-partition topic
from its end while a producer in a process of its own writes --rate msg/s of 100-byte messages,
round-robin, acks=all, for --seconds:
  raw        confluent_kafka.Consumer with our fetcher's librdkafka settings, assign() at the end, a
             loop taking what is queued (consume(10000, 0)), else waiting for one message (poll(0.1))
             and what came with it: the time each message is reached in the loop body. (A plain
             consume(10000, 0.1) loop waits out its timeout whenever fewer than 10,000 messages come
             in it: ~50 ms at 2,000 msg/s.)
  iterator   ConsumerConnector, one stream, `for msg in stream`: the time next() returned it
  batches    ConsumerConnector, one stream, `for batch in stream.batches()`: the time the batch came
  scala      the Scala 1.1.1 high-level consumer (tests/harness/java/ScalaBench.java --record), one
             stream, in its own JVM: the time its iterator's next() returned it
A message's latency is that time minus the time its acknowledgement reached the producer's delivery
callback (the producer polls every millisecond). Both clocks are CLOCK_MONOTONIC (Python's
time.monotonic_ns, Java's System.nanoTime on Linux), one machine. Start-up is not measured: each
consumer has joined and is fetching before production begins (a second of settling). Messages a
contender never saw are counted and make the run fail. Each round prints p50, p99, p99.9 per
contender with the load average at its start; then the medians over the rounds. Last line:
    rate=<n> raw_p50_ms= raw_p99_ms= raw_p999_ms= iterator_p50_ms= ... scala_p999_ms= rounds= loadavg=
(one such line per rate, the last rate's last).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test harness: tests/harness

from harness.scala import JVM_OPTS, bench_command  # noqa: E402
from zkconsumer import ConsumerConnector, ConsumerTimeout  # noqa: E402
from zkconsumer.consumer.fetcher import FetchSettings  # noqa: E402
from zkconsumer.testing import kafka  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, LocalCluster  # noqa: E402

PARTITIONS = 8
SIZE = 100
Seen = dict[tuple[int, int], int]  # (partition, offset) -> monotonic ns


# ---------------------------------------------------------------------------------------------- producer


def produce_steady(bootstrap: str, topic: str, rate: int, seconds: float, out: Path) -> None:
    """Run in a process of its own: `rate` msg/s for `seconds`; writes "<partition> <offset> <ack ns>" lines."""
    acked: list[tuple[int, int, int]] = []

    def delivered(error: object, msg: object) -> None:
        if error is None:
            acked.append((msg.partition(), msg.offset(), time.monotonic_ns()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    payload = b"x" * SIZE
    total, sent = int(rate * seconds), 0
    start = time.monotonic()
    while sent < total:
        due = min(total, int((time.monotonic() - start) * rate) + 1)
        while sent < due:
            producer.produce(topic, payload, partition=sent % PARTITIONS, on_delivery=delivered)
            sent += 1
        producer.poll(0)
        time.sleep(0.001)
    producer.flush(30)
    out.write_text("".join(f"{p} {o} {t}\n" for p, o, t in acked))


def read_triples(path: Path) -> Seen:
    out: Seen = {}
    for line in path.read_text().splitlines():
        p, o, t = line.split()
        out[(int(p), int(o))] = int(t)
    return out


# ---------------------------------------------------------------------------------------------- contenders


class Reader:
    """One contender reading in a thread of this process (or driving its JVM) until told to stop."""

    def __init__(self, run: Callable[[threading.Event, Seen], None], *, live: bool = True) -> None:
        self.live = live  # False: `seen` is filled only once stopped (the JVM writes its record at exit)
        self.seen: Seen = {}
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._run = run
        self.thread = threading.Thread(target=self._main, name="latency-reader", daemon=True)

    def _main(self) -> None:
        try:
            self._run(self.ready, self.seen)
        except BaseException as exc:  # noqa: BLE001 - reported by the driver
            self.error = exc
            self.ready.set()


def raw_reader(bootstrap: str, topic: str) -> Reader:
    def run(ready: threading.Event, seen: Seen) -> None:
        settings = FetchSettings(
            bootstrap_servers=bootstrap, group_id=f"lat-raw-{uuid.uuid4().hex[:6]}", client_id="latency-raw"
        )
        consumer = Consumer(settings.consumer_config())
        consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(PARTITIONS)])
        consumer.consume(1, 1.0)  # resolves the end offsets
        ready.set()
        clock, consume, poll = time.monotonic_ns, consumer.consume, consumer.poll
        while not reader.stop.is_set():
            # consume(n, timeout) waits for n messages or the timeout, whichever comes first: at a
            # steady rate below n per timeout that is the whole timeout. Take what is there at once,
            # else wait for the first message only (poll) and then take what came with it.
            batch = consume(10000, 0)
            if not batch:
                first = poll(0.1)
                batch = [first, *consume(9999, 0)] if first is not None else []
            for m in batch:
                if m.error() is None:
                    m.value()
                    seen[(m.partition(), m.offset())] = clock()  # type: ignore[index]
        consumer.close()

    reader = Reader(run)
    return reader


def connector(zookeeper: str) -> ConsumerConnector:
    return ConsumerConnector(
        {
            "zookeeper.connect": zookeeper,
            "group.id": f"lat-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "largest",
            "auto.commit.enable": "false",
            "consumer.timeout.ms": 100,
        }
    )


def iterator_reader(zookeeper: str, topic: str) -> Reader:
    def run(ready: threading.Event, seen: Seen) -> None:
        with connector(zookeeper) as conn:
            stream = conn.create_message_streams({topic: 1})[topic][0]
            ready.set()
            clock = time.monotonic_ns
            while not reader.stop.is_set():
                try:
                    for m in stream:
                        m.value()
                        seen[(m.partition(), m.offset())] = clock()  # type: ignore[index]
                except ConsumerTimeout:
                    pass

    reader = Reader(run)
    return reader


def batches_reader(zookeeper: str, topic: str) -> Reader:
    def run(ready: threading.Event, seen: Seen) -> None:
        with connector(zookeeper) as conn:
            batches = conn.create_message_streams({topic: 1})[topic][0].batches()
            ready.set()
            while not reader.stop.is_set():
                try:
                    for batch in batches:
                        now = time.monotonic_ns()
                        for m in batch:
                            m.value()
                            seen[(m.partition(), m.offset())] = now  # type: ignore[index]
                except ConsumerTimeout:
                    pass

    reader = Reader(run)
    return reader


def scala_reader(zookeeper: str, topic: str, workdir: Path) -> Reader:
    def run(ready: threading.Event, seen: Seen) -> None:
        # The heap cap only: the JIT left at its default (C2), as a deployment runs it.
        command, out = bench_command(
            zookeeper, topic, workdir, reset="largest", jvm_opts=JVM_OPTS[:1], mode=("--record",)
        )
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as jvm:
            assert jvm.stdout is not None
            if jvm.stdout.readline().strip() != "READY":
                raise RuntimeError(f"the Scala consumer did not start (exit {jvm.wait(10)})")
            time.sleep(1.0)  # its fetcher thread starts after createMessageStreams returns
            ready.set()
            reader.stop.wait()
            jvm.send_signal(signal.SIGTERM)
            jvm.wait(60)
        seen.update(read_triples(out))

    reader = Reader(run, live=False)
    return reader


# ---------------------------------------------------------------------------------------------- one run


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def one_run(
    make: Callable[[str], Reader], bootstrap: str, rate: int, seconds: float, workdir: Path
) -> dict[str, float]:
    topic = f"latency-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(bootstrap, topic, PARTITIONS)
    reader = make(topic)
    reader.thread.start()
    if not reader.ready.wait(120) or reader.error is not None:
        raise SystemExit(f"a reader did not start: {reader.error!r}")
    time.sleep(1.0)  # settling: positions resolved, fetch requests in flight
    acks = workdir / f"acks-{topic}"
    producer = [sys.executable, __file__, "--produce", bootstrap, topic, str(rate), str(seconds), str(acks)]
    subprocess.run(producer, check=True, timeout=seconds + 120)
    acked = read_triples(acks)
    deadline = time.monotonic() + (20 if reader.live else 3)
    while time.monotonic() < deadline and not (reader.live and len(reader.seen) >= len(acked)):
        time.sleep(0.1)
    reader.stop.set()
    reader.thread.join(90)
    if reader.error is not None:
        raise SystemExit(f"a reader failed: {reader.error!r}")
    missing = [k for k in acked if k not in reader.seen]
    if missing:
        raise SystemExit(f"{len(missing)} of {len(acked)} acknowledged messages never arrived, e.g. {missing[:3]}")
    latencies = [(reader.seen[k] - t) / 1e6 for k, t in acked.items()]
    return {q: percentile(latencies, f) for q, f in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="5000,50000", help="comma-separated msg/s (default 5000,50000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="production per run (default 10)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--contenders", default="raw,iterator,batches,scala")
    parser.add_argument(
        "--produce", nargs=5, metavar=("BOOTSTRAP", "TOPIC", "RATE", "SECONDS", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.produce:
        bootstrap, topic, rate, seconds, out = args.produce
        produce_steady(bootstrap, topic, int(rate), float(seconds), Path(out))
        return 0
    names = args.contenders.split(",")
    workdir = Path(tempfile.mkdtemp(prefix="zkconsumer-latency-"))
    with LocalCluster(brokers=1, chroot="/latency", jvm_opts=SERVER_JVM_OPTS, workdir=workdir / "cluster") as cluster:
        zk, boot = cluster.zookeeper_connect, cluster.bootstrap_servers
        makers: dict[str, Callable[[str], Reader]] = {
            "raw": lambda t: raw_reader(boot, t),
            "iterator": lambda t: iterator_reader(zk, t),
            "batches": lambda t: batches_reader(zk, t),
            "scala": lambda t: scala_reader(zk, t, workdir),
        }
        unknown = set(names) - set(makers)
        if unknown:
            parser.error(f"unknown contenders {sorted(unknown)} (known: {', '.join(makers)})")
        lines = []
        for rate in map(int, args.rates.split(",")):
            runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
            loads = []
            for round_no in range(1, args.rounds + 1):
                for name in names:
                    loads.append(os.getloadavg()[0])
                    result = one_run(makers[name], boot, rate, args.seconds, workdir)
                    runs[name].append(result)
                    print(
                        f"rate {rate:,} round {round_no} {name:9s} load {loads[-1]:5.2f}  latency ms p50 "
                        f"{result['p50']:7.2f} p99 {result['p99']:7.2f} p99.9 {result['p999']:7.2f}",
                        flush=True,
                    )
            medians = {
                n: {q: statistics.median(r[q] for r in rs) for q in ("p50", "p99", "p999")} for n, rs in runs.items()
            }
            for n, m in medians.items():
                print(f"rate {rate:,} median {n:9s} p50 {m['p50']:7.2f} p99 {m['p99']:7.2f} p99.9 {m['p999']:7.2f}")
            lines.append(
                f"rate={rate} "
                + " ".join(f"{n}_{q}_ms={m[q]:.2f}" for n, m in medians.items() for q in ("p50", "p99", "p999"))
                + f" rounds={args.rounds} loadavg={statistics.median(loads):.2f}"
            )
        for line in lines:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
