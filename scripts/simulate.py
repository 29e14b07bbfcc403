#!/usr/bin/env python3
"""Run seeded fault schedules against simulated group members; print failures with a shrunk trace.

    scripts/simulate.py --schedules 100000 --seed 0 [--actors all|core]

Besides the faults (expiries, dropped links, slow and failing requests, pauses at every ZooKeeper
call), `--actors all` (the default) draws every actor of the simulation tier: a stale Scala member
deleting owner paths blindly, an operator deleting or rewriting nodes (sim_schedule), a host
suspend and a follower that lost its leader (sim_lease_schedule), a Scala joiner with its retry
budget and give-up beside members that linger, and a leader cut from the majority that answers
syncs for a tick (sim_actors_schedule). `lease` stops at the lease's actors; `core` keeps to the
first two, the schedules tests/sim/test_schedules.py runs.

The last line is machine-readable: schedules=N violations=V per_s=X
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test harness: tests/harness

from harness.sim_actors_schedule import ActorsSchedule  # noqa: E402
from harness.sim_lease_schedule import LeaseSchedule  # noqa: E402
from harness.sim_schedule import Options, Schedule, shrink  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedules", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0, help="first seed; schedule i uses seed + i")
    parser.add_argument("--members", type=int, default=Options.members)
    parser.add_argument("--partitions", type=int, default=Options.partitions)
    parser.add_argument("--steps", type=int, default=Options.steps)
    parser.add_argument("--fault-rate", type=float, default=Options.fault_rate)
    parser.add_argument("--show", type=int, default=3, help="failing schedules to shrink and print")
    parser.add_argument(
        "--actors", choices=("all", "lease", "core"), default="all", help="which actors besides the faults (see above)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)
    options = Options(members=args.members, partitions=args.partitions, steps=args.steps, fault_rate=args.fault_rate)
    kind = {"all": ActorsSchedule, "lease": LeaseSchedule, "core": Schedule}[args.actors]
    began = time.monotonic()
    failing = []
    for i in range(args.schedules):
        result = kind(args.seed + i, options).run()
        if result.violations:
            failing.append(result.seed)
            if len(failing) <= args.show:
                small = shrink(result.seed, options, kind)
                print(f"FAILED seed {result.seed}: {result.violations[0]}")
                print("  shrunk trace:\n    " + "\n    ".join((small.violations[:1] and small.trace) or result.trace))
        if (i + 1) % 1000 == 0:
            print(f"... {i + 1} schedules, {len(failing)} failing", file=sys.stderr, flush=True)
    elapsed = time.monotonic() - began
    if failing:
        print("failing seeds:", " ".join(map(str, failing[:50])))
    print(f"schedules={args.schedules} violations={len(failing)} per_s={args.schedules / elapsed:.1f}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
