"""Where a message's time goes between consume() and the application, without a cluster (CPU only).

    .venv/bin/python scripts/bench/delivery_cost.py --messages 2000000

Builds consume()-sized batches of confluent_kafka.Message objects (8 partitions in runs, 100-byte
values) once, then times, in ns per message (best of --repeat):
  loop       the bench's raw loop body over a batch: error() check + len(value())
  split      runs.split_runs over a batch (the fetcher's per-message work besides consume())
  iterator   ConsumerIterator over queued chunks, `for msg in stream` + len(msg.value())
  batches    next_batch() over the same chunks + a loop with len(msg.value())
consume() itself (building the Message objects in C) is not here: it is the same in every reader.
Last line: loop_ns= split_ns= iterator_ns= batches_ns= iterator_overhead_ns= batches_overhead_ns=
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable

from confluent_kafka import Message

from zkconsumer.chunks import Chunk, PartitionTopicInfo, StreamQueue
from zkconsumer.delivery import ConsumerIterator
from zkconsumer.errors import ConsumerTimeout
from zkconsumer.runs import split_runs

PARTITIONS = 8
BATCH = 10_000


def make_batches(total: int, size: int) -> list[list[Message]]:
    value = b"x" * size
    per_run = BATCH // PARTITIONS
    batches, offsets = [], [0] * PARTITIONS
    while sum(len(b) for b in batches) < total:
        batch = []
        for p in range(PARTITIONS):
            batch += [Message(topic="bench", partition=p, offset=offsets[p] + i, value=value) for i in range(per_run)]
            offsets[p] += per_run
        batches.append(batch)
    return batches


def best(repeat: int, count: int, fn: Callable[[], None]) -> float:
    """ns per message, best of `repeat` (GC off while timing, as a steady state mostly is)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        began = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - began)
        gc.enable()
    return min(times) / count


def loop(batches: list[list[Message]]) -> None:
    seen = nbytes = 0
    for batch in batches:
        for m in batch:
            if m.error() is None:
                seen += 1
                nbytes += len(m.value())


def split(batches: list[list[Message]]) -> None:
    for batch in batches:
        split_runs(batch)


def queued(batches: list[list[Message]]) -> ConsumerIterator:
    """Every batch's runs as chunks of one queue (what the fetcher would have queued); the iterator
    times out (0 ms) once they are drained."""
    runs = [run for batch in batches for run in split_runs(batch)]
    queue = StreamQueue(len(runs), "bench")
    infos = {p: PartitionTopicInfo("bench", p, f"t-{p}", queue, 0, None) for p in range(PARTITIONS)}
    for run in runs:
        queue.offer(Chunk(infos[run[0].partition()], run))
    return ConsumerIterator(queue, consumer_timeout_ms=0)


def iterate(batches: list[list[Message]]) -> Callable[[], None]:
    it = queued(batches)

    def run() -> None:
        nbytes = 0
        try:
            for msg in it:
                nbytes += len(msg.value())
        except ConsumerTimeout:
            pass

    return run


def batches_api(batches: list[list[Message]]) -> Callable[[], None]:
    it = queued(batches)

    def run() -> None:
        nbytes = 0
        try:
            while True:
                for msg in it.next_batch():
                    nbytes += len(msg.value())
        except ConsumerTimeout:
            pass

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = make_batches(args.messages, args.size)
    n = sum(len(b) for b in data)
    loop_ns = best(args.repeat, n, lambda: loop(data))
    split_ns = best(args.repeat, n, lambda: split(data))
    iter_ns = min(best(1, n, iterate(data)) for _ in range(args.repeat))
    batch_ns = min(best(1, n, batches_api(data)) for _ in range(args.repeat))
    print(f"messages={n} in batches of {BATCH}, {PARTITIONS} partitions, {args.size}-byte values")
    for name, ns in (
        ("raw loop body", loop_ns),
        ("split_runs", split_ns),
        ("iterator", iter_ns),
        ("batches()", batch_ns),
    ):
        print(f"  {name:<14} {ns:7.1f} ns/message")
    print(
        f"loop_ns={loop_ns:.1f} split_ns={split_ns:.1f} iterator_ns={iter_ns:.1f} batches_ns={batch_ns:.1f} "
        f"iterator_overhead_ns={iter_ns + split_ns - loop_ns:.1f} "
        f"batches_overhead_ns={batch_ns + split_ns - loop_ns:.1f} loadavg={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
