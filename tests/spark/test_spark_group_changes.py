"""Issue #14 scenario 4 on the standalone cluster: the group changes under a running query.

The query (spark-submit on the standalone master, zkconsumer shipped as the wheel, parquet sink with
a checkpoint, 12 partitions under steady production) shares its group with plain zkconsumer
members: they join one by one, leave cleanly, one is killed by kill -9; in the second test the
driver's ZooKeeper session is expired while a batch runs. The driver runs on the standalone cluster
like its neighbours' (test_spark_standalone.py, test_spark_driver_restart.py): the group member is
the planner process that the driver JVM starts, so where executors run changes nothing about
membership, and the standalone master is where users run it.

**"No partition read by two of them at once"**: the criterion is checked on exact data, the
ZooKeeper server's transaction log (every create, delete, setData and closeSession of the group's
nodes, with the session that made it, in zxid order) plus what each reader handed out:

1. *One owner at a time*: a partition's owner-node lives (create .. delete or session end) never
   overlap (ZooKeeper's mutex, checked anyway).
2. *Hand out only what you own*: every plain member's delivery falls inside one of its own owner
   lives of that partition (its own CLOCK_MONOTONIC stamp against the server's time; 0.05 s of
   clock granularity allowed before the start, 0.5 s of recording lag after the end); every sink batch's range of a partition was planned inside
   a life of the driver's: one that began before Spark wrote `offsets/<N>` (right after planning)
   and had not ended when `commits/<N-1>` was written (planning starts after that).
3. *A new owner starts at the commit point*: in every life, what the owner read is one contiguous
   range starting at the partition's ZooKeeper offset when the life began (nothing committed: 0,
   the earliest) -- or, for the driver taking a partition back, at its own earlier end when that is
   further (README: it skips what it read itself); never past everything read before (no gap), and
   ZooKeeper never holds more than what was read (no skip).
4. *Re-deliveries are hand-overs, not live overlap*: a message read in one life and again in a later
   one was, in the latest earlier life that read it, either part of **the driver's last batch in
   that life** (planned while it owned the partition, still running when the partition moved, and
   not yet committed: README "at least once across members") or read by a member **whose session
   ended** (kill -9, expiry: uncommitted). What a member read before it released the partition
   (it commits, then deletes its owner node) is never read again. Executors may still be reading the
   driver's last batch when the new owner starts: that batch was handed out while the driver owned
   the partition, and rule 4 bounds the overlap to it. Two live readers of one partition would
   break 3 or 4: each would read past the other's commit point.

ZooKeeper offsets: every write of `/offsets/<topic>/<p>` was made by the session holding the
partition's owner node at that zxid (fencing; the offset writes are multis checking the owner
node), the values never decrease, none is made by a session after it ended, and they end at the
log end. The sink holds every message it planned exactly once (Spark checkpoint + file sink).
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from standalone_helpers import Driver, Production, sink_keys

from harness.chaos_history import now
from harness.chaos_members import InProcessMember, ProcessMember, expire_session
from harness.members import Recorder, committed_offsets, wait_for_balanced
from harness.scala import FAST_PROPERTIES
from harness.spark_cluster import SparkStandalone

# The log's framing and jute primitives; the decoding of setData and node data is done here.
from harness.zk_txnlog import (
    CLOSE_SESSION,
    CREATE,
    CREATE2,
    CREATE_CONTAINER,
    CREATE_TTL,
    DELETE,
    DELETE_CONTAINER,
    ERROR,
    MULTI,
    _Reader,
    _records,
)
from zkconsumer.spark.checkpoint import CheckpointLog
from zkconsumer.spark.offsets import batch_ranges
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.timeout(600)]

SET_DATA = 5
# The query's member: quick rebalances while members come and go (the tests' FAST settings).
DRIVER_OPTIONS: dict[str, object] = {
    "zookeeper.session.timeout.ms": 6000,
    "rebalance.backoff.ms": 500,
    "rebalance.max.retries": 20,
}
# Plain members: commit every second, so a kill -9 re-delivers a little, not a minute's worth.
MEMBER_PROPS = {**FAST_PROPERTIES, "consumer.timeout.ms": 200, "auto.commit.interval.ms": 1000}
RECORDING_LAG = 0.5  # a delivery is stamped after the iterator handed it out
PLANNING_SLACK = 0.1  # file mtimes against the server's millisecond clock
SUPER_SECRET = 0xB3415C00  # ZooKeeperServer.superSecret: passwd = java.util.Random(id ^ superSecret).nextBytes(16)


# ---- the ZooKeeper server's transaction log, decoded for this group ------------------------------------
@dataclass(frozen=True)
class Op:
    zxid: int
    at: float  # CLOCK_MONOTONIC seconds (the server's wall clock, converted)
    session: int
    kind: str  # create, delete, set, close
    path: str = ""
    data: bytes = b""
    ephemeral: bool = False


def _ops(r: _Reader, session: int, zxid: int, at: float, type_: int) -> Iterator[Op]:
    if type_ in (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL):
        path, data = r.string(), r.buffer()
        for _ in range(max(r.int(), 0)):  # ACLs
            r.int(), r.string(), r.string()
        yield Op(zxid, at, session, "create", path, data, r.bool() if type_ in (CREATE, CREATE2) else False)
    elif type_ in (DELETE, DELETE_CONTAINER):
        yield Op(zxid, at, session, "delete", r.string())
    elif type_ == SET_DATA:
        path, data = r.string(), r.buffer()
        yield Op(zxid, at, session, "set", path, data)
    elif type_ == MULTI:
        ops = [(r.int(), r.buffer()) for _ in range(max(r.int(), 0))]
        if any(sub == ERROR for sub, _ in ops):  # a failed multi: nothing applied
            return
        for sub, body in ops:
            yield from _ops(_Reader(body), session, zxid, at, sub)
    elif type_ == CLOSE_SESSION:
        yield Op(zxid, at, session, "close")


def zk_ops(data_dir: Path) -> list[Op]:
    folder = data_dir / "version-2"
    shift = time.time() - now()
    out: list[Op] = []
    last = -1
    for log_file in sorted(folder.glob("log.*"), key=lambda p: int(p.name.split(".", 1)[1], 16)):
        for entry in _records(log_file):
            r = _Reader(entry)
            session, _cxid, zxid, time_ms, type_ = r.long(), r.int(), r.long(), r.long(), r.int()
            if zxid < last:
                continue
            last = zxid
            out.extend(_ops(r, session, zxid, time_ms / 1000.0 - shift, type_))
    return out


@dataclass
class Life:
    """One owner node of one partition, create .. delete (its owner released it) or close (its session ended)."""

    partition: int
    consumer: str
    session: int
    start_zxid: int
    start: float
    end: float | None = None
    cause: str | None = None  # "delete" or "close"
    reads: set[int] = field(default_factory=set)
    last_batch_start: int | None = None  # the driver: start of its last batch range in this life

    def covers(self, at: float, before: float, after: float) -> bool:
        return self.start - before <= at and (self.end is None or at <= self.end + after)

    def describe(self) -> str:
        end = f"{self.end:.3f} ({self.cause})" if self.end is not None else "open"
        return f"{self.consumer} [{self.start:.3f}, {end}]"


@dataclass(frozen=True)
class OffsetWrite:
    zxid: int
    at: float
    session: int
    partition: int
    offset: int
    holder: int | None  # the session holding the owner node at that zxid


@dataclass
class GroupHistory:
    lives: dict[int, list[Life]] = field(default_factory=lambda: collections.defaultdict(list))
    writes: dict[int, list[OffsetWrite]] = field(default_factory=lambda: collections.defaultdict(list))
    closed: dict[int, Op] = field(default_factory=dict)  # session -> its closeSession
    after_close: list[Op] = field(default_factory=list)  # anything a session did after it ended
    registrations: dict[int, str] = field(default_factory=dict)  # session -> consumer id


def group_history(cluster: Any, group: str, topic: str) -> GroupHistory:
    data_dir = getattr(getattr(cluster, "zookeeper", None), "data_dir", None)
    assert data_dir is not None, "these tests read the ZooKeeper server's transaction log: they need a local cluster"
    root = (cluster.chroot or "") + znodes.group_path(group)
    owners, offsets, ids = f"{root}/owners/{topic}/", f"{root}/offsets/{topic}/", f"{root}/ids/"
    h = GroupHistory()
    alive: dict[str, tuple[int, Life | None]] = {}  # ephemeral path under the group -> (session, owner life)
    holder: dict[int, int] = {}  # partition -> session holding its owner node
    for op in zk_ops(Path(data_dir)):
        if op.session in h.closed and op.kind != "close" and op.path.startswith(root):
            h.after_close.append(op)
        if op.kind == "create" and op.ephemeral and op.path.startswith(root):
            life = None
            if op.path.startswith(owners):
                partition = int(op.path[len(owners) :])
                thread = znodes.decode_owner(op.data, op.path)
                life = Life(partition, znodes.consumer_id_of_thread(thread), op.session, op.zxid, op.at)
                h.lives[partition].append(life)
                holder[partition] = op.session
            elif op.path.startswith(ids):
                h.registrations[op.session] = op.path[len(ids) :]
            alive[op.path] = (op.session, life)
        elif op.kind in ("create", "set") and op.path.startswith(offsets):
            partition = int(op.path[len(offsets) :])
            h.writes[partition].append(
                OffsetWrite(
                    op.zxid, op.at, op.session, partition, znodes.decode_offset(op.data, op.path), holder.get(partition)
                )
            )
        elif op.kind == "delete" and op.path in alive:
            _session, life = alive.pop(op.path)
            if life is not None:
                life.end, life.cause = op.at, "delete"
                holder.pop(life.partition, None)
        elif op.kind == "close":
            h.closed[op.session] = op
            for path in [p for p, (s, _) in alive.items() if s == op.session]:
                _session, life = alive.pop(path)
                if life is not None:
                    life.end, life.cause = op.at, "close"
                    holder.pop(life.partition, None)
    return h


def server_password(session_id: int) -> bytes:
    """The password ZooKeeper gives session `session_id`: java.util.Random(id ^ superSecret).nextBytes(16).
    The driver's member lives in a planner process the driver JVM starts; this is how the test gets
    what expire_session needs without a hook in the source (checked against a session we hold)."""
    mask = (1 << 48) - 1
    seed = ((session_id ^ SUPER_SECRET) ^ 0x5DEECE66D) & mask
    out = bytearray()
    while len(out) < 16:
        seed = (seed * 0x5DEECE66D + 0xB) & mask
        rnd = seed >> 16
        for _ in range(min(4, 16 - len(out))):
            out.append(rnd & 0xFF)
            rnd >>= 8
    return bytes(out)


# ---- the readers: the sink's batches, the plain members' deliveries ---------------------------------
@dataclass(frozen=True)
class Batch:
    id: int
    planned: float  # offsets/<id> written (monotonic)
    not_before: float  # commits/<id-1> written (planning starts after it)
    committed: float | None  # commits/<id> written
    ranges: tuple[tuple[int, int, int], ...]  # (partition, from, to)


def batches(checkpoint: Path) -> list[Batch]:
    shift = time.time() - now()
    log = CheckpointLog(str(checkpoint))
    done = set(log.committed())

    def mtime(sub: str, batch: int) -> float:
        return os.stat(checkpoint / sub / str(batch)).st_mtime - shift

    out: list[Batch] = []
    previous: dict[str, Any] = {}
    for batch in log.planned():
        (end,) = log.entries(batch)
        assert end is not None, f"batch {batch} has no zkconsumer offsets"
        ranges = tuple((k[1], lo, hi) for k, lo, hi in batch_ranges(previous, end))
        out.append(
            Batch(
                batch,
                mtime("offsets", batch),
                mtime("commits", batch - 1) if batch - 1 in done else 0.0,
                mtime("commits", batch) if batch in done else None,
                ranges,
            )
        )
        previous = end
    return out


@dataclass(frozen=True)
class Read:
    reader: str
    partition: int
    offset: int
    at: float


class Members:
    """Plain zkconsumer members of the query's group: in this process (clean leave) and in child
    processes (chaos_member: kill -9). Every delivery is recorded with its CLOCK_MONOTONIC stamp."""

    def __init__(self, cluster: Any, group: str, topic: str, workdir: Path) -> None:
        self.cluster, self.group, self.topic, self.workdir = cluster, group, topic, workdir
        self.recorder = Recorder()
        self.inproc: list[InProcessMember] = []
        self.procs: list[ProcessMember] = []

    def props(self) -> dict[str, object]:
        return {**MEMBER_PROPS, "zookeeper.connect": self.cluster.zookeeper_connect, "group.id": self.group}

    def join(self) -> InProcessMember:
        member = InProcessMember(self.props(), {self.topic: 1}, self.recorder, lambda *a, **k: None).start()
        self.inproc.append(member)
        return member

    def join_process(self, name: str) -> ProcessMember:
        member = ProcessMember(
            self.cluster.zookeeper_connect,
            self.group,
            MEMBER_PROPS,
            {self.topic: 1},
            self.workdir,
            name,
            lambda *a, **k: None,
        ).start()
        self.procs.append(member)
        return member

    @property
    def ids(self) -> set[str]:
        return {m.consumer_id for m in self.inproc} | {m.consumer_id for m in self.procs}

    def reads(self) -> list[Read]:
        out = [Read(d.member, d.partition, d.offset, d.at) for d in list(self.recorder.deliveries)]
        for member in self.procs:
            for line in member.out.read_text().splitlines() if member.out.exists() else []:
                at, _topic, partition, offset, _value = line.split(" ", 4)
                out.append(Read(member.consumer_id, int(partition), int(offset), float(at)))
        return out

    def close(self) -> None:
        for inproc in self.inproc:
            inproc.leave()
        for proc in self.procs:
            if proc.exited() is None:
                proc.leave()


class _WithOptions:
    """The standalone cluster, with these source options added to the driver's command line."""

    def __init__(self, spark: Any, options: dict[str, object]) -> None:
        self._spark, self._options = spark, options

    def submit_command(self, args: list[str], **kwargs: Any) -> Any:
        extra = [a for k, v in self._options.items() for a in ("--option", f"{k}={v}")]
        return self._spark.submit_command([*args, *extra], **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)


def start_driver(
    standalone: SparkStandalone, wheel: Path, cluster: Any, group: str, topic: str, folder: Path
) -> Driver:
    return Driver(cast(SparkStandalone, _WithOptions(standalone, DRIVER_OPTIONS)), wheel, cluster, group, topic, folder)


def wait(condition: Any, timeout: float, what: str, driver: Driver) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if driver.popen.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} (driver exit {driver.popen.poll()}):\n{driver.log_tail()}")
        time.sleep(0.5)


def balanced(zk: Any, group: str, topic: str, members: int, driver: Driver) -> None:
    try:
        wait_for_balanced(zk, group, [topic], members=members, timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{driver.log_tail()}") from None


def drain_everything(
    driver: Driver, production: Production, members: Members, zk: Any, group: str, topic: str, cluster: Any
) -> set[tuple[int, int]]:
    """Stop producing; wait until the sink and the members together hold every message and ZooKeeper
    is at the log end. Returns what was produced."""
    sent = production.stop()
    wait(
        lambda: set(sink_keys(driver.output)) | {(r.partition, r.offset) for r in members.reads()} >= sent,
        120,
        "not every message was delivered by the sink or a member",
        driver,
    )
    ends = {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}
    wait(lambda: committed_offsets(zk, group, topic) == ends, 60, "ZooKeeper offsets never reached the log end", driver)
    return sent


# ---- the criterion ---------------------------------------------------------------------------------
def judge(
    h: GroupHistory,
    plan: list[Batch],
    reads: list[Read],
    member_ids: set[str],
    sent: set[tuple[int, int]],
    sink: collections.Counter[tuple[int, int]],
    ends: dict[int, int],
) -> dict[str, Any]:
    """Every rule of the module docstring; returns a summary, raises listing every violation."""
    bad: list[str] = []
    drivers = {life.consumer for lives in h.lives.values() for life in lives} - member_ids
    assert len(drivers) == 1, f"expected one consumer id besides the plain members', got {sorted(drivers)}"
    (driver,) = drivers

    # Rule 1: one owner at a time.
    for partition, lives in h.lives.items():
        for a, b in zip(lives, lives[1:]):
            if a.end is None or a.end > b.start:
                bad.append(f"p{partition}: owner lives overlap: {a.describe()} and {b.describe()}")

    # Rule 2: hand out only what you own. Members: by delivery stamp; the sink: by planning window.
    for read in reads:
        lives = [l for l in h.lives[read.partition] if l.consumer == read.reader]
        inside = [l for l in lives if l.covers(read.at, 0.0, 0.0)] or [
            l for l in lives if l.covers(read.at, 0.05, RECORDING_LAG)
        ]
        if not inside:
            bad.append(
                f"p{read.partition}@{read.offset}: {read.reader} delivered it at {read.at:.3f} without owning "
                f"it (its lives: {[l.describe() for l in lives]})"
            )
            continue
        inside[-1].reads.add(read.offset)
    sink_planned: set[tuple[int, int]] = set()
    for batch in plan:
        if batch.committed is None:
            continue  # cancelled by the stop: never reached the sink
        for partition, lo, hi in batch.ranges:
            sink_planned.update((partition, o) for o in range(lo, hi))
            lives = [
                l for l in h.lives[partition] if l.consumer == driver and l.start <= batch.planned + PLANNING_SLACK
            ]
            life = lives[-1] if lives else None
            if life is None or (life.end is not None and life.end < batch.not_before - PLANNING_SLACK):
                bad.append(
                    f"p{partition} [{lo}, {hi}): batch {batch.id}, planned in [{batch.not_before:.3f}, "
                    f"{batch.planned:.3f}], while the driver did not own it "
                    f"(last life: {life.describe() if life else 'none'})"
                )
                continue
            life.reads.update(range(lo, hi))
            life.last_batch_start = lo

    # Rules 3 and 4, per partition, lives in zxid order.
    redelivered: collections.Counter[str] = collections.Counter()
    handovers = 0
    for partition, lives in sorted(h.lives.items()):
        writes = h.writes[partition]
        last_reader: dict[int, Life] = {}  # offset -> the latest life that read it
        read_end = 0  # everything before it was read by some life
        own_end: dict[str, int] = {}  # reader -> end of what it read of this partition
        for life in lives:
            if not life.reads:
                continue
            committed = ([w.offset for w in writes if w.zxid < life.start_zxid] or [0])[-1]  # nothing yet: earliest
            lo, hi = min(life.reads), max(life.reads) + 1
            where = f"p{partition} {life.describe()} read [{lo}, {hi})"
            if len(life.reads) != hi - lo:
                bad.append(f"{where} with gaps")
            allowed = {committed}
            if life.consumer == driver and driver in own_end:
                allowed.add(max(committed, own_end[driver]))
            if lo not in allowed:
                bad.append(f"{where}: started at {lo}, not at the commit point {committed}")
            if committed > read_end:
                bad.append(f"{where}: ZooKeeper held {committed}, beyond everything read ({read_end})")
            if lo > read_end:
                bad.append(f"{where}: skipped [{read_end}, {lo})")
            if last_reader:
                handovers += 1
            for offset in range(lo, min(hi, read_end)):
                before = last_reader.get(offset)
                if before is None:
                    continue
                if before.consumer == driver:
                    if before.last_batch_start is None or offset < before.last_batch_start:
                        bad.append(
                            f"{where}: re-read {offset}, which the driver planned before its last batch "
                            f"(from {before.last_batch_start}) in {before.describe()}"
                        )
                elif before.cause != "close":
                    bad.append(f"{where}: re-read {offset}, which {before.describe()} read and released cleanly")
                redelivered[
                    f"{before.consumer == driver and 'driver' or 'member'}->"
                    f"{life.consumer == driver and 'driver' or 'member'}"
                ] += 1
            for offset in life.reads:
                last_reader[offset] = life
            read_end = max(read_end, hi)
            own_end[life.consumer] = max(own_end.get(life.consumer, 0), hi)

    # ZooKeeper offsets: fenced, forward only, nothing from an ended session, the log end at last.
    for partition, writes in sorted(h.writes.items()):
        for w in writes:
            if w.holder != w.session:
                bad.append(
                    f"p{partition}: offset {w.offset} written by session {w.session:#x} while "
                    f"{'nobody' if w.holder is None else f'session {w.holder:#x}'} held the owner node"
                )
        for earlier, later in zip(writes, writes[1:]):
            if later.offset < earlier.offset:
                bad.append(
                    f"p{partition}: ZooKeeper offset moved back from {earlier.offset} to {later.offset} "
                    f"(session {later.session:#x})"
                )
        if writes and writes[-1].offset != ends[partition]:
            bad.append(f"p{partition}: last ZooKeeper offset {writes[-1].offset}, log end {ends[partition]}")
    bad += [f"session {op.session:#x} wrote {op.path} after it ended" for op in h.after_close]

    # Loss, and the sink: exactly once what it planned.
    delivered = set(sink) | {(r.partition, r.offset) for r in reads}
    if sent - delivered:
        bad.append(f"{len(sent - delivered)} messages lost, e.g. {sorted(sent - delivered)[:5]}")
    dups = {k: n for k, n in sink.items() if n > 1}
    if dups:
        bad.append(f"{len(dups)} duplicates in the sink, e.g. {sorted(dups)[:5]}")
    if set(sink) != sink_planned:
        bad.append(
            f"the sink differs from its committed batches: {len(set(sink) - sink_planned)} strays, "
            f"{len(sink_planned - set(sink))} missing"
        )
    assert not bad, f"{len(bad)} violations:\n" + "\n".join(bad[:40])
    per_reader = collections.Counter("sink" for _ in sink)
    per_reader.update(r.reader for r in reads)
    return {
        "driver": driver,
        "rows": dict(per_reader),
        "lives": sum(len(v) for v in h.lives.values()),
        "driver_lives": sum(1 for v in h.lives.values() for l in v if l.consumer == driver),
        "handovers_with_reads": handovers,
        "redelivered": dict(redelivered),
        "offset_writes": sum(len(v) for v in h.writes.values()),
        "batches": len(plan),
    }


@pytest.fixture
def members(cluster, group_id, topic, tmp_path) -> Iterator[Members]:  # type: ignore[no-untyped-def]
    group = Members(cluster, group_id, topic, tmp_path)
    yield group
    group.close()


@pytest.fixture
def topic(topic_factory) -> str:  # type: ignore[no-untyped-def]
    return topic_factory(partitions=12)


def final_checks(
    driver: Driver,
    production: Production,
    members: Members,
    zk: Any,
    group: str,
    topic: str,
    cluster: Any,
    began: float,
) -> dict[str, Any]:
    sent = drain_everything(driver, production, members, zk, group, topic, cluster)
    members.close()
    ends = {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}
    assert driver.stop() == 0, driver.log_tail()
    assert committed_offsets(zk, group, topic) == ends, "ZooKeeper is not at the log end after the stop"
    summary = judge(
        group_history(cluster, group, topic),
        batches(driver.checkpoint),
        members.reads(),
        members.ids,
        sent,
        sink_keys(driver.output),
        ends,
    )
    summary.update(messages=len(sent), seconds=round(time.monotonic() - began, 1))
    print(summary)
    return summary


def test_members_joining_and_leaving_under_the_query_never_read_a_partition_at_once_and_lose_nothing(
    standalone, wheel, cluster, zk, topic, group_id, members, tmp_path
) -> None:
    began = time.monotonic()
    production = Production(cluster, topic)
    driver = start_driver(standalone, wheel, cluster, group_id, topic, tmp_path)
    try:
        balanced(zk, group_id, topic, 1, driver)
        wait(lambda: len(sink_keys(driver.output)) > 0, 120, "no rows reached the sink", driver)
        for join in (members.join, lambda: members.join_process("b"), members.join):  # one by one: 2, 3, 4 members
            join()
            balanced(zk, group_id, topic, 1 + len(members.ids), driver)
            time.sleep(2.0)
        members.inproc[0].leave()  # clean: commits, releases
        balanced(zk, group_id, topic, 3, driver)
        time.sleep(2.0)
        members.procs[0].kill()  # kill -9: its nodes stay until its session expires
        balanced(zk, group_id, topic, 2, driver)
        time.sleep(2.0)
        members.inproc[1].leave()
        balanced(zk, group_id, topic, 1, driver)  # the query owns everything again
        time.sleep(2.0)
        summary = final_checks(driver, production, members, zk, group_id, topic, cluster, began)
        assert summary["driver_lives"] > 12, "the query never lost and regained a partition"
        assert all(summary["rows"].get(m, 0) > 0 for m in members.ids), f"a member read nothing: {summary}"
    finally:
        production.stop()
        driver.kill_all()


def test_the_drivers_session_expiring_mid_batch_loses_nothing_and_its_commits_stay_fenced(
    standalone, wheel, cluster, zk, topic, group_id, members, tmp_path
) -> None:
    """The source plans nothing while its member is not connected, and the member re-registers in a new
    session (the legacy consumer's handleNewSession): the query survives. The batch in flight completes
    into the sink (exactly once); its partitions may meanwhile go to the plain member, which reads them
    again from the commit point (rule 4: the driver's last batch); the driver commits only partitions its
    new session claimed."""
    sid, password = zk.client_id
    assert server_password(sid) == password, "the ZooKeeper server no longer derives session passwords this way"
    began = time.monotonic()
    production = Production(cluster, topic)
    driver = start_driver(standalone, wheel, cluster, group_id, topic, tmp_path)
    log = CheckpointLog(str(driver.checkpoint))
    try:
        balanced(zk, group_id, topic, 1, driver)
        members.join()  # while batch 0 runs (it starts the executors' Python workers: the slowest batch)
        balanced(zk, group_id, topic, 2, driver)
        wait(lambda: len(sink_keys(driver.output)) > 0, 120, "no rows reached the sink", driver)
        time.sleep(2.0)
        (driver_id,) = set(zk.get_children(znodes.ids_path(group_id))) - members.ids
        node = znodes.member_path(group_id, driver_id)
        expired: list[tuple[int, int]] = []  # (session, batch in flight)
        for _attempt in range(3):
            wait(lambda: (log.planned() or [-1])[-1] > (log.committed() or [-1])[-1], 60, "a batch in flight", driver)
            in_flight = log.planned()[-1]
            session = zk.exists(node).ephemeralOwner
            expire_session(cluster.zookeeper_connect, (session, server_password(session)))
            expired.append((session, in_flight))
            # The member notices, registers again in a new session; the batch in flight completes.
            wait(
                lambda: (stat := zk.exists(node)) is not None and stat.ephemeralOwner != session,
                60,
                "the driver's member did not register again",
                driver,
            )
            wait(lambda: in_flight in log.committed(), 60, "the batch in flight never committed", driver)
            close = group_history(cluster, group_id, topic).closed.get(session)
            assert close is not None, f"session {session:#x} did not end"
            batch = next(b for b in batches(driver.checkpoint) if b.id == in_flight)
            if batch.planned < close.at < (batch.committed or 0):
                break  # mid-batch: planned before the expiry, committed after it
        else:
            raise AssertionError(f"no expiry landed in the middle of a batch: {expired}")
        balanced(zk, group_id, topic, 2, driver)
        wait(lambda: (log.committed() or [-1])[-1] > in_flight, 60, "no batch after the expiry", driver)
        time.sleep(2.0)
        summary = final_checks(driver, production, members, zk, group_id, topic, cluster, began)
        h = group_history(cluster, group_id, topic)
        for session, _ in expired:  # the new session committed; the expired one never did after its end
            assert not [
                w for ws in h.writes.values() for w in ws if w.session == session and w.zxid > h.closed[session].zxid
            ]
        after = [
            w
            for ws in h.writes.values()
            for w in ws
            if w.zxid > h.closed[expired[-1][0]].zxid and h.registrations.get(w.session) == driver_id
        ]
        assert after, "the driver never committed in its new session"
        summary.update(expiries=len(expired), expired_in_batch=in_flight, driver_commits_after=len(after))
        print(summary)
    finally:
        production.stop()
        driver.kill_all()
