"""The stream source against Spark's checkpoint: what stop() commits, which restart disagreements it reports."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from test_spark_stream_reader import T0, T1, FakeMember, Reader

from zkconsumer.spark.checkpoint import (
    CheckpointError,
    CheckpointLog,
    batch_ids,
    last_completed,
    parse_offset_entries,
    previous_end,
)
from zkconsumer.spark.offsets import decode_offsets, encode_offsets
from zkconsumer.spark.options import OptionError, parse_options
from zkconsumer.spark.reconcile import canonical, describe, disagreements, forward_commits, own_entry, split_trailing
from zkconsumer.spark.stream_reader import ReadAllAvailable

META = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'


def write_batch(checkpoint: Path, batch: int, *entries: dict[str, Any] | None, committed: bool = True) -> None:
    """offsets/<batch> (and commits/<batch>) as Spark writes them, with the checksum files next to them."""
    for sub in ("offsets", "commits"):
        (checkpoint / sub).mkdir(parents=True, exist_ok=True)
    lines = ["v1", META] + [json.dumps(e, indent=None) if e is not None else "-" for e in entries]
    (checkpoint / "offsets" / str(batch)).write_text("\n".join(lines))
    (checkpoint / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    if committed:
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (checkpoint / "commits" / f".{batch}.crc").write_bytes(b"crc")


# ---- pure pieces -----------------------------------------------------------------------------------
def test_offset_log_entries_are_the_lines_after_the_metadata_in_source_order() -> None:
    text = "v1\n" + META + '\n{"t/0": 5, "@epochs": {"t": 9}}\n-\n17'
    assert parse_offset_entries(text) == [{"t/0": 5, "@epochs": {"t": 9}}, None, None]
    with pytest.raises(CheckpointError, match="expected 'v1'"):
        parse_offset_entries("v2\n{}\n{}")
    assert batch_ids(["3", ".3.crc", "10", "2", ".10.abc.tmp"]) == [2, 3, 10]


def test_our_entry_is_recognised_whatever_the_formatting_and_only_if_we_planned_it() -> None:
    ours = encode_offsets({T0: 30, T1: 4}, epochs={"t": 100})
    spark_copy = json.loads(json.dumps(dict(reversed(list(ours.items())))))  # other key order, reparsed
    entries = [{"other/0": 3}, None, spark_copy]
    assert own_entry(entries, [canonical(ours)]) == (2, spark_copy)
    assert own_entry(entries, [canonical(encode_offsets({T0: 31, T1: 4}, epochs={"t": 100}))]) is None


def test_a_completed_batch_commits_only_owned_partitions_forward_in_the_same_incarnation() -> None:
    end = encode_offsets({T0: 30, T1: 8, ("u", 0): 5}, epochs={"t": 100, "u": 7})
    owned = {T0: 10, T1: 9, ("u", 0): 0}  # T1: the member already holds more; not owned: nothing of "v"
    assert forward_commits(end, owned, {"t": 100, "u": 7}) == {T0: 30, ("u", 0): 5}
    assert forward_commits(end, owned, {"t": 100, "u": 8}) == {T0: 30}, "u re-created since: not its positions"
    assert forward_commits(end, {T1: 0}, {"t": 100}) == {T1: 8}


def test_disagreements_are_split_into_the_querys_own_trailing_commit_and_outside_changes() -> None:
    differ = disagreements({T0: 120, T1: 80, ("t", 2): 5}, {T0: 100, T1: -1, ("t", 2): 5, ("t", 3): 9})
    assert differ == {T0: (120, 100), T1: (80, -1)}
    assert describe(differ) == "t-0 checkpoint 120, ZooKeeper 100; t-1 checkpoint 80, ZooKeeper none"
    trailing, unexplained = split_trailing(differ, {T0: 100, T1: 60})
    assert trailing == {T0: (120, 100)} and unexplained == {T1: (80, -1)}


# ---- reading a checkpoint directory ----------------------------------------------------------------
def test_the_log_gives_the_last_committed_batch_and_the_end_before_a_given_one(tmp_path: Path) -> None:
    end0, end1, end2 = ({"t/0": n} for n in (10, 20, 30))
    write_batch(tmp_path, 0, {"x/0": 1}, end0)
    write_batch(tmp_path, 1, {"x/0": 2}, end1)
    write_batch(tmp_path, 2, {"x/0": 3}, end2, committed=False)  # planned, cancelled by the stop
    log = CheckpointLog(str(tmp_path))
    assert log.exists() and log.planned() == [0, 1, 2] and log.committed() == [0, 1]
    assert last_completed(log, [canonical(end1), canonical(end2)]) == (1, end1)
    assert last_completed(log, [canonical(end2)]) == (1, None), "the committed batch is not one we know"
    assert previous_end(log, end2) == {T0: 20}
    assert previous_end(CheckpointLog(f"file://{tmp_path}"), end1) == {T0: 10}
    assert previous_end(log, {"t/0": 99}) == {}
    assert not CheckpointLog(str(tmp_path / "missing")).exists()
    assert last_completed(CheckpointLog(str(tmp_path / "missing")), [canonical(end0)]) == (None, None)


def test_the_checkpoint_option_is_for_streams() -> None:
    base = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}
    assert parse_options({**base, "checkpointLocation": "/chk/q"}, streaming=True).checkpoint_location == "/chk/q"
    assert (
        "checkpointlocation" not in parse_options({**base, "checkpointLocation": "/c"}, streaming=True).consumer_props
    )
    with pytest.raises(OptionError, match="streaming reads only"):
        parse_options({**base, "checkpointLocation": "/chk/q"}, streaming=False)


# ---- the reader: stop() ------------------------------------------------------------------------------
def started(tmp_path: Path, logs: dict[Any, tuple[int, int]]) -> tuple[FakeMember, Reader]:
    member = FakeMember()
    for key in logs:
        member.claim(key, -1, epoch=100)
    return member, Reader(
        member,
        logs,
        startingOffsets="earliest",
        checkpointLocation=str(tmp_path),
        **{"bootstrap.servers": "broker:9092"},
    )


def test_stop_commits_the_last_batch_the_sink_committed(tmp_path: Path) -> None:
    member, reader = started(tmp_path, {T0: (0, 30), T1: (0, 12)})
    initial = reader.initialOffset()
    end0 = reader.latestOffset(initial, ReadAllAvailable())
    write_batch(tmp_path, 0, end0)  # the sink committed batch 0; Spark plans nothing more (long trigger)
    assert [(r.start, r.end) for t in reader.partitions(initial, end0) for r in t.ranges] == [(0, 30), (0, 12)]
    assert member.nodes == {T0: (0, 100), T1: (0, 100)}, "batch 0's start only, before the stop"
    reader.stop()
    assert member.left and member.nodes == {T0: (30, 100), T1: (12, 100)}


def test_stop_never_commits_a_batch_the_stop_cancelled(tmp_path: Path) -> None:
    member, reader = started(tmp_path, {T0: (0, 30)})
    end0 = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    write_batch(tmp_path, 0, end0)
    reader.logs[T0] = (0, 50)
    end1 = reader.latestOffset(end0, ReadAllAvailable())  # batch 1 [30, 50): planned, then cancelled
    write_batch(tmp_path, 1, end1, committed=False)
    reader.stop()
    assert member.nodes[T0] == (30, 100)


def test_stop_without_the_option_or_with_another_querys_checkpoint_commits_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    member = FakeMember()
    member.claim(T0, -1, epoch=100)
    reader = Reader(member, {T0: (0, 30)}, startingOffsets="earliest")
    end0 = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    reader.stop()
    assert member.nodes[T0] == (0, 100)
    member, reader = started(tmp_path, {T0: (0, 30)})
    end0 = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    write_batch(tmp_path, 0, {**end0, "t/0": 29})  # same topic, other positions: not this query's
    with caplog.at_level(logging.WARNING, "zkconsumer.spark.source"):
        reader.stop()
    assert member.nodes[T0] == (0, 100)
    assert "has none of this query's offsets" in caplog.text


def test_stop_does_not_commit_partitions_the_query_no_longer_owns(tmp_path: Path) -> None:
    member, reader = started(tmp_path, {T0: (0, 30), T1: (0, 12)})
    end0 = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    write_batch(tmp_path, 0, end0)
    member.release([T1])  # moved to another member after batch 0 was planned
    reader.stop()
    assert member.nodes == {T0: (30, 100), T1: (0, 100)}


# ---- the reader: a restart where ZooKeeper and the checkpoint disagree -------------------------------
def restarted(
    tmp_path: Path, zookeeper: dict[Any, int], logs: dict[Any, tuple[int, int]], **options: str
) -> tuple[FakeMember, Reader]:
    member = FakeMember()
    for key, offset in zookeeper.items():
        member.claim(key, offset, epoch=100)
    return member, Reader(member, logs, **options)


def test_the_checkpoint_wins_and_an_outside_change_of_zookeeper_is_reported_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    end0 = encode_offsets({T0: 30, T1: 12}, epochs={"t": 100})
    end1 = encode_offsets({T0: 40, T1: 20}, epochs={"t": 100})
    write_batch(tmp_path, 0, end0)
    write_batch(tmp_path, 1, end1)
    # While the query was down: T0 reset to 0 (`zkconsumer offsets reset`); T1 at batch 0's end,
    # where the query's own commit left it (it commits a batch when it plans the next one).
    member, reader = restarted(tmp_path, {T0: 0, T1: 12}, {T0: (0, 40), T1: (0, 20)}, checkpointLocation=str(tmp_path))
    with caplog.at_level(logging.INFO, "zkconsumer.spark.source"):
        assert reader.latestOffset(end1, ReadAllAvailable()) is end1  # nothing new since the checkpoint
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "t-0 checkpoint 40, ZooKeeper 0" in warnings[0] and "t-1" not in warnings[0]
    assert "The checkpoint wins" in warnings[0]
    assert any("t-1 checkpoint 20, ZooKeeper 12" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)
    assert member.nodes == {T0: (40, 100), T1: (20, 100)}, "ZooKeeper overwritten with the checkpoint's offsets"


def test_without_the_option_every_disagreement_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    end = encode_offsets({T0: 40}, epochs={"t": 100})
    member, reader = restarted(tmp_path, {T0: 30}, {T0: (0, 45)})
    with caplog.at_level(logging.WARNING, "zkconsumer.spark.source"):
        nxt = reader.latestOffset(end, ReadAllAvailable())
    assert decode_offsets(nxt) == {T0: 45} and "t-0 checkpoint 40, ZooKeeper 30" in caplog.text
    assert "set the option checkpointLocation" in caplog.text


def test_a_first_trigger_that_owns_nothing_yet_does_not_use_up_the_checkpoints_precedence(tmp_path: Path) -> None:
    """The dead driver's owner nodes live until its session expires: the first triggers own nothing.
    Once the partition is claimed, the checkpoint still wins over a ZooKeeper offset moved ahead."""
    end = encode_offsets({T0: 40}, epochs={"t": 100})
    member = FakeMember()
    reader = Reader(member, {T0: (0, 90)})
    assert reader.latestOffset(end, ReadAllAvailable()) is end
    member.claim(T0, 70, epoch=100)  # an operator's `offsets reset --to-offset 70` meanwhile
    nxt = reader.latestOffset(end, ReadAllAvailable())
    assert decode_offsets(nxt) == {T0: 90} and member.nodes[T0] == (40, 100), "resumes at 40, not 70"
