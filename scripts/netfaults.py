"""Seeded network faults against zkconsumer (and Scala 1.1.1) groups on a 3-server ensemble with 3 brokers, each in a namespace.

    sudo .venv/bin/python scripts/netfaults.py --events 5 --seed 1 [--scala] [--session-ms 4000]

Everything runs in a network lab (zkconsumer.testing.netlab: a namespace per ZooKeeper server, per
broker and per member, on a private bridge; root is needed). Two zkconsumer members (hosts m1, m2)
consume topic nf-ours; with --scala two Scala 1.1.1 members (s1, s2) consume nf-scala the same way,
and every fault hits the same slot of both groups at once. A producer in the root namespace writes
numbered messages to both topics throughout (acks=all, replication 3, min.insync.replicas 2).

Fault kinds (harness/netfault_driver.py), every kind once per round of five in a seeded order,
each healed after a seeded time:
  zk-cut       a member cut from every ZooKeeper server, brokers still reachable, past its session;
  broker-cut   a member cut from every broker, ZooKeeper still reachable;
  leader       the ensemble leader isolated, or the ensemble split 2 | 1 with the leader and a member
               of each group in the minority;
  link         300 ms each way (the relay: this kernel has no netem) or 10 % loss (nftables numgen)
               on a member's link to ZooKeeper or to the brokers;
  broker-kill  kill -9 of a partition's leader broker, restarted after the hold.

The checker (harness/netfault_checks.py) prints one line per fault, one per group, and last::

    events= lost= overlaps= duplicates= ours_overlap_s= scala_overlap_s= ours_deliver_after_cut_s= max_converge_s=

lost/overlaps/duplicates are zkconsumer's (whole run; duplicates: unexplained only); *_overlap_s
the longest time two members of a group delivered one partition at once in any one fault
(delivery logs on CLOCK_MONOTONIC); ours_deliver_after_cut_s the longest a zkconsumer member cut
from ZooKeeper went on delivering; max_converge_s the slowest zkconsumer convergence after a heal.
Exit status 1 if zkconsumer broke an invariant, overlapped, or delivered past its lease.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test harness: tests/harness

from harness import netfault_checks as checks  # noqa: E402
from harness.chaos_scenarios import ChaosSettings  # noqa: E402
from harness.lab_members import LabGroup  # noqa: E402
from harness.netfault_driver import NetRun, run_faults, schedule  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402
from zkconsumer.testing.netlab import NetLab  # noqa: E402

PARTITIONS = 4


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=5, help="faults to inject (default 5: each kind once)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scala", action="store_true", help="real Scala 1.1.1 members take the same faults")
    parser.add_argument("--session-ms", type=int, default=4000, help="zookeeper.session.timeout.ms of every member")
    parser.add_argument("--rate", type=float, default=60.0, help="messages/s per topic")
    parser.add_argument("--workdir", type=Path, help="keep logs and histories here (default: a temporary folder)")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    if not args.verbose:  # the harness's own clients lose their links on purpose
        logging.getLogger("kazoo").setLevel(logging.ERROR)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="zkc-netfaults-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    kinds = schedule(args.events, rng)
    settings = ChaosSettings(session_timeout_ms=args.session_ms, rate=args.rate, converge_timeout_s=60.0)
    lease_s = 0.8 * args.session_ms / 1000.0
    began = time.monotonic()
    print(f"netfaults: seed {args.seed}, faults {' '.join(kinds)}; workdir {workdir}", flush=True)
    with NetLab() as lab:
        cluster = LocalCluster(zookeeper_servers=3, brokers=3, chroot="/nf", lab=lab, workdir=workdir / "cluster")
        with cluster:
            print(f"cluster up in {cluster.start_seconds:.1f}s (lab {lab.subnet})", flush=True)
            groups = {"ours": LabGroup(cluster, lab, "nf-ours", {"nf-ours": PARTITIONS}, workdir / "ours", settings)}
            if args.scala:
                groups["scala"] = LabGroup(
                    cluster, lab, "nf-scala", {"nf-scala": PARTITIONS}, workdir / "scala", settings
                )
            try:
                for group in groups.values():
                    group.start()
                for name, group in groups.items():
                    for i in (1, 2):
                        group.add(f"s{i}", "scala") if name == "scala" else group.add(f"m{i}", "process")
                for group in groups.values():
                    group.env.settle(dwell=2.0)
                run = NetRun(lab, cluster, groups, rng, args.session_ms / 1000.0)
                run_faults(run, kinds, lambda: round(rng.uniform(1.0, 3.0), 2))
                verdicts = []
                for name, group in groups.items():
                    report = group.env.finish()
                    verdicts.append(checks.judge(name, group.env.checker.settled_history(), report, run.records))
            finally:
                for group in groups.values():
                    group.close()
    records = [dataclasses.asdict(r) for r in run.records]
    (workdir / "faults.json").write_text(json.dumps(records, indent=1))  # histories: <group>/history.pickle
    for line in checks.fault_lines(run.records, verdicts):
        print(line)
    ours = verdicts[0]
    scala = verdicts[1] if len(verdicts) > 1 else None
    for verdict in verdicts:
        print(checks.group_line(verdict))
    failed = checks.failures(ours, lease_s)
    for line in failed:
        print(f"FAIL {line}")
    if failed:
        print(ours.report.describe())
    print(f"lease_s={lease_s:.2f} seconds={time.monotonic() - began:.0f}")
    print(checks.summary_line(len(kinds), ours, scala))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
