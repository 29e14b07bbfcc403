"""The batch side: spark.read.format("zkconsumer") and the spark_jobs/ingest.py job (write, then commit)."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from spark_helpers import ROOT, sink_rows

from harness.members import committed_offsets, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.spark import ingest, ingest_job
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.guarded_write import write_offset_guarded

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def keys(produced) -> set[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return {(m.topic, m.partition, m.offset) for m in produced}


def counts(rows) -> collections.Counter[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return collections.Counter((t, p, o) for t, p, o, _ in rows)


def log_ends(cluster, topic: str) -> dict[int, int]:  # type: ignore[no-untyped-def]
    return {p: hi for p, (_, hi) in kafka.end_offsets(cluster.bootstrap_servers, topic).items()}


def py_files(tmp: Path) -> Path:
    """What a cluster user ships with --py-files: the zkconsumer package (zkconsumer.spark in it) in one zip."""
    target = tmp / "zkconsumer-spark.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for package in ("zkconsumer",):
            for path in (ROOT / package).rglob("*.py"):
                zf.write(path, path.relative_to(ROOT))
    return target


def test_batch_read_from_committed_or_given_offsets_without_joining(spark, cluster, zk, topic_factory, group_id):
    topic = topic_factory(partitions=3)
    sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 150, partitions=3)
    for partition in (0, 1):  # partition 2 has no committed offset: batch reads start it at earliest
        assert write_offset_guarded(zk, group_id, topic, partition, 30) is None

    def read(**options: str) -> list:  # type: ignore[type-arg]
        reader = (
            spark.read.format("zkconsumer")
            .option("zookeeper.connect", cluster.zookeeper_connect)
            .option("group.id", group_id)
            .option("topics", topic)
        )
        for key, value in options.items():
            reader = reader.option(key, value)
        rows = reader.load().collect()
        return [(r.topic, r.partition, r.offset, bytes(r.value)) for r in rows]

    rows = read()
    assert counts(rows) == {k: 1 for k in keys(sent) if k[1] == 2 or k[2] >= 30}
    by_key = {(m.topic, m.partition, m.offset): m.value for m in sent}
    assert all(by_key[(t, p, o)] == v for t, p, o, v in rows)
    rows = read(
        startingOffsets=json.dumps({f"{topic}/0": 45}), endingOffsets=json.dumps({f"{topic}/0": 47, f"{topic}/1": 30})
    )
    assert sorted((p, o) for _, p, o, _ in rows) == [(0, 45), (0, 46)] + [(2, o) for o in range(50)]
    assert zk.exists(f"/consumers/{group_id}/ids") is None, "a batch read never joins the group"
    assert committed_offsets(zk, group_id, topic) == {0: 30, 1: 30}, "nor commits"


def test_batch_read_keeps_keys_headers_and_timestamps(spark, cluster, topic_factory, group_id) -> None:
    from confluent_kafka import Producer

    topic = topic_factory(partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce(topic, b"v0", key=b"k0", headers=[("h", b"x"), ("n", None)], timestamp=1_700_000_000_123)
    producer.produce(topic, None, key=None)
    assert producer.flush(30) == 0
    df = (
        spark.read.format("zkconsumer")
        .option("zookeeper.connect", cluster.zookeeper_connect)
        .option("group.id", group_id)
        .option("topics", topic)
        .option("includeHeaders", "true")
        .load()
    )
    first, second = sorted(df.collect(), key=lambda r: r.offset)
    assert (first.key, first.value, first.topic, first.partition, first.offset) == (b"k0", b"v0", topic, 0, 0)
    assert [(h.key, h.value) for h in first.headers] == [("h", b"x"), ("n", None)]
    assert first.timestamp.timestamp() == 1_700_000_000.123
    assert first.timestampType == 0  # CreateTime
    assert (second.key, second.value, second.headers, second.offset) == (None, None, None, 1)


def test_ingest_writes_then_commits_and_a_rerun_after_a_failure_adds_no_duplicates(
    spark, cluster, zk, topic_factory, group_id, tmp_path, monkeypatch
) -> None:
    topic = topic_factory(partitions=4)
    out = tmp_path / "out"
    sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 400, partitions=4)
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]

    # 1. Full ingest through spark-submit, the code shipped as --py-files (as on a cluster), and on
    # PYTHONPATH for the data source's planner processes, which --py-files does not reach.
    shipped = py_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(shipped)}
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("spark-submit")),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            "--driver-memory",
            "512m",
            "--py-files",
            str(shipped),
            str(ROOT / "spark_jobs" / "ingest.py"),
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert "committed" in done.stdout  # spark-submit passes the driver's stderr (our progress) to stdout
    assert counts(sink_rows(spark, str(out))) == {k: 1 for k in keys(sent)}
    assert committed_offsets(zk, group_id, topic) == log_ends(cluster, topic) == {p: 100 for p in range(4)}
    (first_run,) = [p.name for p in out.iterdir() if p.name.startswith("run=")]

    # 2. Nothing new: a no-op (no new run, offsets unchanged).
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK
    assert [p.name for p in out.iterdir() if p.name.startswith("run=")] == [first_run]

    # 3. New messages; the job dies after writing them, before committing.
    sent += kafka.produce_numbered(cluster.bootstrap_servers, topic, 200, partitions=4, start=400)
    monkeypatch.setenv(ingest.FAIL_ENV, "1")
    with pytest.raises(RuntimeError, match=ingest.FAIL_ENV):
        ingest_job.main(argv, spark=spark)
    monkeypatch.delenv(ingest.FAIL_ENV)
    assert committed_offsets(zk, group_id, topic) == {p: 100 for p in range(4)}, "nothing committed"
    assert counts(sink_rows(spark, str(out))) == {k: 1 for k in keys(sent)}

    # 4. More messages and a run directory whose write died before its marker; then the rerun.
    sent += kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=4, start=600)
    stale = out / f"run={topic}-{'0' * 16}"
    spark.createDataFrame(
        [(topic, 0, 5, b"dup")], "topic string, partition int, offset long, value binary"
    ).write.parquet(str(stale))
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK
    assert not stale.exists()
    assert counts(sink_rows(spark, str(out))) == {k: 1 for k in keys(sent)}, "no duplicates, no loss"
    assert committed_offsets(zk, group_id, topic) == log_ends(cluster, topic) == {p: 175 for p in range(4)}
    runs = sorted(p for p in out.iterdir() if p.name.startswith("run="))
    assert len(runs) == 3 and all((p / ingest.MARKER).exists() for p in runs)


def test_ingest_refuses_a_topic_that_a_live_member_owns(spark, cluster, zk, topic_factory, group_id, tmp_path):
    topic = topic_factory(partitions=2)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 20, partitions=2)
    with ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "auto.commit.enable": "false"}
    ) as conn:
        conn.create_message_streams({topic: 1})
        wait_for_balanced(zk, group_id, [topic], members=1)
        argv = [
            "--zookeeper",
            cluster.zookeeper_connect,
            "--group",
            group_id,
            "--topic",
            topic,
            "--output",
            str(tmp_path / "out"),
        ]
        assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OWNED
    assert not (tmp_path / "out").exists()
    assert committed_offsets(zk, group_id, topic) == {}


def test_ingest_does_not_resume_past_a_run_of_a_deleted_topic(
    spark, cluster, zk, topic_factory, group_id, tmp_path, monkeypatch
) -> None:
    """A run of the old topic, [0, 100), was written but not committed; the topic is deleted and
    created again with 100 other messages. Before: recovery chained through the old run and
    committed 100 without reading the new topic; and a run of the new topic's [0, 100) would have
    had the old run's directory name, overwriting its data."""
    topic = topic_factory(partitions=1)
    out = tmp_path / "out"
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=1)
    monkeypatch.setenv(ingest.FAIL_ENV, "1")
    with pytest.raises(RuntimeError, match=ingest.FAIL_ENV):
        ingest_job.main(argv, spark=spark)
    monkeypatch.delenv(ingest.FAIL_ENV)
    kafka.delete_topic(cluster.bootstrap_servers, topic)
    kafka.wait_topic_deleted(zk, topic)
    cluster.create_topic(topic, partitions=1)
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=1, start=1000)

    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK
    rows = collections.Counter((o, v) for _, _, o, v in sink_rows(spark, str(out)))
    old = {(o, f"{topic}-{o}".encode()): 1 for o in range(100)}
    new = {(o, f"{topic}-{1000 + o}".encode()): 1 for o in range(100)}
    assert rows == {**old, **new}, "each incarnation's messages once, neither run overwritten"
    assert committed_offsets(zk, group_id, topic) == {0: 100}
    markers = [json.loads((p / ingest.MARKER).read_text()) for p in out.iterdir() if p.name.startswith("run=")]
    assert len({m["epoch"] for m in markers}) == 2 and {m["group"] for m in markers} == {group_id}


def test_ingest_leaves_a_partition_added_during_the_run_to_the_next_run(
    spark, cluster, zk, topic_factory, group_id, tmp_path, monkeypatch
) -> None:
    """Partitions are added between the job's plan and the executors' read. Before: the read
    re-planned, wrote the new partition's messages unrecorded and uncommitted, and the next run
    wrote them again."""
    topic = topic_factory(partitions=2)
    out = tmp_path / "out"
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]
    sent = kafka.produce_numbered(cluster.bootstrap_servers, topic, 40, partitions=2)
    planned = ingest.plan_batch

    def plan_then_grow(opts):  # type: ignore[no-untyped-def]
        plan = planned(opts)
        kafka.add_partitions(cluster.bootstrap_servers, topic, 3, zk=zk)
        sent.extend(kafka.produce_numbered(cluster.bootstrap_servers, topic, 10, partitions=3, start=40))
        return plan

    monkeypatch.setattr(ingest, "plan_batch", plan_then_grow)
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK
    monkeypatch.setattr(ingest, "plan_batch", planned)
    assert {p for _, p, _, _ in sink_rows(spark, str(out))} == {0, 1}, "only the planned partitions"
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK
    assert counts(sink_rows(spark, str(out))) == {k: 1 for k in keys(sent)}, "no duplicates, no loss"
    assert committed_offsets(zk, group_id, topic) == log_ends(cluster, topic)


def test_a_second_ingest_at_once_is_refused_and_touches_nothing(
    spark, cluster, zk, topic_factory, group_id, tmp_path
) -> None:
    """Before: the second run deleted the first's run directory (no marker yet) as a write that died."""
    topic = topic_factory(partitions=1)
    out = tmp_path / "out"
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 10, partitions=1)
    in_progress = out / f"run={topic}-{'1' * 16}"
    spark.createDataFrame(
        [(topic, 0, 0, b"x")], "topic string, partition int, offset long, value binary"
    ).write.parquet(str(in_progress))
    other = cluster.zk_client()  # the first job's session, holding the lock
    try:
        other.create(znodes.ingest_lock_path(group_id, topic), b'{"host":"elsewhere"}', ephemeral=True, makepath=True)
        assert ingest_job.main(argv, spark=spark) == ingest.EXIT_LOCKED
        assert in_progress.exists(), "the running job's directory was deleted"
        assert committed_offsets(zk, group_id, topic) == {}
    finally:
        other.stop()
        other.close()
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK  # the lock went with that session
    assert not in_progress.exists() and committed_offsets(zk, group_id, topic) == {0: 10}
    assert zk.exists(znodes.ingest_lock_path(group_id, topic)) is None


def test_an_ingest_that_lost_its_lock_mid_write_commits_nothing_and_leaves_the_new_holder(
    spark, cluster, zk, topic_factory, group_id, tmp_path, monkeypatch
) -> None:
    """While the job writes, its lock goes (its session ended) and another run takes it. The job
    must neither write its marker nor commit, and must not delete the other run's lock."""
    topic = topic_factory(partitions=1)
    out = tmp_path / "out"
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 10, partitions=1)
    lock = znodes.ingest_lock_path(group_id, topic)
    other = cluster.zk_client()
    finish_write = ingest.IngestProgress.__exit__

    def write_then_lose_the_lock(self, *exc):  # type: ignore[no-untyped-def]
        finish_write(self, *exc)
        zk.delete(lock)
        other.create(lock, b'{"host":"the other run"}', ephemeral=True)

    monkeypatch.setattr(ingest.IngestProgress, "__exit__", write_then_lose_the_lock)
    try:
        with pytest.raises(RuntimeError, match="lost the ingest lock"):
            ingest_job.main(argv, spark=spark)
        assert not any((p / ingest.MARKER).exists() for p in out.iterdir()), "no marker"
        assert committed_offsets(zk, group_id, topic) == {}, "no commit"
        assert zk.get(lock)[0] == b'{"host":"the other run"}', "the other run's lock was deleted"
    finally:
        other.stop()
        other.close()


def test_ingest_never_commits_an_old_logs_end_into_a_topic_re_created_during_its_write(
    spark, cluster, zk, topic_factory, group_id, tmp_path, monkeypatch
) -> None:
    """The topic is deleted and created again while the job writes, and the new log grows past the
    planned end. Before: the job committed its old end into the new topic's offset node, written
    after the new topic, so the next run (and every member) took it for the new log's progress and
    skipped its first messages."""
    topic = topic_factory(partitions=1)
    out = tmp_path / "out"
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=1)
    finish_write = ingest.IngestProgress.__exit__

    def write_then_recreate(self, *exc):  # type: ignore[no-untyped-def]
        finish_write(self, *exc)
        kafka.delete_topic(cluster.bootstrap_servers, topic)
        kafka.wait_topic_deleted(zk, topic)
        cluster.create_topic(topic, partitions=1)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 150, partitions=1, start=1000)

    monkeypatch.setattr(ingest.IngestProgress, "__exit__", write_then_recreate)
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_COMMIT_REFUSED
    monkeypatch.setattr(ingest.IngestProgress, "__exit__", finish_write)
    assert committed_offsets(zk, group_id, topic) == {}, "the old log's end landed in the new topic"
    assert sink_rows(spark, str(out)) == [], "the refused run's output (of either log) was withdrawn"
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_OK
    rows = sorted((o, v) for _, _, o, v in sink_rows(spark, str(out)))
    assert rows == [(i, f"{topic}-{1000 + i}".encode()) for i in range(150)], "the new log, each message once"
    assert committed_offsets(zk, group_id, topic) == {0: 150}


def test_ingest_does_not_overwrite_a_commit_made_during_its_write(
    spark, cluster, zk, topic_factory, group_id, tmp_path, monkeypatch
) -> None:
    """A member joins while the job writes, consumes past the job's planned end, commits and leaves.
    Before: the live owners were checked only at planning, and the job's commit moved the group's
    offset back to its own end (everything the member consumed past it would be delivered again)."""
    topic = topic_factory(partitions=1)
    out = tmp_path / "out"
    argv = ["--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--topic", topic, "--output", str(out)]
    kafka.produce_numbered(cluster.bootstrap_servers, topic, 100, partitions=1)
    finish_write = ingest.IngestProgress.__exit__

    def write_then_a_member_commits(self, *exc):  # type: ignore[no-untyped-def]
        finish_write(self, *exc)
        kafka.produce_numbered(cluster.bootstrap_servers, topic, 50, partitions=1, start=100)
        member = ConsumerConnector(
            {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "rebalance.backoff.ms": 300},
            fetch=False,
        )
        try:
            member.create_message_streams({topic: 1})
            assert member.commit_positions({(topic, 0): 130}) == {(topic, 0): True}
        finally:
            member.shutdown()

    monkeypatch.setattr(ingest.IngestProgress, "__exit__", write_then_a_member_commits)
    assert ingest_job.main(argv, spark=spark) == ingest.EXIT_COMMIT_REFUSED
    assert committed_offsets(zk, group_id, topic) == {0: 130}, "the member's commit was overwritten"
