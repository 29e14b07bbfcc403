"""Where a message's time goes between consume() and the application, without a cluster (CPU only).

    .venv/bin/python scripts/bench/delivery_cost.py --messages 2000000

Builds consume()-sized batches of confluent_kafka.Message objects (8 partitions in runs, 100-byte
values) once, then times, in CPU ns per message (process time, so a loaded machine inflates it less;
GC off; best of --repeat):
  loop       the bench's raw loop body over a batch: error() check + len(value())
  split      runs.split_runs over a batch (the fetcher's per-message work besides consume())
  iterator   ConsumerIterator over queued chunks, `for msg in stream` + len(msg.value())
  batches    next_batch() over the same chunks + a loop with len(msg.value())
and the parts of a one-thread loop without split_runs (throughput.py's row a4), per message:
  errors     any(map(Message.error, batch)): the error check a batch needs before it is handed out
  last_*     ways to find each partition's last offset in a batch (what settles the position of a
             batch handed out whole), each also returning the partitions it found:
             last_dict   dict(zip(map(partition), map(offset))): the last write per key wins
             last_msgs   dict(zip(map(partition), batch)): the last message per partition, offset() of those
             last_rindex the partitions backwards + set() + one list.index per partition (C scans)
             last_spans  list(map(partition)) + runs.spans (galloping, verified by list.count)
  a3         throughput.py's row a3 (split_runs + a real ConsumerIterator in the consuming thread)
             over the same batches, + len(msg.value())
  a4         throughput.py's row a4 (OneThreadLoop: errors + a stoppable compress per batch,
             positions folded by last_spans every 1 or every 4 batches), + len(msg.value())
consume() itself (building the Message objects in C) is not here: it is the same in every reader.
Last line: loop_ns= split_ns= iterator_ns= batches_ns= iterator_overhead_ns= batches_overhead_ns=
errors_ns= last_dict_ns= last_msgs_ns= last_rindex_ns= last_spans_ns= a3_ns= a4_fold1_ns= a4_ns=
a3_overhead_ns= a4_overhead_ns= (the a3/a4 rows less the raw loop body: what they add to consume())
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from confluent_kafka import Message

from zkconsumer.consumer.chunks import Chunk, PartitionTopicInfo, StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator, DeliveryGate
from zkconsumer.consumer.fetcher.runs import spans, split_runs
from zkconsumer.errors import ConsumerTimeout

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput  # noqa: E402  (rows a3 and a4's code, timed here without a broker)

PARTITIONS = 8
BATCH = 10_000
_error, _partition, _offset = Message.error, Message.partition, Message.offset


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
    """CPU ns per message (process time: a shared machine's load does not count), best of `repeat`
    (GC off while timing, as a steady state mostly is)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        began = time.process_time_ns()
        fn()
        times.append(time.process_time_ns() - began)
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


def errors(batches: list[list[Message]]) -> None:
    for batch in batches:
        if any(map(_error, batch)):
            raise AssertionError("no error messages here")


def last_dict(batch: list[Message]) -> dict[int, int]:
    return dict(zip(map(_partition, batch), map(_offset, batch)))


def last_msgs(batch: list[Message]) -> dict[int, int]:
    return {p: m.offset() for p, m in dict(zip(map(_partition, batch), batch)).items()}


def last_rindex(batch: list[Message]) -> dict[int, int]:
    backwards = list(map(_partition, reversed(batch)))
    n = len(batch) - 1
    return {p: batch[n - backwards.index(p)].offset() for p in set(backwards)}


def last_spans(batch: list[Message]) -> dict[int, int]:
    partitions = list(map(_partition, batch))
    return {partitions[i]: batch[j - 1].offset() for i, j in spans(partitions)}


def per_batch(fn: Callable[[list[Message]], dict[int, int]]) -> Callable[[list[list[Message]]], None]:
    def run(batches: list[list[Message]]) -> None:
        for batch in batches:
            fn(batch)

    return run


class Premade:
    """consume() handing out the premade batches (fresh list objects: the loops append a sentinel)."""

    def __init__(self, batches: list[list[Message]]) -> None:
        self._batches = iter(batches)

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        batch = next(self._batches, None)
        if batch is None:
            raise StopIteration
        return list(batch)


def drain(messages: Iterator[Message]) -> None:
    nbytes = 0
    try:
        for msg in messages:
            nbytes += len(msg.value())
    except (StopIteration, RuntimeError):  # Premade ran out (a generator turns StopIteration into this)
        pass


def caller(batches: list[list[Message]]) -> Callable[[], None]:
    """throughput.py's row a3 without the broker: split_runs + a real ConsumerIterator, one thread."""
    it, _ = throughput.caller_iterator(Premade(batches), "bench")
    return lambda: drain(iter(it))


def lean(batches: list[list[Message]], fold_every: int) -> Callable[[], None]:
    """throughput.py's row a4 without the broker (OneThreadLoop)."""
    loop = throughput.OneThreadLoop(Premade(batches), PARTITIONS, DeliveryGate(), fold_every)
    return lambda: drain(iter(loop))


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
    errors_ns = best(args.repeat, n, lambda: errors(data))
    lasts = {f.__name__: f for f in (last_dict, last_msgs, last_rindex, last_spans)}
    for f in lasts.values():  # all four agree
        assert f(data[0]) == last_dict(data[0]) == {p: (BATCH // PARTITIONS) - 1 for p in range(PARTITIONS)}
    last_ns = {name: best(args.repeat, n, lambda f=f: per_batch(f)(data)) for name, f in lasts.items()}
    caller_ns = min(best(1, n, caller(data)) for _ in range(args.repeat))
    lean_ns = {k: min(best(1, n, lean(data, k)) for _ in range(args.repeat)) for k in (1, 4)}
    print(f"messages={n} in batches of {BATCH}, {PARTITIONS} partitions, {args.size}-byte values")
    for name, ns in (
        ("raw loop body", loop_ns),
        ("split_runs", split_ns),
        ("iterator", iter_ns),
        ("batches()", batch_ns),
        ("errors check", errors_ns),
        *last_ns.items(),
        ("a3 split+iterator", caller_ns),
        ("a4 lean, fold every 1", lean_ns[1]),
        ("a4 lean, fold every 4", lean_ns[4]),
    ):
        print(f"  {name:<24} {ns:7.1f} ns/message")
    print(
        f"loop_ns={loop_ns:.1f} split_ns={split_ns:.1f} iterator_ns={iter_ns:.1f} batches_ns={batch_ns:.1f} "
        f"iterator_overhead_ns={iter_ns + split_ns - loop_ns:.1f} "
        f"batches_overhead_ns={batch_ns + split_ns - loop_ns:.1f} errors_ns={errors_ns:.1f} "
        + "".join(f"{name}_ns={ns:.1f} " for name, ns in last_ns.items())
        + f"a3_ns={caller_ns:.1f} a4_fold1_ns={lean_ns[1]:.1f} a4_ns={lean_ns[4]:.1f} "
        f"a3_overhead_ns={caller_ns - loop_ns:.1f} a4_overhead_ns={lean_ns[4] - loop_ns:.1f} "
        f"loadavg={os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
