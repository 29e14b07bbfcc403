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
  leave_unowned_p99_s=<x> join_unowned_p99_s=<x> (windows after a clean leave / a join)
  idle_median_s=<x> idle_max_s=<x>

--mixed runs a group of zkconsumer and real Scala members (1.1.1, or --scala-release's: zkconsumer
members then set the matching zkconsumer.compat.version) instead (half each), twice: with the release
linger (zkconsumer.release.linger.ms, default) and without it (0). Events cycle through join zkconsumer,
join Scala, leave zkconsumer, leave Scala (the oldest of its kind; with --kills every other round of
leaves is a kill -9, whose partitions move once its session expires). With --events-kind join the
group is zkconsumer members and one Scala member, and the events alternate a Scala member joining
and the oldest Scala member leaving, so each Scala joiner's share is taken mostly from ours (the
finding of issue #51: ours linger before releasing to a joiner that has Scala's retry budget); its
Scala members then run with Scala's own rebalance.max.retries and rebalance.backoff.ms. Per run:
  handovers     owner changes between two members, by kind (zk->scala, scala->zk, ...)
  stale         for each hand-over, the messages the new owner delivered below the offset committed
                when it took over (a Scala member starting from an offset read before the old
                owner's last commit); for zk->scala the linger should make it 0
  in-flight     re-deliveries at or above that commit: the one message the old owner's
                application held when it let go (at-least-once: consumed when the next is asked for)
  reg->own      per kind, from a joiner's registration to its last claim of that event: median / p95
  lingers       every linger our members used (their log: "keeping released owner nodes X s", and a
                leave's "leaving X s"): count, median, max, and each value
  stranded      Scala members that gave up (ConsumerRebalanceFailedException, "can't rebalance after
                N retries" in their log: they own nothing until /ids changes) within two retry budgets
                of a hand-over from ours, and Scala joiners that owned no partition in their whole
                life (the bench's groups have more partitions than members: each has a share);
                gave_up counts every give-up (a stranded joiner the watchdog's nudge recovered is
                still counted: it owned nothing meanwhile)
  joiner        zk->scala hand-overs to a Scala member that registered at the event it followed
The last line is machine-readable:
  mixed=1 handovers_zk_scala=<n> stale_zk_scala=<n> stale_zk_scala_nolinger=<n> zk_reg_own_median_s=<x>
  scala_reg_own_median_s=<x> scala_reg_own_median_nolinger_s=<x> unowned_p99_s=<x> stale_handovers=<n>
  overlaps=<n> stranded=<n> gave_up=<n> handovers_zk_scala_lingered=<n> lingers=<n> linger_median_s=<x>
  linger_max_s=<x> handovers_zk_to_scala_joiner=<n> loadavg=<x> (from stale_handovers on: of the run with the linger; lingered: the
  zk->scala hand-overs whose old owner logged a linger within a Scala retry budget before the node went)
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the test harness: tests/harness

from harness import chaos_scenarios as sc  # noqa: E402
from harness.chaos_history import History, Span, wall_offset  # noqa: E402
from harness.chaos_scenarios import ChaosEnv, ChaosSettings  # noqa: E402
from harness.scala import COMPAT_VERSION, DEFAULT_RELEASE  # noqa: E402
from zkconsumer.config.compat import Compat  # noqa: E402
from zkconsumer.testing.cluster import LocalCluster  # noqa: E402

TOPIC = "handover"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def consecutive_spans(h: History) -> Iterator[tuple[Span, Span]]:
    """Every pair of consecutive owner-node lives of one partition, in time order."""
    for key in sorted({(s.topic, s.partition) for s in h.spans}):
        spans = h.partition_spans(*key)
        yield from zip(spans, spans[1:])


def unowned_windows(h: History) -> list[tuple[int, float]]:
    """(partition, seconds) for every gap between consecutive owner nodes within since..until."""
    return [
        (after.partition, max(0.0, after.start - before.end))
        for before, after in consecutive_spans(h)
        if before.end is not None and before.end >= h.since and after.start <= h.until
    ]


def windows_by_event(h: History) -> dict[str, list[float]]:
    """The unowned windows grouped by the driver's event they followed ("clean leave", "1 join")."""
    faults = sorted((n.at, n.detail) for n in h.notes if n.kind == "fault")
    out: dict[str, list[float]] = {}
    for before, after in consecutive_spans(h):
        if before.end is None or before.end < h.since or after.start > h.until:
            continue
        cause = next((what for at, what in reversed(faults) if at <= before.end), "start")
        out.setdefault(cause, []).append(max(0.0, after.start - before.end))
    return out


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
    by_event = windows_by_event(h)
    return {
        "events": args.events,
        "interrupted_per_event": len(windows) / args.events,
        "leave_unowned_p99_s": percentile(by_event.get("clean leave", []), 0.99),
        "join_unowned_p99_s": percentile(by_event.get("1 join", []), 0.99),
        "unowned_median_s": statistics.median(windows) if windows else 0.0,
        "unowned_p95_s": percentile(windows, 0.95),
        "unowned_p99_s": percentile(windows, 0.99),
        "unowned_max_s": max(windows, default=0.0),
        "unowned_partition_s_per_event": sum(windows) / args.events,
        "idle_median_s": statistics.median(idle) if idle else 0.0,
        "idle_max_s": max(idle, default=0.0),
    }


def mixed_events(env: ChaosEnv, args: argparse.Namespace) -> None:
    if args.events_kind == "join":
        for i in range(args.events):
            if i % 2 == 0:
                sc.join_members(env, 1, "scala")
            else:
                sc.leave_member(env, next(m for m in env.live if m.kind == "scala"))
            time.sleep(args.dwell)
        return
    for i in range(args.events):
        kind = ("process", "scala")[i % 2]
        if (i // 2) % 2 == 0:
            sc.join_members(env, 1, kind)  # type: ignore[arg-type]
        else:
            member = next(m for m in env.live if m.kind == kind)
            if args.kills and (i // 4) % 2 == 1:  # every other round of leaves is a kill -9
                with env.fault("kill -9 of a member"):
                    member.kill()
            else:
                sc.leave_member(env, member)
        time.sleep(args.dwell)


def handovers(h: History, kinds: dict[str, str]) -> list[tuple[str, int, int]]:
    """Per owner change: (kind pair like "zk->scala", stale, again).

    again: offsets the new owner delivered while it owned the partition that the old owner had
    already delivered. stale: those of them below the offset committed when the new owner took
    over; the rest is the message the old owner's application held at the release (consumed only
    once it asks for the next: at-least-once), not a stale start.
    """
    delivered: dict[tuple[str, str, int], list[tuple[float, int]]] = {}
    for d in h.deliveries:
        delivered.setdefault((d.member, d.topic, d.partition), []).append((d.at, d.offset))
    commits: dict[tuple[str, int], list[tuple[float, int]]] = {}
    for c in h.commits:
        commits.setdefault((c.topic, c.partition), []).append((c.at, c.offset))
    out = []
    for before, after in consecutive_spans(h):
        if before.member == after.member or not h.since <= after.start <= h.until:
            continue
        key = (after.topic, after.partition)
        # Everything the old owner delivered before the hand-over (a stop-the-world owner splits
        # its ownership into several spans of the same member).
        old = delivered.get((before.member, *key), [])
        last_old = max((o for at, o in old if at <= after.start), default=-1)
        committed = max(((at, o) for at, o in commits.get(key, []) if at <= after.start), default=(0.0, -1))[1]
        end = float("inf") if after.end is None else after.end
        new = {o for at, o in delivered.get((after.member, *key), []) if after.start <= at <= end}
        pair = f"{kinds.get(before.member, '?')}->{kinds.get(after.member, '?')}"
        out.append((pair, sum(1 for o in new if o < committed), sum(1 for o in new if o <= last_old)))
    return out


def reg_to_own(h: History, kinds: dict[str, str]) -> dict[str, list[float]]:
    """Per kind: each registration in the judged window -> the member's last claim before the next event."""
    events = sorted(n.at for n in h.notes if n.kind == "fault")
    out: dict[str, list[float]] = {}
    for inc in h.incarnations:
        if inc.start < h.since or inc.start > h.until:
            continue
        until = next((at for at in events if at > inc.start), h.until)
        starts = [s.start for s in h.spans if s.member == inc.member and inc.start <= s.start <= until]
        if starts:
            out.setdefault(kinds.get(inc.member, "?"), []).append(max(starts) - inc.start)
    return out


# zkconsumer members (tests/harness/chaos_member.py: "%(asctime)s ...") and Scala's log4j ("[%d] ...")
# both stamp lines with the local wall clock, to the millisecond.
_STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
_LINGER = re.compile(r"(keeping released owner nodes|leaving) (\d+(?:\.\d+)?)s after the (?:final )?commit")
_GAVE_UP = "can't rebalance after"


def stamp(line: str) -> float | None:
    """A log line's time on the History's clock (CLOCK_MONOTONIC); None for an unstamped line."""
    found = _STAMP.match(line)
    if found is None:
        return None
    wall = time.mktime(time.strptime(found.group(1), "%Y-%m-%d %H:%M:%S")) + int(found.group(2)) / 1000
    return wall - wall_offset()


def lingers_in(lines: list[str]) -> list[tuple[float, str, float]]:
    """(when, "hand-over" | "leave", seconds) for every linger a zkconsumer member's log reports."""
    out = []
    for line in lines:
        found = _LINGER.search(line)
        at = stamp(line) if found else None
        if found and at is not None:
            out.append((at, "leave" if found.group(1) == "leaving" else "hand-over", float(found.group(2))))
    return out


def give_ups_in(lines: list[str]) -> list[float]:
    """When a Scala member gave up rebalancing: the stamp of the last stamped line at or before each
    "can't rebalance after N retries" (a stack trace's lines carry none)."""
    out, last = [], None
    for line in lines:
        last = stamp(line) or last
        if _GAVE_UP in line and last is not None:
            out.append(last)
    return out


def joiner_handovers(h: History, kinds: dict[str, str]) -> int:
    """zk->scala hand-overs in the judged window whose new owner registered after the last event
    before the hand-over: a Scala member that was joining, not one already in the group."""
    events = sorted(n.at for n in h.notes if n.kind == "fault")
    registered: dict[str, float] = {}
    for inc in h.incarnations:
        registered[inc.member] = min(inc.start, registered.get(inc.member, inc.start))
    count = 0
    for before, after in consecutive_spans(h):
        if before.member == after.member or not h.since <= after.start <= h.until:
            continue
        if kinds.get(before.member) != "zk" or kinds.get(after.member) != "scala":
            continue
        event = max((at for at in events if at <= after.start), default=None)
        count += event is not None and event <= registered.get(after.member, -1.0) <= after.start
    return count


def owned_nothing(h: History, kinds: dict[str, str]) -> set[str]:
    """Scala members that registered in the judged window and never held an owner node in that life."""
    out = set()
    for inc in h.incarnations:
        if kinds.get(inc.member) != "scala" or not h.since <= inc.start <= h.until:
            continue
        end = h.until if inc.end is None else inc.end
        if not any(s.member == inc.member and inc.start <= s.start <= end for s in h.spans):
            out.add(inc.member)
    return out


def stranded_joiners(
    h: History, kinds: dict[str, str], give_ups: dict[str, list[float]], budget_s: float
) -> tuple[int, int]:
    """(stranded, gave_up) in the judged window: every Scala give-up (`give_ups`: Scala member ->
    when); stranded, the Scala members that gave up within two retry budgets of a hand-over from
    ours (an owner node of a zkconsumer member ended by its own delete or by a clean leave's close,
    not by an expiry), together with the Scala joiners that never owned a partition (owned_nothing),
    each member counted once."""
    released = [
        s.end
        for s in h.spans
        if kinds.get(s.member) == "zk" and s.end is not None and s.ended_by not in ("expiry", "deleted-by-other")
    ]
    gave_up = 0
    stranded = owned_nothing(h, kinds)
    for member, times in give_ups.items():
        if kinds.get(member) != "scala":
            continue
        for at in times:
            if not h.since <= at <= h.until:
                continue
            gave_up += 1
            if any(at - 2 * budget_s <= end <= at for end in released):
                stranded.add(member)
    return len(stranded), gave_up


def handover_lingers(
    h: History, kinds: dict[str, str], lingers: dict[str, list[float]], within_s: float
) -> list[float | None]:
    """Per zk->scala hand-over in the judged window, the linger its old owner logged last within
    `within_s` before the owner node went (`lingers`: member -> when each linger began), as the
    seconds from that log line to the node's end; None: the node went with no linger before it."""
    out: list[float | None] = []
    for before, after in consecutive_spans(h):
        if before.member == after.member or before.end is None or not h.since <= after.start <= h.until:
            continue
        if kinds.get(before.member) != "zk" or kinds.get(after.member) != "scala":
            continue
        began = [at for at in lingers.get(before.member, []) if 0 <= before.end - at <= within_s]
        out.append(before.end - max(began) if began else None)
    return out


def log_lines(member: object) -> list[str]:
    """A member's log (a zkconsumer process's or a Scala JVM's), [] if it has none."""
    path = getattr(member, "log", None) or getattr(getattr(member, "member", None), "log_path", None)
    if not isinstance(path, Path) or not path.exists():
        return []
    return path.read_text(errors="replace").splitlines()


def run_mixed(cluster: LocalCluster, linger_ms: int, args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    mode = f"mixed-linger{linger_ms}"
    settings = ChaosSettings(
        rate=args.rate,
        session_timeout_ms=args.session_timeout_ms,
        scala_release=args.scala_release,
        extra={
            "zkconsumer.release.linger.ms": linger_ms,
            "zkconsumer.compat.version": COMPAT_VERSION[args.scala_release],
        },
        # The joiner case is about Scala's own retry budget (4 attempts 2 s apart in 0.8.2..1.1).
        scala_extra={"rebalance.max.retries": 4, "rebalance.backoff.ms": 2000} if args.events_kind == "join" else {},
    )
    topic = f"{TOPIC}-{mode}"
    env = ChaosEnv(cluster, f"handover-{mode}", {topic: args.partitions}, workdir / mode, settings)
    try:
        env.start()
        env.join(args.members // 2, "process")
        scala = 1 if args.events_kind == "join" else args.members - args.members // 2
        env.join(scala, "scala")  # type: ignore[arg-type]
        env.settle("start", dwell=3.0)
        mixed_events(env, args)
        report = env.finish()
    finally:
        env.close()
    if report.lost or report.unconverged or report.errors:
        print(report.describe(), file=sys.stderr)
        raise SystemExit(f"{mode}: messages lost or the group did not converge; numbers would mean nothing")
    kinds = {m.consumer_id: ("scala" if m.kind == "scala" else "zk") for m in env.members}
    h: History = pickle.loads((workdir / mode / "history.pickle").read_bytes())
    changes = handovers(h, kinds)
    owning = reg_to_own(h, kinds)
    windows = [s for _, s in unowned_windows(h)]
    lingers = sorted(
        (at, m.consumer_id, what, seconds)
        for m in env.members
        if m.kind != "scala"
        for at, what, seconds in lingers_in(log_lines(m))
        if h.since <= at <= h.until
    )
    give_ups = {m.consumer_id: give_ups_in(log_lines(m)) for m in env.members if m.kind == "scala"}
    budget_s = Compat.parse(COMPAT_VERSION[args.scala_release]).scala_retry_budget_s
    stranded, gave_up = stranded_joiners(h, kinds, give_ups, budget_s)
    by_member: dict[str, list[float]] = {}
    for at, member, _, _ in lingers:
        by_member.setdefault(member, []).append(at)
    # A release follows its linger by the linger and a few round trips: at most the cap, plus slack.
    per_handover = handover_lingers(h, kinds, by_member, budget_s)
    waited = [s for s in per_handover if s is not None]
    print(
        f"{mode}: zk->scala hand-overs {len(per_handover)}, {len(waited)} after a linger "
        f"(log line to node gone: {', '.join(f'{s:.2f}s' for s in waited) or '-'})",
        flush=True,
    )
    for at, member, what, seconds in lingers:
        print(f"{mode}: linger {seconds:.1f}s ({what}) by {member} at +{at - h.since:.1f}s", flush=True)
    values = [seconds for _, _, _, seconds in lingers]
    result: dict[str, float] = {
        "events": args.events,
        "overlaps": len(report.overlaps),
        "unowned_p99_s": percentile(windows, 0.99),
        "stranded": stranded,
        "gave_up": gave_up,
        "lingers": len(values),
        "linger_median_s": statistics.median(values) if values else 0.0,
        "linger_max_s": max(values, default=0.0),
        "stale_handovers": sum(1 for _, n, _ in changes if n),
        "handovers_zk_scala_lingered": len(waited),
        "handovers_zk_to_scala_joiner": joiner_handovers(h, kinds),
    }
    for pair in ("zk->scala", "scala->zk", "zk->zk", "scala->scala"):
        key = pair.replace("->", "_")
        result[f"handovers_{key}"] = sum(1 for p, _, _ in changes if p == pair)
        result[f"stale_{key}"] = sum(n for p, n, _ in changes if p == pair)
        result[f"stale_handovers_{key}"] = sum(1 for p, n, _ in changes if p == pair and n)
        result[f"again_{key}"] = sum(n for p, _, n in changes if p == pair)
    for kind in ("zk", "scala"):
        times = owning.get(kind, [])
        result[f"{kind}_reg_own_median_s"] = statistics.median(times) if times else 0.0
        result[f"{kind}_reg_own_p95_s"] = percentile(times, 0.95)
        result[f"{kind}_joins"] = len(times)
    return result


def print_mixed(results: dict[int, dict[str, float]]) -> None:
    print(f"\n{'linger':>8}{'pair':>14}{'hand-overs':>12}{'with stale':>12}{'stale msgs':>12}{'in-flight':>11}")
    for linger, r in results.items():
        for pair in ("zk_scala", "scala_zk", "zk_zk", "scala_scala"):
            print(
                f"{linger:>6}ms{pair.replace('_', '->'):>14}{r['handovers_' + pair]:>12.0f}"
                f"{r['stale_handovers_' + pair]:>12.0f}{r['stale_' + pair]:>12.0f}"
                f"{r['again_' + pair] - r['stale_' + pair]:>11.0f}"
            )
    print(f"\n{'linger':>8}{'kind':>8}{'joins':>7}{'reg->own med':>14}{'p95':>8}{'unowned p99':>13}{'overlaps':>10}")
    for linger, r in results.items():
        for kind in ("zk", "scala"):
            print(
                f"{linger:>6}ms{kind:>8}{r[kind + '_joins']:>7.0f}{r[kind + '_reg_own_median_s']:>13.2f}s"
                f"{r[kind + '_reg_own_p95_s']:>7.2f}s{r['unowned_p99_s']:>12.2f}s{r['overlaps']:>10.0f}"
            )
    print(f"\n{'linger':>8}{'lingers':>9}{'median':>8}{'max':>7}{'gave up':>9}{'stranded':>10}{'to joiner':>11}")
    for linger, r in results.items():
        print(
            f"{linger:>6}ms{r['lingers']:>9.0f}{r['linger_median_s']:>7.1f}s{r['linger_max_s']:>6.1f}s"
            f"{r['gave_up']:>9.0f}{r['stranded']:>10.0f}{r['handovers_zk_to_scala_joiner']:>11.0f}"
        )
    on, off = (results[k] for k in sorted(results, reverse=True))
    print(
        f"mixed=1 handovers_zk_scala={on['handovers_zk_scala']:.0f} stale_zk_scala={on['stale_zk_scala']:.0f} "
        f"stale_zk_scala_nolinger={off['stale_zk_scala']:.0f} zk_reg_own_median_s={on['zk_reg_own_median_s']:.3f} "
        f"scala_reg_own_median_s={on['scala_reg_own_median_s']:.3f} "
        f"scala_reg_own_median_nolinger_s={off['scala_reg_own_median_s']:.3f} "
        f"unowned_p99_s={on['unowned_p99_s']:.3f} stale_handovers={on['stale_handovers']:.0f} "
        f"overlaps={on['overlaps']:.0f} stranded={on['stranded']:.0f} gave_up={on['gave_up']:.0f} "
        f"handovers_zk_scala_lingered={on['handovers_zk_scala_lingered']:.0f} "
        f"lingers={on['lingers']:.0f} linger_median_s={on['linger_median_s']:.3f} "
        f"linger_max_s={on['linger_max_s']:.3f} "
        f"handovers_zk_to_scala_joiner={on['handovers_zk_to_scala_joiner']:.0f} loadavg={os.getloadavg()[0]:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--partitions", type=int, default=24)
    parser.add_argument("--events", type=int, default=10)
    parser.add_argument("--rate", type=float, default=240.0, help="messages/s over all partitions")
    parser.add_argument("--dwell", type=float, default=2.0, help="seconds of traffic after each event")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--mixed", action="store_true", help="zkconsumer and Scala 1.1.1 members, linger on/off")
    parser.add_argument("--linger-ms", type=int, default=1000, help="release linger of the --mixed run with it")
    parser.add_argument(
        "--events-kind",
        choices=("churn", "join"),
        default="churn",
        help="--mixed: churn (joins and leaves of both kinds) or join (Scala members join a group of ours)",
    )
    parser.add_argument(
        "--kills", action="store_true", help="--mixed: every other round of leaves is a kill -9 (no commit)"
    )
    parser.add_argument(
        "--scala-release",
        choices=sorted(COMPAT_VERSION),
        default=DEFAULT_RELEASE,
        help="--mixed: the Scala members' release (zkconsumer members set the matching zkconsumer.compat.version)",
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=6000,
        help="--mixed: every member's (Scala's default; a JVM starting on a busy machine needs it)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="zkconsumer-handover-"))
    print(
        f"members={args.members} partitions={args.partitions} events={args.events} "
        f"rate={args.rate:.0f}/s workdir={workdir}",
        flush=True,
    )
    if args.mixed:
        if args.linger_ms <= 0:
            parser.error("--linger-ms must be > 0 (the run without a linger is always made too)")
        with LocalCluster(brokers=1, workdir=workdir / "cluster") as cluster:
            print_mixed({linger: run_mixed(cluster, linger, args, workdir) for linger in (args.linger_ms, 0)})
        return 0
    results = {}
    with LocalCluster(brokers=1, workdir=workdir / "cluster") as cluster:
        for incremental in (True, False):
            results["incremental" if incremental else "stop-the-world"] = run_mode(cluster, incremental, args, workdir)
    print(
        f"\n{'mode':<16}{'interrupted/event':>18}{'unowned med':>13}{'p95':>8}{'max':>8}"
        f"{'unowned p-s/event':>19}{'idle med':>10}{'idle max':>10}"
    )
    for mode, r in results.items():
        print(
            f"{mode:<16}{r['interrupted_per_event']:>18.1f}{r['unowned_median_s']:>12.2f}s"
            f"{r['unowned_p95_s']:>7.2f}s{r['unowned_max_s']:>7.2f}s{r['unowned_partition_s_per_event']:>18.2f}s"
            f"{r['idle_median_s']:>9.2f}s{r['idle_max_s']:>9.2f}s"
        )
    for mode, r in results.items():
        print(
            f"mode={mode} events={r['events']} interrupted_per_event={r['interrupted_per_event']:.2f} "
            f"unowned_median_s={r['unowned_median_s']:.3f} unowned_p99_s={r['unowned_p99_s']:.3f} "
            f"unowned_max_s={r['unowned_max_s']:.3f} leave_unowned_p99_s={r['leave_unowned_p99_s']:.3f} "
            f"join_unowned_p99_s={r['join_unowned_p99_s']:.3f} idle_median_s={r['idle_median_s']:.3f} idle_max_s={r['idle_max_s']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
