"""The zkconsumer streaming source on local Spark: exactly-once sink, offsets in ZooKeeper, group sharing."""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import FAST, describe, sink_rows, source_end, wait_until

from harness.members import Recorder, committed_offsets, drain, owner_table, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


class Producer:
    """Produces `batch` numbered messages every `every` seconds on a thread until stopped."""

    def __init__(self, cluster: Any, topic: str, partitions: int, batch: int = 120, every: float = 0.2) -> None:
        self.sent: list[kafka.Produced] = []
        self._stop = threading.Event()
        self._args = (cluster.bootstrap_servers, topic, partitions, batch, every)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        bootstrap, topic, partitions, batch, every = self._args
        while not self._stop.is_set():
            self.sent += kafka.produce_numbered(bootstrap, topic, batch, partitions=partitions, start=len(self.sent))
            self._stop.wait(every)

    def __enter__(self) -> Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def keys(self) -> set[tuple[str, int, int]]:
        return {(m.topic, m.partition, m.offset) for m in self.sent}


def start_query(df: Any, tmp: Path, name: str, trigger: str = "500 milliseconds") -> Any:
    return (
        df.writeStream.format("parquet")
        .option("path", str(tmp / f"{name}-out"))
        .option("checkpointLocation", str(tmp / f"{name}-checkpoint"))
        .queryName(name)
        .trigger(processingTime=trigger)
        .start()
    )


def ends_of(topic: str, cluster: Any) -> dict[tuple[str, int], int]:
    return {(topic, p): hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}


def caught_up(query: Any, want: dict[tuple[str, int], int]) -> bool:
    end = source_end(query)
    return end is not None and all(end.get(k) == v for k, v in want.items())


def sink_progress(rows: list[tuple[str, int, int, bytes]]) -> dict[int, int]:
    """partition -> next offset after the highest one the sink holds."""
    out: dict[int, int] = {}
    for _, partition, offset, _ in rows:
        out[partition] = max(out.get(partition, 0), offset + 1)
    return out


def member_of(thread_id: str) -> str:
    return thread_id.rsplit("-", 1)[0]


def counts(rows: list[tuple[str, int, int, bytes]]) -> collections.Counter[tuple[str, int, int]]:
    return collections.Counter((t, p, o) for t, p, o, _ in rows)


def test_query_is_a_member_commits_its_progress_and_resumes_from_its_checkpoint(
    spark, cluster, zk, stream_reader, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=4)
    before = kafka.produce_numbered(cluster.bootstrap_servers, topic, 40, partitions=4)
    # startingOffsets=earliest: the group has no offsets yet, so the query starts at the log start.
    # A long session timeout: the member must leave on stop, not by expiry.
    df = stream_reader(
        group_id, topic, startingOffsets="earliest", maxOffsetsPerTrigger=300, **{"zookeeper.session.timeout.ms": 30000}
    )
    query = start_query(df, tmp_path, "q1")
    try:
        with Producer(cluster, topic, 4) as producer:
            wait_until(lambda: len(producer.sent) >= 1000, 60, "1000 messages produced", query)
        want = ends_of(topic, cluster)
        wait_until(lambda: caught_up(query, want), 90, "the query to reach the log end", query)
        assert len(query.recentProgress) >= 3, "expected several micro-batches (maxOffsetsPerTrigger)"
        # The next trigger after a completed batch commits it: ZooKeeper shows the sink's progress.
        wanted = {p: o for (_, p), o in want.items()}
        wait_until(lambda: committed_offsets(zk, group_id, topic) == wanted, 30, "offsets in ZooKeeper", query)
        report = describe(cluster, group_id)
        (member,) = report["members"]
        assert member["owned_partitions"] == 4 and member["subscription"] == f"{topic}:1"
        for row in report["partitions"]:
            assert row["consumer_id"] == member["consumer_id"] and row["lag"] == 0
            assert row["current_offset"] == want[(topic, row["partition"])]
    finally:
        query.stop()
    # Stopping the query left the group; the group's offsets stay and lag grows with new data.
    wait_until(lambda: zk.get_children(f"/consumers/{group_id}/ids") == [], 15, "the query to leave the group")
    later = kafka.produce_numbered(cluster.bootstrap_servers, topic, 20, partitions=4, start=10_000)
    report = describe(cluster, group_id)
    assert report["total_lag"] == 20 and all(r["owner"] is None for r in report["partitions"])

    rows = sink_rows(spark, str(tmp_path / "q1-out"))
    sent = {(m.topic, m.partition, m.offset) for m in before + producer.sent}
    assert counts(rows) == {k: 1 for k in sent}, "every produced message exactly once in the sink"
    assert sink_progress(rows) == committed_offsets(zk, group_id, topic)

    # Restart on the same checkpoint: it follows the checkpoint and picks up only the new messages.
    query = start_query(stream_reader(group_id, topic), tmp_path, "q1")
    try:
        want = ends_of(topic, cluster)
        wait_until(lambda: caught_up(query, want), 60, "the restarted query to catch up", query)
    finally:
        query.stop()
    rows = sink_rows(spark, str(tmp_path / "q1-out"))
    assert counts(rows) == {k: 1 for k in sent | {(m.topic, m.partition, m.offset) for m in later}}


def test_two_queries_split_the_partitions_and_one_takes_over_when_the_other_stops(
    spark, cluster, zk, stream_reader, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=6)
    queries = {}
    try:
        with Producer(cluster, topic, 6) as producer:
            for name in ("qa", "qb"):
                queries[name] = start_query(stream_reader(group_id, topic, startingOffsets="earliest"), tmp_path, name)
                wait_until(lambda: source_end(queries[name]) is not None, 60, f"{name}'s first batch", queries[name])
            split = wait_for_balanced(zk, group_id, [topic], members=2, timeout=60)
            assert len({member_of(o) for o in split.values()}) == 2, split  # range: three partitions each
            time.sleep(3)  # a few micro-batches each
            queries.pop("qb").stop()
            (survivor,) = {member_of(o) for o in wait_for_balanced(zk, group_id, [topic], members=1).values()}
            time.sleep(2)  # keep producing while qa owns all six
        want = ends_of(topic, cluster)
        wait_until(lambda: caught_up(queries["qa"], want), 90, "qa to take over every partition", queries["qa"])
        wait_until(
            lambda: committed_offsets(zk, group_id, topic) == {p: o for (_, p), o in want.items()},
            30,
            "qa's offsets in ZooKeeper",
            queries["qa"],
        )
    finally:
        for query in queries.values():
            query.stop()
    rows_a, rows_b = sink_rows(spark, str(tmp_path / "qa-out")), sink_rows(spark, str(tmp_path / "qb-out"))
    qb_partitions = {p for (_, p), o in split.items() if member_of(o) != survivor}
    assert {p for _, p, _, _ in rows_b} == qb_partitions, "qb read only the partitions the group gave it"
    for rows in (rows_a, rows_b):
        assert max(counts(rows).values()) == 1, "no duplicates within one query's sink"
    seen = set(counts(rows_a)) | set(counts(rows_b))
    assert seen == producer.keys(), f"lost: {sorted(producer.keys() - seen)[:5]}"
    # Only partitions that changed hands can have been read by both (at-least-once across members).
    assert {p for _, p, _ in set(counts(rows_a)) & set(counts(rows_b))} <= qb_partitions


def test_mixed_group_streaming_query_and_plain_member(
    spark, cluster, zk, stream_reader, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=4)
    recorder = Recorder()
    conn = ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper_connect,
            "group.id": group_id,
            "consumer.id": "plain",
            "auto.offset.reset": "smallest",
            "consumer.timeout.ms": 200,
            "auto.commit.interval.ms": 500,
            **FAST,
        }
    )
    query = None
    try:
        drain("plain", conn.create_message_streams({topic: 1})[topic], recorder)
        query = start_query(stream_reader(group_id, topic, startingOffsets="earliest"), tmp_path, "qm")
        owners = wait_for_balanced(zk, group_id, [topic], members=2, timeout=60)
        mine = {(topic, p) for (_, p), o in owners.items() if not o.startswith(f"{group_id}_plain")}
        assert len(mine) == 2, owners  # range over threads: two partitions each
        sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 400, partitions=4)
        want = ends_of(topic, cluster)
        wait_until(
            lambda: caught_up(query, {k: v for k, v in want.items() if k in mine}),
            60,
            "the query to read its partitions",
            query,
        )
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in sent if (m.topic, m.partition) not in mine}, 60)
        wait_until(
            lambda: committed_offsets(zk, group_id, topic) == {p: o for (_, p), o in want.items()},
            30,
            "both members' offsets in ZooKeeper",
            query,
        )
        assert owner_table(zk, group_id, [topic]) == owners
    finally:
        if query is not None:
            query.stop()
        conn.shutdown()
    rows = sink_rows(spark, str(tmp_path / "qm-out"))
    assert {(t, p) for t, p, _, _ in rows} == mine, "the query read only the partitions it owns"
    assert counts(rows) == {(m.topic, m.partition, m.offset): 1 for m in sent if (m.topic, m.partition) in mine}
    assert not {(d.topic, d.partition) for d in recorder.deliveries} & mine


def test_available_now_with_a_whitelist_reads_the_backlog_in_capped_batches_and_commits_it(
    spark, cluster, zk, topic_factory, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=3)
    sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 300, partitions=3)
    df = (
        spark.readStream.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", group_id)
        .option("whitelist", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 70)
        .load()
    )
    query = (
        df.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "Trigger.AvailableNow ends once the backlog is read"
    assert query.exception() is None
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [70, 70, 70, 70, 20]
    rows = sink_rows(spark, str(tmp_path / "out"))
    assert counts(rows) == {(m.topic, m.partition, m.offset): 1 for m in sent}
    assert committed_offsets(zk, group_id, topic) == {0: 100, 1: 100, 2: 100}


def values(rows: list[tuple[str, int, int, bytes]], topic: str) -> collections.Counter[bytes]:
    return collections.Counter(v for t, _, _, v in rows if t == topic)


def test_a_new_wildcard_topic_is_read_from_its_first_message(spark, cluster, zk, group_id, tmp_path) -> None:
    prefix = f"wild-{group_id[-12:]}"
    cluster.create_topic(f"{prefix}-a", 1)
    reader = (
        spark.readStream.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", group_id)
        .option("whitelist", f"{prefix}-.*")
    )
    for key, value in FAST.items():
        reader = reader.option(key, value)
    # Default startingOffsets (latest, from auto.offset.reset). Right after a batch, with a long
    # trigger: the new topic is claimed and filled well before the query plans again.
    query = start_query(reader.load(), tmp_path, "qw", trigger="10 seconds")
    try:
        wait_for_balanced(zk, group_id, [f"{prefix}-a"], members=1, timeout=60)
        kafka.produce_numbered(cluster.bootstrap_servers, f"{prefix}-a", 3, partitions=1)
        wait_until(lambda: caught_up(query, ends_of(f"{prefix}-a", cluster)), 60, "a batch of the first topic", query)
        cluster.create_topic(f"{prefix}-b", 2)
        sent = kafka.produce_numbered(cluster.bootstrap_servers, f"{prefix}-b", 25, partitions=2)
        want = ends_of(f"{prefix}-b", cluster)
        wait_until(lambda: caught_up(query, want), 60, "the query to plan the new topic", query)
    finally:
        query.stop()
    rows = sink_rows(spark, str(tmp_path / "qw-out"))
    assert values(rows, f"{prefix}-b") == {m.value: 1 for m in sent}, "messages produced before the trigger"


def test_a_restarted_query_reads_a_re_created_topic_from_its_start(
    spark, cluster, zk, stream_reader, group_id, tmp_path
) -> None:
    topic = f"recreated-{group_id[-12:]}"
    cluster.create_topic(topic, 1)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 30, partitions=1)
    query = start_query(stream_reader(group_id, topic, startingOffsets="earliest"), tmp_path, "qr")
    try:
        wait_until(lambda: caught_up(query, {(topic, 0): 30}), 60, "the old topic to be read", query)
    finally:
        query.stop()
    wait_until(lambda: zk.get_children(f"/consumers/{group_id}/ids") == [], 15, "the query to leave the group")
    kafka.delete_topic(cluster.bootstrap_servers, topic)
    wait_until(lambda: zk.exists(znodes.topic_path(topic)) is None, 60, "the topic deletion")
    cluster.create_topic(topic, 1)
    sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 45, partitions=1, start=1000)
    # The checkpoint says 30; in the new log that position would skip [0, 30). failOnDataLoss=true
    # (the default) fails the query naming the topic, as Spark's source (tests/unit); false reads it.
    query = start_query(stream_reader(group_id, topic, failOnDataLoss="false"), tmp_path, "qr")
    try:
        wait_until(lambda: caught_up(query, {(topic, 0): 45}), 60, "the new topic to be read", query)
        wait_until(lambda: committed_offsets(zk, group_id, topic) == {0: 45}, 30, "45 committed", query)
    finally:
        query.stop()
    rows = sink_rows(spark, str(tmp_path / "qr-out"))
    fresh = {m.value for m in sent}
    got = collections.Counter(v for t, _, _, v in rows if t == topic and v in fresh)
    assert got == {v: 1 for v in fresh}, "every message of the new incarnation exactly once"
