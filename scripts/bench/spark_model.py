"""The stream reader inside the model of Spark's micro-batch loop (tests/harness/spark_model.py), over many seeds.

    .venv/bin/python scripts/bench/spark_model.py [--seeds 2000] [--first 0] [--steps 60]

Each seed is one random schedule of produces, triggers, crashes at three points (after the offset log,
after the sink, after the commit log) with Spark's replay, a Scala member taking and returning a
partition, failing ZooKeeper commits, lease blips, broker trouble for one partition, and a
maxOffsetsPerTrigger limit. Prints every seed with a violation (loss, an offset twice in the sink,
ZooKeeper ahead of the deliveries, the query failing), a line per block of 500 seeds, the event
counts, and last `seeds=... violations=... first=... elapsed_s=...`. Exit 1 when a seed found one.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the test harness: tests/harness

from harness import spark_model  # noqa: E402 - after the path above


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, default=60, help="events per seed before the drain")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the reader's warnings (blips, broker trouble) are the point here
    began = time.monotonic()
    bad: list[int] = []
    totals: dict[str, int] = {}
    for n, seed in enumerate(range(args.first, args.first + args.seeds), start=1):
        world = spark_model.run(seed, args.steps)
        for what, count in world.counts.items():
            totals[what] = totals.get(what, 0) + count
        if world.violations:
            bad.append(seed)
            print(f"seed {seed}: {'; '.join(world.violations[:3])}", flush=True)
        if n % 500 == 0 or n == args.seeds:
            print(f"{n} seeds, {len(bad)} with violations, {time.monotonic() - began:.1f} s", flush=True)
    print("events: " + ", ".join(f"{k}={v}" for k, v in sorted(totals.items())))
    print(
        f"seeds={args.seeds} first={args.first} steps={args.steps} violations={len(bad)} "
        f"elapsed_s={time.monotonic() - began:.1f}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
