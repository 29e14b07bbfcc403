"""A model of Spark's micro-batch loop around the real stream reader: crashes, a Scala member, failing commits, lease blips, broker trouble.

The reader (zkconsumer.spark.stream_reader.ZkStreamReader) and its StreamMember are the real ones;
only the connector (the group state: the real Assignment, offset nodes in a dict), the brokers' log
spans and Spark's driver are modelled. One seed is one random schedule; `run(seed)` returns the
violations found (empty: none) and counts, so the unit test and scripts/bench/spark_model.py share
it. Invariants, checked after every step and at the end:

* nothing lost: once every partition is back with the query and the brokers answer, the query's
  sink and the Scala member's deliveries together hold every produced offset;
* no offset twice in the query's own sink (a replayed batch overwrites its own output, as Spark's
  file sink does);
* ZooKeeper never ahead of what was delivered (the query's sink or the Scala member's);
* a partition the Scala member hands over (having committed its progress) to a query process that
  has planned a batch is not read again below that commit by batches planned after it (before
  that process's first plan the starting options or, after a restart, the checkpoint win: at
  least once across members, as a partition released mid-batch, docs/spark.md).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import ConnectionLoss

from zkconsumer.consumer.chunks import PartitionTopicInfo, StreamQueue
from zkconsumer.coordinator.assignment import Assignment
from zkconsumer.spark.broker_trouble import Answers
from zkconsumer.spark.options import SourceOptions, parse_options
from zkconsumer.spark.stream_member import StreamMember
from zkconsumer.spark.stream_reader import ReadAllAvailable, ReadMaxRows, ZkStreamReader

Key = tuple[str, int]
EPOCH = 100
EVENTS = ("produce", "produce", "trigger", "trigger", "trigger", "scala", "blip", "trouble", "failing-commit", "crash")
CRASH_POINTS = ("after the offset log", "after the sink", "after the commit log")


class Connector:
    """A ConsumerConnector(fetch=False) reduced to what the reader uses: the real Assignment, the
    group's offset nodes (shared with the Scala member), a lease that can blip, commits that can fail."""

    def __init__(self, nodes: dict[Key, int]) -> None:
        self.assignment = Assignment()
        self.nodes = nodes
        self.failure: BaseException | None = None
        self.consumer_id = "q_driver-1"
        self.blips = 0
        self.failing_commits = 0

    def ownership_confirmed(self) -> bool:
        if self.blips:
            self.blips -= 1
            return False
        return True

    def claim(self, key: Key) -> None:
        committed = self.nodes.get(key, -1)
        self.assignment.install([PartitionTopicInfo(key[0], key[1], "q-0", StreamQueue(2), committed, EPOCH)])

    def commit_positions(
        self, positions: Mapping[Key, int], *, epochs: Mapping[str, int | None] | None = None
    ) -> dict[Key, bool]:
        recorded = self.assignment.record_positions(positions, epochs or {})
        if self.failing_commits:
            self.failing_commits -= 1
            raise ConnectionLoss()  # recorded, not written: the member writes it again later
        done = {i.key: i for i in recorded}
        for key, info in done.items():
            self.nodes[key] = info.consumed_offset
            info.committed_offset = info.consumed_offset
        return {k: k in done for k in positions}

    def shutdown(self) -> None:
        pass


class Member(StreamMember):
    """The real StreamMember over a Connector; log spans from the world, with broker trouble."""

    def __init__(self, opts: SourceOptions, conn: Connector, world: World) -> None:
        super().__init__(opts)
        self._conn, self.conn, self.world = conn, conn, world

    def _join(self) -> Any:
        return self.conn

    def spans(self, keys: Any) -> Answers[tuple[int, int]]:
        down, self.world.down = self.world.down, set()
        return Answers(
            {k: (0, self.world.logs[k]) for k in keys if k not in down},
            {k: "LEADER_NOT_AVAILABLE" for k in keys if k in down},
        )

    def times(self, times: Mapping[Key, int]) -> Answers[int]:
        """Every message is stamped after the time asked (0): the first offset there is."""
        return Answers(dict.fromkeys(times, 0))

    def subscription(self) -> dict[str, tuple[int, int]]:
        return {"t": (EPOCH, len(self.world.logs))}

    def topic_epochs(self, topics: Iterable[str]) -> dict[str, int | None]:
        return dict.fromkeys(topics, EPOCH)

    def owners(self, keys: Iterable[Key]) -> dict[Key, str | None]:
        return dict.fromkeys(keys, None)

    def bootstrap(self) -> str:
        return "b:9092"


@dataclass
class World:
    """The brokers' logs, the group's offset nodes, Spark's checkpoint and both members' deliveries."""

    partitions: int
    logs: dict[Key, int] = field(default_factory=dict)
    nodes: dict[Key, int] = field(default_factory=dict)
    down: set[Key] = field(default_factory=set)  # broker trouble at the next lookup
    offset_log: list[dict[str, Any]] = field(default_factory=list)  # Spark's offsets/<id>
    commit_log: int = 0  # batches in commits/
    sink: dict[int, list[tuple[Key, int]]] = field(default_factory=dict)  # batch id -> rows (overwritten on replay)
    scala: list[tuple[Key, int]] = field(default_factory=list)  # the Scala member's deliveries
    # key -> (first batch planned after the Scala member handed it back, the offset it committed):
    # those batches must not read below it (that member delivered it; nothing was in flight)
    handed: dict[Key, tuple[int, int]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


class Model:
    """One seed: the query (a reader process that crashes and comes back) and a Scala member."""

    def __init__(self, seed: int, steps: int = 60) -> None:
        self.rng = random.Random(seed)
        self.seed, self.steps = seed, steps
        self.world = World(partitions=self.rng.randint(1, 3))
        self.world.logs = {("t", p): self.rng.randint(0, 30) for p in range(self.world.partitions)}
        limit = self.rng.choice([None, None, 1, 7, 25])
        self.limit: Any = ReadMaxRows(limit) if limit else ReadAllAvailable()
        self.options = {
            "zookeeper.connect": "zk:2181",
            "group.id": "g",
            "topics": "t",
            "startingOffsets": "earliest",
            "fetchOffset.retryIntervalMs": "0",
        }
        if self.rng.random() < 0.3:  # a time before every message: the same starts, through the lookup
            self.options["startingTimestamp"] = "0"
        # A Scala member holds partition 0 when the query starts (it read part of it) and hands it
        # over later: the query must resume at its commit, never re-read by its starting options.
        self.scala_holds: set[Key] = set()
        if self.rng.random() < 0.4:
            key = ("t", 0)
            self.scala_holds.add(key)
            read = self.rng.randint(0, self.world.logs[key])
            self.world.scala.extend((key, o) for o in range(read))
            self.world.nodes[key] = read
            self.world.count("held by Scala at the start")
        self.world.counts["maxOffsetsPerTrigger"] = limit or 0
        self.start_process()
        self.start: dict[str, Any] = self.reader.initialOffset()
        self.initial = self.start

    def start_process(self) -> None:
        """A (new) driver process: a new member that claims what the Scala member does not hold."""
        self.conn = Connector(self.world.nodes)
        self.planned_here = 0  # batches this process planned (a replay is not one)
        for key in sorted(set(self.world.logs) - self.scala_holds):
            self.conn.claim(key)
        opts = parse_options(self.options, streaming=True)
        self.reader = ZkStreamReader(opts, Member(opts, self.conn, self.world))
        self.reader.sleep = lambda s: None

    # ---- Spark's loop -----------------------------------------------------------------------------
    def trigger(self, crash_at: str | None = None) -> None:
        end = self.reader.latestOffset(self.start, self.limit)
        if end == self.start:
            return
        batch = len(self.world.offset_log)
        self.world.offset_log.append(end)
        self.planned_here += 1
        if crash_at == CRASH_POINTS[0]:
            self.world.count(f"crash {crash_at}")
            return self.crash()
        self.run_batch(batch, self.start, end)
        if crash_at == CRASH_POINTS[1]:
            self.world.count(f"crash {crash_at}")
            return self.crash()
        self.world.commit_log = batch + 1
        if crash_at == CRASH_POINTS[2]:
            self.world.count(f"crash {crash_at}")
            return self.crash()
        self.reader.commit(end)
        self.start = end
        return None

    def run_batch(self, batch: int, start: dict[str, Any], end: dict[str, Any]) -> None:
        rows: list[tuple[Key, int]] = []
        for task in self.reader.partitions(start, end):
            for r in task.ranges:  # type: ignore[attr-defined]
                rows.extend(((r.topic, r.partition), o) for o in range(r.start, r.end))
        self.world.sink[batch] = rows  # a replay overwrites the batch's output
        self.world.count("batches")

    def crash(self) -> None:
        """The driver dies; a new process replays the batch in the offset log but not in the commit log."""
        self.world.count("crashes")
        # A restarted query follows its checkpoint even where a member committed past it meanwhile
        # (Spark's rule, docs/spark.md): it may read again what was handed over before its first plan.
        self.world.handed.clear()
        if self.rng.random() < 0.3:  # the brokers do not answer the new process's first lookup for one
            self.world.down = {("t", self.rng.randrange(self.world.partitions))}
            self.world.count("trouble at a restart")
        self.start_process()
        done = self.world.commit_log
        if len(self.world.offset_log) > done:  # Spark replays batch `done`
            start = self.world.offset_log[done - 1] if done else self.reader.initialOffset()
            end = self.world.offset_log[done]
            self.run_batch(done, start, end)
            self.world.commit_log = done + 1
            self.reader.commit(end)
            self.world.count("replays")
        self.start = self.world.offset_log[-1] if self.world.offset_log else self.reader.initialOffset()

    # ---- the Scala member ----------------------------------------------------------------------------
    def scala_takes_and_returns(self) -> None:
        """A Scala member takes one partition (a rebalance releases it from the query), reads from the
        group's offset to the log end, commits, and the next rebalance gives it back."""
        key = min(self.scala_holds) if self.scala_holds else ("t", self.rng.randrange(self.world.partitions))
        self.scala_holds.discard(key)
        self.conn.assignment.drop([key])
        position = max(0, self.world.nodes.get(key, 0))
        self.world.scala.extend((key, o) for o in range(position, self.world.logs[key]))
        self.world.nodes[key] = max(position, self.world.logs[key])
        if self.rng.random() < 0.5:  # a trigger runs while the Scala member holds it
            self.trigger()
        if self.planned_here:  # this process planned: its starting options and checkpoint's precedence are spent
            self.world.handed[key] = (len(self.world.offset_log), self.world.nodes[key])
        self.conn.claim(key)
        self.world.count("scala hand-overs")

    # ---- the schedule and the checks -------------------------------------------------------------
    def step(self) -> None:
        what = self.rng.choice(EVENTS)
        self.world.count(what)
        if what == "produce":
            key = ("t", self.rng.randrange(self.world.partitions))
            self.world.logs[key] += self.rng.randint(1, 20)
        elif what == "trigger":
            self.trigger()
        elif what == "scala":
            self.scala_takes_and_returns()
        elif what == "blip":
            self.conn.blips = self.rng.randint(1, 2)
            self.trigger()
        elif what == "trouble":
            self.world.down = {("t", self.rng.randrange(self.world.partitions))}
            self.trigger()
        elif what == "failing-commit":
            self.conn.failing_commits = 1
            self.trigger()
        elif what == "crash":
            self.trigger(crash_at=self.rng.choice(CRASH_POINTS))

    def delivered(self) -> dict[Key, set[int]]:
        out: dict[Key, set[int]] = {k: set() for k in self.world.logs}
        for rows in self.world.sink.values():
            for key, offset in rows:
                out[key].add(offset)
        for key, offset in self.world.scala:
            out[key].add(offset)
        return out

    def check(self, when: str) -> None:
        seen: set[tuple[Key, int]] = set()
        for batch, rows in sorted(self.world.sink.items()):
            twice = seen & set(rows)
            if twice:
                self.world.violations.append(f"{when}: batch {batch} holds {sorted(twice)[:3]} twice in the sink")
            seen |= set(rows)
        for key, (first, committed) in self.world.handed.items():
            again = sorted(
                o for b, rows in self.world.sink.items() if b >= first for k, o in rows if k == key and o < committed
            )
            if again:
                self.world.violations.append(
                    f"{when}: {key} handed over at {committed}, read again by the query from {again[0]}"
                )
        delivered = self.delivered()
        for key, offset in self.world.nodes.items():
            if offset > 0 and not all(o in delivered[key] for o in range(offset)):
                self.world.violations.append(f"{when}: ZooKeeper at {offset} for {key}, ahead of the deliveries")

    def run(self) -> World:
        try:
            self.play()
        except Exception as exc:  # noqa: BLE001 - a failure of the query is a finding of this seed
            self.world.violations.append(f"the query failed: {type(exc).__name__}: {exc}")
        return self.world

    def play(self) -> None:
        for n in range(self.steps):
            self.step()
            self.check(f"step {n}")
        self.conn.blips = self.conn.failing_commits = 0
        self.world.down = set()
        while self.scala_holds:
            self.scala_takes_and_returns()
        for _ in range(5000):  # drain: every partition the query's, no trouble, until nothing new
            before = self.start
            self.trigger()
            if self.start == before:
                break
        self.check("drained")
        delivered = self.delivered()
        for key, end in sorted(self.world.logs.items()):
            lost = sorted(set(range(end)) - delivered[key])
            if lost:
                self.world.violations.append(f"lost {key} offsets {lost[:5]} ({len(lost)} in all)")


def run(seed: int, steps: int = 60) -> World:
    """One seed of the model; the world's `violations` (empty: none) and `counts`."""
    return Model(seed, steps).run()
