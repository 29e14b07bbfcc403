"""Handover cost per partition: incremental rebalancing vs. Scala's stop-the-world, same events.

    .venv/bin/python scripts/bench/handover.py --members 6 --partitions 24 --events 10

For each mode (zkconsumer.rebalance.incremental=true, then false) one group of member processes
reads one topic under steady production while members alternately join and leave cleanly
(`--events` in all). From the chaos observer's owner-node history and every delivery it reports,
per mode:
  interrupted   partitions whose owner node was absent at all, per event (a partition that a
                rebalance released and claimed again counts, even if it stayed with its member)
  unowned       length of each such window: median / p95 / max (owner node deleted -> re-created)
  unowned p-s   total unowned partition-seconds per event
  idle          per partition, the longest gap between two deliveries: median / max over
                partitions (steady state: 1 / per-partition rate)
The last line per mode is machine-readable:
  mode=<m> events=<n> interrupted_per_event=<x> unowned_median_s=<x> unowned_p99_s=<x> unowned_max_s=<x>
  idle_median_s=<x> idle_max_s=<x>
"""
from __future__ import annotations

import argparse
import logging
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

from zkconsumer.testing import chaos_scenarios as sc
from zkconsumer.testing.chaos_history import History
from zkconsumer.testing.chaos_scenarios import ChaosEnv, ChaosSettings
from zkconsumer.testing.cluster import LocalCluster

TOPIC = "handover"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def unowned_windows(h: History) -> list[tuple[int, float]]:
    """(partition, seconds) for every gap between consecutive owner nodes within since..until."""
    gaps = []
    by_partition: dict[int, list] = {}  # type: ignore[type-arg]
    for span in sorted(h.spans, key=lambda s: s.start):
        by_partition.setdefault(span.partition, []).append(span)
    for partition, spans in by_partition.items():
        for before, after in zip(spans, spans[1:]):
            if before.end is None or before.end < h.since or after.start > h.until:
                continue
            gaps.append((partition, max(0.0, after.start - before.end)))
    return gaps


def idle_gaps(h: History) -> dict[int, float]:
    """Per partition, the longest time between two first deliveries within since..until."""
    first: dict[tuple[int, int], float] = {}
    for d in h.deliveries:
        key = (d.partition, d.offset)
        if d.at < first.get(key, float("inf")):
            first[key] = d.at
    times: dict[int, list[float]] = {}
    for (partition, _), at in first.items():
        if h.since <= at <= h.until:
            times.setdefault(partition, []).append(at)
    return {p: max((b - a for a, b in zip(sorted(ts), sorted(ts)[1:])), default=0.0) for p, ts in times.items()}


def run_mode(cluster: LocalCluster, incremental: bool, args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    mode = "incremental" if incremental else "stop-the-world"
    settings = ChaosSettings(rate=args.rate, extra={"zkconsumer.rebalance.incremental": str(incremental).lower()})
    topic = f"{TOPIC}-{mode}"
    env = ChaosEnv(cluster, f"handover-{mode}", {topic: args.partitions}, workdir / mode, settings)
    try:
        env.start()
        env.join(args.members, "process")
        env.settle("start", dwell=3.0)
        for i in range(args.events):
            if i % 2 == 0:
                sc.join_members(env, 1, "process")
            else:
                sc.leave_member(env, env.live[-1])
            time.sleep(args.dwell)
        report = env.finish()
    finally:
        env.close()
    if not report.ok:
        print(report.describe(), file=sys.stderr)
        raise SystemExit(f"{mode}: an invariant broke; numbers would mean nothing")
    h: History = pickle.loads((workdir / mode / "history.pickle").read_bytes())
    windows = [s for _, s in unowned_windows(h)]
    idle = list(idle_gaps(h).values())
    return {"events": args.events, "interrupted_per_event": len(windows) / args.events,
            "unowned_median_s": statistics.median(windows) if windows else 0.0,
            "unowned_p95_s": percentile(windows, 0.95), "unowned_p99_s": percentile(windows, 0.99),
            "unowned_max_s": max(windows, default=0.0),
            "unowned_partition_s_per_event": sum(windows) / args.events,
            "idle_median_s": statistics.median(idle) if idle else 0.0, "idle_max_s": max(idle, default=0.0)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--partitions", type=int, default=24)
    parser.add_argument("--events", type=int, default=10)
    parser.add_argument("--rate", type=float, default=240.0, help="messages/s over all partitions")
    parser.add_argument("--dwell", type=float, default=2.0, help="seconds of traffic after each event")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="zkconsumer-handover-"))
    print(f"members={args.members} partitions={args.partitions} events={args.events} "
          f"rate={args.rate:.0f}/s workdir={workdir}", flush=True)
    results = {}
    with LocalCluster(brokers=1, workdir=workdir / "cluster") as cluster:
        for incremental in (True, False):
            results["incremental" if incremental else "stop-the-world"] = run_mode(cluster, incremental, args,
                                                                                   workdir)
    print(f"\n{'mode':<16}{'interrupted/event':>18}{'unowned med':>13}{'p95':>8}{'max':>8}"
          f"{'unowned p-s/event':>19}{'idle med':>10}{'idle max':>10}")
    for mode, r in results.items():
        print(f"{mode:<16}{r['interrupted_per_event']:>18.1f}{r['unowned_median_s']:>12.2f}s"
              f"{r['unowned_p95_s']:>7.2f}s{r['unowned_max_s']:>7.2f}s{r['unowned_partition_s_per_event']:>18.2f}s"
              f"{r['idle_median_s']:>9.2f}s{r['idle_max_s']:>9.2f}s")
    for mode, r in results.items():
        print(f"mode={mode} events={r['events']} interrupted_per_event={r['interrupted_per_event']:.2f} "
              f"unowned_median_s={r['unowned_median_s']:.3f} unowned_p99_s={r['unowned_p99_s']:.3f} "
              f"unowned_max_s={r['unowned_max_s']:.3f} "
              f"idle_median_s={r['idle_median_s']:.3f} idle_max_s={r['idle_max_s']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
