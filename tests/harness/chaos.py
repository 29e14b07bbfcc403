"""The chaos Checker: records one group's deliveries, acks and ZooKeeper history, and judges the invariants.

Invariants (chaos_invariants has the precise rules):
1. no loss: every acknowledged message is delivered at least once;
2. no overlap: no two members deliver one partition during overlapping delivery intervals;
3. duplicates only inside the uncommitted window of a member that lost its session (crash,
   expiry, stall), or the single in-flight message of a clean hand-over;
4. convergence: after each fault the owner nodes equal the assignor's answer for the live
   members within a bound (`wait_converged`); the report adds each partition's longest
   unowned window, from the owner-node history.
"""

from __future__ import annotations

import logging
import pickle
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness import chaos_invariants as inv
from harness import zk_txnlog
from harness.chaos_history import Delivery, History, MessageKey, Note, TopicPartition, now, parse_value
from harness.chaos_observer import ZkObserver
from harness.members import owner_table
from zkconsumer.cluster import broker_nodes
from zkconsumer.config.compat import DEFAULT
from zkconsumer.coordinator.assignors import assign
from zkconsumer.coordinator.rebalance_plan import GroupView, assignment_input, member_threads
from zkconsumer.errors import ZkDataError
from zkconsumer.zookeeper import znodes

log = logging.getLogger(__name__)


class DeliverySink:
    """What members.drain() records into (the members.Recorder interface), feeding a Checker."""

    def __init__(self, checker: Checker) -> None:
        self._checker = checker
        self.errors = checker.errors

    def add(self, member: str, topic: str, partition: int, offset: int, value: bytes | None) -> None:
        self._checker.delivered(member, topic, partition, offset, value)


@dataclass
class Report:
    """The verdict on one run; `ok` is False when any invariant broke."""

    produced: int
    deliveries: int
    distinct: int
    lost: list[MessageKey]
    overlaps: list[inv.Overlap]
    duplicates: list[inv.Duplicate]
    stray: int
    unowned: dict[TopicPartition, float]
    regressions: list[str]
    latency: dict[TopicPartition, float] = field(default_factory=dict)
    convergence: list[tuple[str, float | None]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    forced_close: list[inv.Interval] = field(default_factory=list)  # reported, not judged

    @property
    def bad_duplicates(self) -> list[inv.Duplicate]:
        return [d for d in self.duplicates if not d.allowed]

    @property
    def allowed_duplicates(self) -> int:
        return sum(1 for d in self.duplicates if d.allowed)

    @property
    def max_unowned(self) -> tuple[TopicPartition | None, float]:
        if not self.unowned:
            return None, 0.0
        key = max(self.unowned, key=lambda k: self.unowned[k])
        return key, self.unowned[key]

    @property
    def max_latency(self) -> tuple[TopicPartition | None, float]:
        if not self.latency:
            return None, 0.0
        key = max(self.latency, key=lambda k: self.latency[k])
        return key, self.latency[key]

    @property
    def max_converge(self) -> float:
        return max((s for _, s in self.convergence if s is not None), default=0.0)

    @property
    def unconverged(self) -> list[str]:
        return [what for what, s in self.convergence if s is None]

    def failures(self) -> list[str]:
        """One line per broken invariant."""
        out = []
        if self.lost:
            out.append(f"1 loss: {len(self.lost)} acknowledged messages never delivered")
        if self.overlaps:
            out.append(f"2 overlap: {len(self.overlaps)} overlapping delivery intervals")
        if self.bad_duplicates:
            out.append(f"3 duplicates: {len(self.bad_duplicates)} outside any uncommitted window")
        if self.unconverged:
            out.append(f"4 convergence: no balanced group after {', '.join(self.unconverged)}")
        out += [f"error: {e}" for e in self.errors]
        return out

    @property
    def ok(self) -> bool:
        return not self.failures()

    def describe(self, limit: int = 8) -> str:
        """The failures with evidence (first `limit` of each kind), then the figures."""
        lines = self.failures()
        if self.lost:
            lines.append(f"  lost, e.g.: {self.lost[:limit]}")
        lines += [f"  overlap: {o}" for o in self.overlaps[:limit]]
        lines += [f"  duplicate: {d}" for d in self.bad_duplicates[:limit]]
        lines += [f"  offset regression: {r}" for r in self.regressions[:limit]]
        if not self.ok:
            lines += [f"  at {n.at:.3f}: {n.kind} {n.member or ''} {n.detail}".rstrip() for n in self.notes]
        worst5 = sorted(self.unowned.items(), key=lambda kv: -kv[1])[:5]
        lines.append("longest unowned windows: " + ", ".join(f"{t}-{p} {s:.2f}s" for (t, p), s in worst5))
        key, worst = self.max_unowned
        late, latency = self.max_latency
        lines.append(
            f"produced={self.produced} deliveries={self.deliveries} distinct={self.distinct} "
            f"allowed duplicates={self.allowed_duplicates} stray deliveries={self.stray} "
            f"max unowned={worst:.2f}s ({key}) max ack-to-delivery={latency:.2f}s ({late}) "
            f"max converge={self.max_converge:.2f}s"
        )
        lines += [f"  converge after {what}: {'never' if s is None else f'{s:.2f}s'}" for what, s in self.convergence]
        lines += [f"  after its session was closed from outside: {iv.describe()}" for iv in self.forced_close]
        return "\n".join(lines)

    def line(self, events: int) -> str:
        """The machine-readable summary (duplicates counts only unexplained ones)."""
        return (
            f"events={events} produced={self.produced} lost={len(self.lost)} overlaps={len(self.overlaps)} "
            f"duplicates={len(self.bad_duplicates)} max_unowned_s={self.max_unowned[1]:.2f} "
            f"max_converge_s={self.max_converge:.2f}"
        )


class Checker:
    """Collects everything the invariants need for one group and judges it (`verify()`).

    Deliveries come from in-process members through `sink` (members.drain) and from child
    processes through their delivery files (`follow`); acks from the producer (`acked`);
    ownership, membership and commit history from a ZkObserver; faults from `note`.

    Example::

        checker = Checker(cluster.zookeeper_connect, "g1", ["orders"]); checker.start()
        drain(member_id, streams, checker.sink); ...; checker.begin()   # judge gaps from here
        ...; report = checker.verify(convergence); assert report.ok, report.describe()
    """

    def __init__(
        self,
        zookeeper: str,
        group: str,
        topics: Iterable[str],
        *,
        period: float = 0.05,
        clock_eps: float = 0.02,
        zk_data_dir: Path | None = None,
    ) -> None:
        self.group = group
        # With the server's data folder, ownership ends are settled exactly from its transaction log.
        self.zk_data_dir = zk_data_dir
        self.chroot = zookeeper[zookeeper.index("/") :] if "/" in zookeeper else ""
        self.clock_eps = clock_eps
        self.observer = ZkObserver(zookeeper, group, topics, period=period)
        self.errors: list[BaseException] = []
        self.sink = DeliverySink(self)
        self.notes: list[Note] = []
        self.epoch_starts: dict[tuple[str, int], float] = {}
        self.since = 0.0
        self.until: float | None = None
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._acked: set[MessageKey] = set()
        self._acked_at: dict[MessageKey, float] = {}
        self._files: dict[Path, list] = {}  # type: ignore[type-arg]  # path -> [pos, partial line]
        self._delivered_keys: set[MessageKey] = set()

    def start(self) -> None:
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()

    # ---- inputs -----------------------------------------------------------------------------------
    def delivered(
        self, member: str, topic: str, partition: int, offset: int, value: bytes | str | None, at: float | None = None
    ) -> None:
        parsed = parse_value(value)
        d = Delivery(member, topic, parsed[1] if parsed else 0, partition, offset, now() if at is None else at)
        with self._lock:
            self._deliveries.append(d)
            self._delivered_keys.add(d.key)

    def follow(self, path: Path, member: str) -> None:
        """Read a chaos_member delivery file as it grows (lines: clock topic partition offset value)."""
        with self._lock:
            self._files.setdefault(Path(path), [0, "", member])

    def acked(self, topic: str, epoch: int, partition: int, offset: int) -> None:
        key = (topic, epoch, partition, offset)
        with self._lock:
            self._acked.add(key)
            self._acked_at[key] = now()

    def note(self, kind: str, member: str | None = None, detail: str = "") -> None:
        with self._lock:
            self.notes.append(Note(kind, member, now(), detail))

    def new_epoch(self, topic: str, epoch: int) -> None:
        """The topic was created again: offsets from here on are a new incarnation's."""
        self.note("epoch", None, f"{topic} epoch {epoch}")
        self.epoch_starts[(topic, epoch)] = now()
        self.observer.add_topic(topic)

    def begin(self) -> None:
        """Judge ownership gaps from now on (call once the group first converged)."""
        self.since = now()

    def end(self) -> None:
        """Stop judging ownership gaps (call before the final shutdown of every member)."""
        self.until = now()

    # ---- progress ---------------------------------------------------------------------------------
    def poll_files(self) -> None:
        with self._lock:
            files = list(self._files.items())
        for path, state in files:
            try:
                with open(path) as f:
                    f.seek(state[0])
                    chunk = f.read()
                    state[0] = f.tell()
            except FileNotFoundError:
                continue
            text = state[1] + chunk
            lines = text.split("\n")
            state[1] = lines.pop()  # an unfinished last line waits for its newline
            for line in lines:
                fields = line.split(" ")
                if len(fields) >= 4:
                    self.delivered(
                        state[2],
                        fields[1],
                        int(fields[2]),
                        int(fields[3]),
                        fields[4] if len(fields) > 4 else None,
                        at=float(fields[0]),
                    )

    def counts(self) -> tuple[int, int]:
        """(acknowledged, delivered distinct) so far."""
        self.poll_files()
        with self._lock:
            return len(self._acked), len(self._delivered_keys & self._acked)

    def missing(self, topic: str | None = None) -> set[MessageKey]:
        self.poll_files()
        with self._lock:
            missing = self._acked - self._delivered_keys
        return missing if topic is None else {k for k in missing if k[0] == topic}

    def wait_delivered(self, timeout: float, topic: str | None = None) -> set[MessageKey]:
        """Until every acknowledged message (of topic) was delivered; returns what is still missing."""
        deadline = time.monotonic() + timeout
        while True:
            missing = self.missing(topic)
            if not missing or time.monotonic() > deadline:
                return missing
            time.sleep(0.1)

    # ---- judging ----------------------------------------------------------------------------------
    def history(self) -> History:
        self.poll_files()
        spans, incarnations, presence, commits = self.observer.snapshot()
        with self._lock:
            return History(
                deliveries=list(self._deliveries),
                acked=set(self._acked),
                acked_at=dict(self._acked_at),
                spans=spans,
                incarnations=incarnations,
                presence=presence,
                commits=commits,
                notes=list(self.notes),
                epoch_starts=dict(self.epoch_starts),
                since=self.since,
                until=self.until if self.until is not None else now(),
            )

    def settled_history(self) -> History:
        """history(), with node ends settled from ZooKeeper's transaction log when it is at hand."""
        h = self.history()
        if self.zk_data_dir is not None:
            ends = zk_txnlog.node_ends(self.zk_data_dir, self.chroot + znodes.group_path(self.group))
            settled = h.settle(ends, self.group, self.chroot, self.observer.to_now)
            log.info(
                "settled %d of %d node lives from ZooKeeper's transaction log",
                settled,
                len(h.spans) + len(h.incarnations),
            )
        return h

    def verify(self, convergence: list[tuple[str, float | None]] | None = None, *, dump: Path | None = None) -> Report:
        """Judge everything recorded; `dump` pickles the History there for a post-mortem."""
        h = self.settled_history()
        if dump is not None:
            dump.write_bytes(pickle.dumps(h))
        return Report(
            produced=len(h.acked),
            deliveries=len(h.deliveries),
            distinct=len({d.key for d in h.deliveries}),
            lost=inv.lost(h),
            overlaps=inv.overlaps(h, self.clock_eps),
            duplicates=inv.duplicates(h),
            stray=len(inv.stray_deliveries(h)),
            unowned=inv.unowned_windows(h),
            regressions=inv.commit_regressions(h),
            latency=inv.delivery_latency(h),
            convergence=list(convergence or []),
            errors=[repr(e) for e in self.errors],
            notes=h.notes,
            forced_close=inv.forced_close_strays(h),
        )


# ---- invariant 4: convergence -------------------------------------------------------------------
class ConvergenceError(AssertionError):
    """The group did not reach the assignor's answer in time."""


def group_state(
    zk,
    group: str,
    topics: Iterable[str],
    strategy: str = "range",  # type: ignore[no-untyped-def]
) -> tuple[set[str], dict[TopicPartition, str], dict[TopicPartition, str]]:
    """(members with a readable registration, the assignor's owners, ZooKeeper's owners) for topics.

    Undecodable registrations are skipped, as every zkconsumer member skips them.
    """
    topics = set(topics)
    regs = {}
    for cid in zk.get_children(znodes.ids_path(group)):
        path = znodes.member_path(group, cid)
        try:
            regs[cid] = znodes.Registration.decode(zk.get(path)[0], path)
        except ZkDataError:
            continue
    threads = member_threads(
        GroupView(regs, tuple(zk.get_children(znodes.BROKER_TOPICS))), exclude_internal=True, compat=DEFAULT
    )
    partitions: dict[str, list[int]] = {}
    for topic in {t for per in threads.values() for t in per}:
        path = znodes.topic_path(topic)
        stat = zk.exists(path)
        partitions[topic] = sorted(broker_nodes.decode_topic_partitions(zk.get(path)[0], path)) if stat else []
    want = {k: v for k, v in assign(strategy, assignment_input(threads, partitions), DEFAULT).items() if k[0] in topics}
    return set(regs), want, owner_table(zk, group, topics)


def wait_converged(
    zk,
    group: str,
    topics: Iterable[str],
    *,
    members: set[str] | None = None,  # type: ignore[no-untyped-def]
    strategy: str = "range",
    timeout: float = 60.0,
) -> float:
    """Seconds until the owner nodes equal the assignor's answer (and the members are `members`)."""
    topics = list(topics)
    began = time.monotonic()
    last: object = None
    while time.monotonic() - began < timeout:
        try:
            registered, want, have = group_state(zk, group, topics, strategy)
            if (members is None or registered == members) and want and have == want:
                return time.monotonic() - began
            last = (
                f"members {len(registered)} (expected {len(members) if members is not None else '?'}, "
                f"missing {sorted((members or set()) - registered)[:3]}, extra "
                f"{sorted(registered - (members or registered))[:3]}), {len(have)} owned of {len(want)}, "
                f"{sum(1 for k in want if have.get(k) != want[k])} misplaced"
            )
        except Exception as exc:  # noqa: BLE001 - the group is moving under us: look again
            last = repr(exc)
        time.sleep(0.1)
    raise ConvergenceError(f"group {group} not balanced after {timeout:.0f}s; last: {last}")
