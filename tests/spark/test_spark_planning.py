"""Pure planning logic of the zkconsumer source: offset JSON, start precedence, rate limits, ingest recovery."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from zkconsumer.spark.broker_trouble import Answers
from zkconsumer.spark.ingest import IngestRun, recover, run_name
from zkconsumer.spark.offsets import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetRange,
    batch_ranges,
    decode_offsets,
    encode_offsets,
    initial_position,
    rate_limit,
    settle,
    split,
)
from zkconsumer.spark.options import OptionError, SourceOptions, parse_options
from zkconsumer.spark.stream_member import StreamMember
from zkconsumer.spark.stream_reader import ReadAllAvailable, ReadMaxRows, ZkStreamReader

pytestmark = pytest.mark.spark

BASE = {"zookeeper.connect": "zk:2181/kafka", "group.id": "g"}


def test_offsets_json_has_stable_order_and_round_trips() -> None:
    a = encode_offsets({("t", 10): 5, ("t", 2): 7, ("a", 0): 1}, {("t", 2): 3})
    b = encode_offsets({("a", 0): 1, ("t", 2): 7, ("t", 10): 5}, {("t", 2): 3})
    assert json.dumps(a) == json.dumps(b)
    assert list(a) == ["@from", "a/0", "t/2", "t/10"]  # by topic, then partition number
    assert decode_offsets(json.loads(json.dumps(a))) == {("t", 10): 5, ("t", 2): 7, ("a", 0): 1}
    with pytest.raises(ValueError):
        decode_offsets({"no-partition": 1})


def test_start_precedence_explicit_then_committed_then_fallback() -> None:
    explicit = {("t", 0): 42}
    assert initial_position(("t", 0), 7, explicit=explicit, fallback="latest", ignore_committed=False) == 42
    assert initial_position(("t", 1), 7, explicit=explicit, fallback="latest", ignore_committed=False) == 7
    assert initial_position(("t", 1), -1, explicit=explicit, fallback="latest", ignore_committed=False) == LATEST
    assert initial_position(("t", 1), 7, explicit={}, fallback="earliest", ignore_committed=True) == EARLIEST


def test_settle_resolves_sentinels_and_reports_data_loss() -> None:
    assert settle(("t", 0), EARLIEST, 10, 20, fail_on_data_loss=True) == 10
    assert settle(("t", 0), LATEST, 10, 20, fail_on_data_loss=True) == 20
    assert settle(("t", 0), 15, 10, 20, fail_on_data_loss=True) == 15
    with pytest.raises(DataLossError, match="before the log start"):
        settle(("t", 0), 5, 10, 20, fail_on_data_loss=True)
    assert settle(("t", 0), 5, 10, 20, fail_on_data_loss=False) == 10
    assert settle(("t", 0), 25, 10, 20, fail_on_data_loss=False) == 10


def test_rate_limit_is_proportional_exact_and_deterministic() -> None:
    spans = {("t", 0): (0, 100), ("t", 1): (0, 50), ("t", 2): (10, 10), ("t", 3): (0, 1)}
    ends = rate_limit(spans, 31)
    assert sum(ends[k] - spans[k][0] for k in spans) == 31
    assert ends[("t", 2)] == 10 and ends[("t", 0)] - 0 > ends[("t", 1)] - 0
    assert rate_limit(spans, 31) == ends
    assert rate_limit(spans, None) == {k: hi for k, (_, hi) in spans.items()}
    assert rate_limit(spans, 10_000) == {k: hi for k, (_, hi) in spans.items()}


def test_batch_ranges_start_at_the_previous_end_unless_from_says_otherwise() -> None:
    start = encode_offsets({("t", 0): 5, ("t", 1): 7, ("t", 3): 9})
    end = encode_offsets({("t", 0): 9, ("t", 1): 9, ("t", 2): 4, ("t", 3): 9}, {("t", 1): 8, ("t", 2): 1})
    assert batch_ranges(start, end) == [(("t", 0), 5, 9), (("t", 1), 8, 9), (("t", 2), 1, 4)]


def test_split_halves_the_largest_ranges_for_min_partitions() -> None:
    parts = split([(("t", 0), 0, 10), (("t", 1), 0, 3)], "b:9092", 4)
    assert [(p.partition, p.start, p.end) for p in parts] == [(0, 0, 2), (0, 2, 5), (0, 5, 10), (1, 0, 3)]
    assert pickle.loads(pickle.dumps(parts[0])) == parts[0]
    assert isinstance(parts[0], OffsetRange)


def test_options_validation_and_defaults() -> None:
    stream = parse_options({**BASE, "topics": "a, b", "fetch.message.max.bytes": "2097152"}, streaming=True)
    assert stream.topics == ("a", "b") and stream.starting == "latest"  # the legacy default: largest
    assert stream.consumer_props == {**BASE, "fetch.message.max.bytes": "2097152"}
    conf = stream.reader_config()
    assert conf["max.partition.fetch.bytes"] == 2097152 and conf["enable.partition.eof"] is True
    assert (
        parse_options({**BASE, "topics": "a", "auto.offset.reset": "smallest"}, streaming=True).starting == "earliest"
    )
    batch = parse_options({**BASE, "whitelist": "orders.*", "startingOffsets": '{"orders/1": 5}'}, streaming=False)
    assert batch.starting == "earliest" and batch.starting_explicit == {("orders", 1): 5}
    assert batch.wants("orders-eu") and not batch.wants("payments")
    for bad, streaming in [
        ({"topics": "a", "whitelist": "a"}, True),
        ({}, True),
        ({"topics": "a", "startingOffsets": "middle"}, True),
        ({"topics": "a", "endingOffsets": "latest"}, True),
        ({"topics": "a", "maxOffsetsPerTrigger": "10"}, False),
        ({"topics": "a", "maxOffsetsPerTrigger": "0"}, True),
    ]:
        with pytest.raises(OptionError):
            parse_options({**BASE, **bad}, streaming=streaming)


class FakeGroup(StreamMember):
    """The stream reader's member with the group and the brokers replaced by dicts."""

    def __init__(
        self, opts: SourceOptions, owned: dict[tuple[str, int], int], logs: dict[tuple[str, int], tuple[int, int]]
    ) -> None:
        super().__init__(opts)
        self.owned_now, self.logs = owned, logs
        self.commits: list[dict[tuple[str, int], int]] = []

    def owned(self, member: Any = None) -> dict[tuple[str, int], int]:
        return dict(self.owned_now)

    def connected(self) -> bool:
        return True

    def released_since_snapshot(self, keys: Any) -> set[tuple[str, int]]:
        return set()  # the dict is the group: it changes only between calls

    def spans(self, keys: Any) -> Answers[tuple[int, int]]:
        return Answers({k: self.logs[k] for k in keys})

    def subscription(self) -> dict[str, tuple[int, int]]:
        counts: dict[str, int] = {}
        for topic, partition in self.logs:
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        return {t: (1, n) for t, n in counts.items()}

    def commit(self, positions: dict[tuple[str, int], int], member: Any = None) -> None:
        if positions:
            self.commits.append(positions)
            self.owned_now.update(positions)


class FakeGroupReader(ZkStreamReader):
    """The stream reader's planning over a FakeGroup; `owned`, `logs` and `commits` are the group's."""

    def __init__(
        self, owned: dict[tuple[str, int], int], logs: dict[tuple[str, int], tuple[int, int]], **options: str
    ) -> None:
        opts = parse_options({**BASE, "topics": "t", **options}, streaming=True)
        self.group = FakeGroup(opts, owned, logs)
        super().__init__(opts, self.group)
        self.logs, self.commits = logs, self.group.commits

    @property
    def owned(self) -> dict[tuple[str, int], int]:
        return self.group.owned_now

    @owned.setter
    def owned(self, value: dict[tuple[str, int], int]) -> None:
        self.group.owned_now = value


def test_stream_planning_follows_checkpoint_then_group_and_only_owned_partitions_advance() -> None:
    t0, t1, t2 = ("t", 0), ("t", 1), ("t", 2)
    reader = FakeGroupReader({t0: 40, t1: -1}, {t0: (0, 100), t1: (0, 50), t2: (0, 70)})
    # New query: committed offset for t0, the legacy default (latest) for t1; ZooKeeper unchanged.
    start = reader.initialOffset()
    assert decode_offsets(start) == {t0: 40, t1: 50}
    # A restarted query: its first plan follows the checkpoint even where ZooKeeper is ahead.
    checkpoint = encode_offsets({t0: 30, t1: 50})
    end = reader.latestOffset(checkpoint, ReadAllAvailable())
    assert decode_offsets(end) == {t0: 100, t1: 50} and reader.commits[-1] == {t0: 30, t1: 50}
    assert batch_ranges(checkpoint, end) == [(t0, 30, 100)]
    # t1 moves to another member, t2 comes to us: t1 keeps its position but stops, t2 starts at
    # the group's committed offset in this very batch (the "@from" entry).
    reader.owned = {t0: 100, t2: 20}
    reader.logs[t1] = (0, 60)
    nxt = reader.latestOffset(end, ReadMaxRows(25))
    assert decode_offsets(nxt) == {t0: 100, t1: 50, t2: 45}
    assert batch_ranges(end, nxt) == [(t2, 20, 45)]
    # t1 comes back after the other member consumed up to 55: resume there, not at our 50.
    reader.owned = {t0: 100, t1: 55, t2: 45}
    last = reader.latestOffset(nxt, ReadAllAvailable())
    assert batch_ranges(nxt, last) == [(t1, 55, 60), (t2, 45, 70)]
    # Nothing new: the same offsets come back, so Spark runs no batch.
    reader.owned.update({t1: 60, t2: 70})
    assert reader.latestOffset(last, ReadAllAvailable()) is last


def test_stream_reader_pickles_without_its_driver_state() -> None:
    reader = FakeGroupReader({}, {})
    reader.member._conn = object()  # stands in for the ConsumerConnector (threads, sockets)
    copy = pickle.loads(pickle.dumps(reader))
    assert copy.member._conn is None and copy.opts == reader.opts


def test_ingest_recovery_skips_runs_whose_data_is_written_but_not_committed() -> None:
    starts = {("t", 0): 100, ("t", 1): 100, ("t", 2): 40}
    runs = [
        IngestRun("run=t-a", {0: (100, 150), 1: (100, 120)}),
        IngestRun("run=t-b", {0: (150, 175)}),
        IngestRun("run=t-old", {2: (0, 40)}),
        IngestRun("run=t-c", None),
    ]
    assert recover(starts, runs) == {("t", 0): 175, ("t", 1): 120, ("t", 2): 40}
    ranges = {("t", 0): (0, 5), ("t", 1): (2, 9)}
    name = run_name("t", ranges, group="g", epoch=7)
    assert name == run_name("t", dict(reversed(list(ranges.items()))), group="g", epoch=7)
    assert name != run_name("t", {("t", 0): (0, 6), ("t", 1): (2, 9)}, group="g", epoch=7)
    # The same offsets of a re-created topic, or of another group, are other data: another directory.
    assert name != run_name("t", ranges, group="g", epoch=8) != run_name("t", ranges, group="h", epoch=7)
