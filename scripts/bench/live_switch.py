"""The live-switch audit (issue #54, "Measure"): every delivery logged, lost/overlap/duplicates/gaps judged.

    .venv/bin/python scripts/bench/live_switch.py [--paths rolling,live] [--rounds 1] [--members 6]
        [--partitions 24] [--rate 2000] [--warm 10] [--hold 10] [--fault none|kill|kill-leader|
        coordinator|expire|add-partitions|add-topic|kill-switch] [--fault-delay 1] [--brokers 1] [--member-property k=v]

One local cluster (ZooKeeper + ZooKeeper-mode Kafka 3.9.1 from the jars; 3 brokers and replication 3
with --fault coordinator). Per round, each path in turn (the order alternates from round to round),
each on a fresh group and a fresh topic of --partitions partitions, with a producer of numbered
messages at --rate msg/s and --members member processes (tests/harness/switch_member.py: the
ConsumerConnector application API, auto-commit every 1 s), an ownership sampler every 100 ms
(owner nodes, DescribeGroups):
  rolling  today's path through dual commit, as docs/migration.md's path 2 says: restart the members
           one at a time with offsets.storage=kafka + dual.commit.enabled=true, stop the group,
           `zkconsumer migrate offsets --to kafka --execute`, start them with zkconsumer.coordination=broker
  live     `zkconsumer migrate switch --to broker` while the members run, hold, `--to zookeeper`;
           without that command in this checkout the script says so and exits 3 (no figures)
--fault happens during the switch (rolling: --fault-delay after the first restart; live: while the
command runs; kill-leader, live only: kill -9 of the member whose seat leads the brokers' group, the
one that runs the assignor, found from the members' librdkafka JoinGroup answers, once the switch is
at `handover`; add-topic, live only: the members subscribe by a wildcard, and a topic it matches is
created once the switch is at `handover`). The figures of a path (tests/harness/switch_audit.py): lost (acked, never delivered),
overlap (offsets delivered by two members at overlapping times), duplicates (delivered again, not
overlapping), silence (longest time the group delivered nothing), per-partition gap p99/max, the
longest a partition had neither an owner node nor a brokers' assignment (sampler), and whether
Kafka's committed offsets equal ZooKeeper's: at the switch to broker (rolling: at the stop), read
ZooKeeper, Kafka, ZooKeeper in rounds (rest_equal: seen equal at one instant; rest_unequal: ZooKeeper
held still and Kafka differed; rest_unsettled: ZooKeeper moved in every round), and at every
hand-over, the releasing member's own reads (release_equal / release_unequal: its log's "release
check" lines; an unequal one keeps the owner node and is tried again). Each round prints its figures and the
load; then the medians. The last line:
    <path>_lost= <path>_overlap= <path>_duplicates= <path>_silence_s= <path>_gap_p99_s= <path>_gap_max_s=
    <path>_unowned_max_s= <path>_rest_equal= <path>_rest_unequal= <path>_rest_unsettled=
    <path>_release_equal= <path>_release_unequal= ... fault= rounds= loadavg=
Exit status: 0 done, 1 a path failed to run, 3 a path asked for cannot run in this checkout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test harness: tests/harness

from harness.switch_paths import FAULTS, PATHS, PathUnavailable, Settings  # noqa: E402
from harness.switch_run import AuditRun, has_command  # noqa: E402
from zkconsumer.testing.cluster import SERVER_JVM_OPTS, LocalCluster  # noqa: E402

KEYS = (
    "lost",
    "overlap",
    "duplicates",
    "silence_s",
    "gap_p99_s",
    "gap_max_s",
    "unowned_max_s",
    "rest_equal",
    "rest_unequal",
    "rest_unsettled",
    "release_equal",
    "release_unequal",
)


def run_path(cluster: LocalCluster, workdir: Path, path: str, label: str, args: argparse.Namespace) -> dict[str, float]:
    settings = Settings(
        members=args.members,
        warm=args.warm,
        hold=args.hold,
        fault=args.fault,
        fault_delay=args.fault_delay,
        member_props=dict(p.split("=", 1) for p in args.member_property),
    )
    run = AuditRun(
        cluster, workdir, name=label, partitions=args.partitions, rate=args.rate, replication_factor=args.replication
    )
    load = os.getloadavg()[0]
    try:
        points = PATHS[path](run, settings)
        run.end()
    finally:
        run.close()
    figures = run.figures()
    unowned = run.sampler.unowned_max(run.start_at, run.end_at)
    rest = points[0].verdict  # at the switch to broker (live), at the stop (rolling)
    releases = run.release_checks()
    release_equal = sum(c.equal for c in releases)
    print(
        f"{label:10s} {path:8s} fault={args.fault} lost={figures.lost} overlap={figures.overlap} "
        f"(in {len(figures.overlap_spans)} pairs of spans) duplicates={figures.duplicates} silence={figures.silence_s:.3f}s "
        f"gap p99={figures.gap_p99_s:.3f}s max={figures.gap_max_s:.3f}s (partition {figures.gap_max_partition}) "
        f"unowned_max={unowned:.2f}s Kafka = ZooKeeper at {points[0].label.removeprefix('at ')}: "
        f"{len(rest.equal)} equal, {len(rest.unequal)} unequal, {len(rest.unsettled)} unsettled; "
        f"release checks {release_equal} equal, {len(releases) - release_equal} unequal; delivered={figures.delivered} acked={figures.acked} "
        f"(delivered, never acked: {figures.unacked_delivered}) "
        f"samples={len(run.sampler.samples)} (failed {run.sampler.errors}) load {load:.2f} at its start",
        flush=True,
    )
    for topic in sorted(run.added_topics):
        more = run.figures(topic)
        print(
            f"    topic {topic} created mid-switch: acked={more.acked} lost={more.lost} overlap={more.overlap} "
            f"duplicates={more.duplicates} by {sorted({d.member for d in run.deliveries(topic)})}"
        )
    for a, b in figures.overlap_spans[:5]:
        print(f"    overlap on partition {a.partition}: {a} / {b}")
    for ds in figures.duplicate_examples:
        seen = ", ".join(f"{d.member} at {d.at - run.start_at:.3f}s" for d in ds)
        print(f"    duplicate {ds[0].partition}:{ds[0].offset} delivered by {seen} (s into the window)")
    for at, what in run.notes:
        if any(w in what for w in ("kill", "expired", "partitions added", "restarted", "stopped every")):
            print(f"    {at - run.start_at:8.3f}s {what}")
    for p in points:
        print(f"    {p.describe()}")
    return {
        "lost": figures.lost,
        "overlap": figures.overlap,
        "duplicates": figures.duplicates,
        "silence_s": figures.silence_s,
        "gap_p99_s": figures.gap_p99_s,
        "gap_max_s": figures.gap_max_s,
        "unowned_max_s": unowned,
        "rest_equal": len(rest.equal),
        "rest_unequal": len(rest.unequal),
        "rest_unsettled": len(rest.unsettled),
        "release_equal": release_equal,
        "release_unequal": len(releases) - release_equal,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="rolling,live")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--partitions", type=int, default=24)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--warm", type=float, default=10.0, help="seconds of delivery before the switch")
    parser.add_argument("--hold", type=float, default=10.0, help="seconds after each step")
    parser.add_argument("--fault", choices=FAULTS, default="none")
    parser.add_argument("--fault-delay", type=float, default=1.0, help="seconds into the switch")
    parser.add_argument("--brokers", type=int, default=None, help="default 1 (3 with --fault coordinator)")
    parser.add_argument("--member-property", action="append", default=[], help="k=v for every member")
    parser.add_argument("--workdir", help="keep the delivery logs and the JVM logs here (default: a temporary folder)")
    args = parser.parse_args()
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        parser.error(f"unknown path(s) {unknown}; known: {sorted(PATHS)}")
    if "live" in paths and not has_command("migrate", "switch"):
        print(
            "live path: this checkout has no `zkconsumer migrate switch` command (`zkconsumer migrate switch "
            "--help` fails), so the live switch cannot be measured; no figures. Run --paths rolling for the baseline.",
            flush=True,
        )
        return 3
    if args.brokers is None:
        args.brokers = 3 if args.fault == "coordinator" else 1
    if args.fault == "coordinator" and args.brokers < 2:
        parser.error("--fault coordinator needs --brokers 2 or more (the coordinator must have somewhere to move)")
    args.replication = min(3, args.brokers)
    results: dict[str, dict[str, list[float]]] = {p: {k: [] for k in KEYS} for p in paths}
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="live-switch-bench-") as scratch,
        LocalCluster(
            brokers=args.brokers,
            chroot="/liveswitch",
            jvm_opts=SERVER_JVM_OPTS,
            workdir=Path(args.workdir or scratch),
            replication_factor=args.replication,
        ) as cluster,
    ):
        tmp = args.workdir or scratch
        for r in range(args.rounds):
            order = paths if r % 2 == 0 else paths[::-1]
            for path in order:
                print(
                    f"round {r + 1} {path}: {args.members} members, {args.partitions} partitions, {args.rate:.0f} msg/s"
                )
                try:
                    got = run_path(cluster, Path(tmp), path, f"r{r + 1}{path}", args)
                except PathUnavailable as exc:
                    print(f"{path}: {exc}; no figures", flush=True)
                    return 3
                except Exception as exc:  # noqa: BLE001 - one line, then the brokers' logs
                    print(f"round {r + 1} {path} failed: {exc}\n{cluster.log_tails()}", flush=True)
                    return 1
                for k in KEYS:
                    results[path][k].append(got[k])
    fields = []
    for path in paths:
        med = {k: statistics.median(v) for k, v in results[path].items()}
        print(f"median {path:8s} " + " ".join(f"{k}={v:g}" for k, v in med.items()))
        fields += [f"{path}_{k}={med[k]:.3f}" if k.endswith("_s") else f"{path}_{k}={med[k]:.0f}" for k in KEYS]
    print(" ".join([*fields, f"fault={args.fault}", f"rounds={args.rounds}", f"loadavg={os.getloadavg()[0]:.2f}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
