"""The CLI's writes against a real cluster when something else happens: a member joins a delete, the
topic was re-created, the group also commits to Kafka, an import fails halfway."""

from __future__ import annotations

import json
import time

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl

from harness import members
from harness.members import Recorder, committed_offsets, drain
from zkconsumer import ConsumerConnector
from zkconsumer.testing import kafka
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "auto.commit.enable": False}
REGISTRATION = b'{"version":1,"subscription":{"%s":1},"pattern":"static","timestamp":"1"}'


def statuses(result) -> dict[int, str]:  # type: ignore[no-untyped-def]
    return {r["partition"]: r["status"] for r in json.loads(result.stdout)["partitions"]}


# ---------------------------------------------------------------- groups delete vs a joining member


def test_delete_stops_when_a_member_registers_during_it(cluster, zk, run, topic_factory, monkeypatch, group_id) -> None:
    topic, other = topic_factory(partitions=2), topic_factory(partitions=1)
    for t, p in ((topic, 0), (topic, 1), (other, 0)):
        zk.create(znodes.offset_path(group_id, t, p), b"5", makepath=True)
    zk.ensure_path(znodes.ids_path(group_id))
    late = f"{group_id}_late"
    joined = []

    def join() -> None:
        # A member registers after the command found no members and listed what to delete, right
        # before its first write; it claims a partition and commits an offset.
        if joined:
            return
        joined.append(late)
        zk.create(znodes.member_path(group_id, late), REGISTRATION % topic.encode(), ephemeral=True)
        zk.create(znodes.owner_path(group_id, topic, 0), f"{late}-0".encode(), ephemeral=True, makepath=True)
        zk.set(znodes.offset_path(group_id, topic, 0), b"12")

    class JoinsBeforeTheFirstWrite(KazooClient):
        def delete(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            join()
            return super().delete(*args, **kwargs)

        def transaction(self):  # type: ignore[no-untyped-def]
            join()
            return super().transaction()

    # zookeeper.client.connect, the one session factory, imports KazooClient when it is called.
    monkeypatch.setattr("kazoo.client.KazooClient", JoinsBeforeTheFirstWrite)
    result = run("groups", "delete", "--group", group_id, "--execute")
    assert joined, "the delete never wrote"
    assert result.exit_code == 1, result.output
    assert late in result.stderr and "deleted" not in result.stdout, result.output
    assert zk.exists(znodes.member_path(group_id, late)) is not None, "the new member was deleted"
    assert zk.get(znodes.owner_path(group_id, topic, 0))[0] == f"{late}-0".encode()
    assert committed_offsets(zk, group_id, topic) == {0: 12, 1: 5}
    assert committed_offsets(zk, group_id, other) == {0: 5}

    monkeypatch.undo()
    zk.delete(znodes.owner_path(group_id, topic, 0))
    zk.delete(znodes.member_path(group_id, late))
    result = run("groups", "delete", "--group", group_id, "--execute")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"deleted {znodes.group_path(group_id)}\n"
    assert zk.exists(znodes.group_path(group_id)) is None


def test_delete_refuses_while_a_spark_ingest_of_the_group_runs(cluster, zk, run, group_id) -> None:
    """The ingest job is no member (nothing under ids/), but it commits the offsets a delete removes."""
    zk.create(znodes.offset_path(group_id, "orders", 0), b"5", makepath=True)
    job = cluster.zk_client()
    try:
        job.create(znodes.ingest_lock_path(group_id, "orders"), b"{}", ephemeral=True, makepath=True)
        result = run("groups", "delete", "--group", group_id, "--execute")
        assert result.exit_code == 1 and "Spark ingest job runs for topic orders" in result.stderr, result.output
        assert committed_offsets(zk, group_id, "orders") == {0: 5}
    finally:
        job.stop()
        job.close()
    assert run("groups", "delete", "--group", group_id, "--execute").exit_code == 0
    assert zk.exists(znodes.group_path(group_id)) is None


# ---------------------------------------------------------------- a re-created topic


def test_reset_and_import_ignore_an_offset_older_than_the_topic(cluster, zk, run, produce, group_id, tmp_path) -> None:
    topic = f"recreated-cli-{group_id[-12:]}"
    cluster.create_topic(topic, 2)
    produce(topic, 60, partitions=2)
    for p in (0, 1):
        zk.create(znodes.offset_path(group_id, topic, p), b"30", makepath=True)
    kafka.delete_topic(cluster.bootstrap_servers, topic)
    deadline = time.monotonic() + 60
    while zk.exists(znodes.topic_path(topic)) or zk.exists(f"/admin/delete_topics/{topic}"):
        assert time.monotonic() < deadline, "topic deletion did not finish"
        time.sleep(0.2)
    cluster.create_topic(topic, 2)
    produce(topic, 80, partitions=2)  # 40 a partition: the stale 30 lies inside the new log

    shifted = run("offsets", "reset", "--group", group_id, "--topic", topic, "--shift-by", "-5", "--json")
    assert shifted.exit_code == 0, shifted.output
    rows = json.loads(shifted.stdout)["partitions"]
    assert [(r["current_offset"], r["new_offset"]) for r in rows] == [(None, None), (None, None)], rows
    assert all(f"committed before topic {topic} was (re)created" in r["note"] for r in rows), rows

    # The stale value itself is a real change: written (a fresh node), not "unchanged".
    (tmp_path / "in.txt").write_text(f"/consumers/{group_id}/offsets/{topic}/0:30\n")
    imported = run("offsets", "import", "--input", str(tmp_path / "in.txt"), "--execute")
    assert imported.exit_code == 0, imported.output
    assert "1 offsets written" in imported.stderr, imported.output
    reset = run(
        "offsets",
        "reset",
        "--group",
        group_id,
        "--topic",
        topic,
        "--to-offset",
        "30",
        "--partitions",
        "1",
        "--execute",
        "--json",
    )
    assert statuses(reset) == {1: "written"}, reset.output
    born = zk.exists(znodes.topic_path(topic)).czxid
    assert all(zk.exists(znodes.offset_path(group_id, topic, p)).mzxid > born for p in (0, 1))

    again = run("offsets", "reset", "--group", group_id, "--topic", topic, "--shift-by", "-5", "--json")
    assert [(r["current_offset"], r["new_offset"]) for r in json.loads(again.stdout)["partitions"]] == [
        (30, 25),
        (30, 25),
    ]


# ---------------------------------------------------------------- a group that also commits to Kafka


def kafka_committed(cluster, group: str, topic: str, partitions: int) -> dict[int, int]:  # type: ignore[no-untyped-def]
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "enable.auto.commit": False}
    )
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def test_reset_of_a_dual_commit_group_reaches_its_members(cluster, zk, run, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    sent = produce(topic, 40, partitions=2)
    dual = {
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": group_id,
        **FAST,
        "offsets.storage": "kafka",
        "dual.commit.enabled": True,
    }
    recorder = Recorder()
    with ConsumerConnector({**dual, "consumer.id": "first"}) as conn:
        drain("first", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for({(m.topic, m.partition, m.offset) for m in sent}, timeout=60)
        conn.commit_offsets()
    assert committed_offsets(zk, group_id, topic) == {0: 20, 1: 20}
    assert kafka_committed(cluster, group_id, topic, 2) == {0: 20, 1: 20}

    result = run("offsets", "reset", "--group", group_id, "--topic", topic, "--to-offset", "5", "--execute", "--json")
    assert result.exit_code == 0, result.output
    assert committed_offsets(zk, group_id, topic) == {0: 5, 1: 5}
    assert kafka_committed(cluster, group_id, topic, 2) == {0: 5, 1: 5}
    rows = json.loads(result.stdout)["partitions"]
    assert [(r["current_offset"], r["kafka_offset"], r["status"]) for r in rows] == [(20, 20, "written")] * 2
    assert all("commits to Kafka" in r["note"] for r in rows), rows

    # What matters: a dual-commit member (it reads the larger of ZooKeeper and Kafka) starts at 5.
    again = Recorder()
    with ConsumerConnector({**dual, "consumer.id": "second"}) as conn:
        drain("second", conn.create_message_streams({topic: 1})[topic], again)
        again.wait_for({(m.topic, m.partition, m.offset) for m in sent if m.offset >= 5}, timeout=60)
    assert min(d.offset for d in again.deliveries) == 5


# ---------------------------------------------------------------- an import that fails halfway


def test_an_import_failing_halfway_shows_what_was_written(
    cluster, zk, run, topic_factory, produce, group_id, tmp_path
) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)  # offsets 3, 4 and 7 lie in the logs
    open_group, locked_group = f"{group_id}-a", f"{group_id}-b"
    # Everyone may read the second group, only "ops" may create under it: the plan works, the write fails.
    zk.create(
        znodes.group_path(locked_group),
        makepath=True,
        acl=[make_acl("world", "anyone", read=True), make_digest_acl("ops", "s3cret", all=True)],
    )
    try:
        lines = [
            f"/consumers/{open_group}/offsets/{topic}/0:3",
            f"/consumers/{open_group}/offsets/{topic}/1:4",
            f"/consumers/{locked_group}/offsets/{topic}/0:7",
        ]
        (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
        result = run("offsets", "import", "--input", str(tmp_path / "in.txt"), "--execute")
        assert result.exit_code == 1, result.output
        assert committed_offsets(zk, open_group, topic) == {0: 3, 1: 4}
        table = {tuple(line.split()[:3]): line for line in result.stdout.splitlines()[1:]}
        assert "written" in table[(open_group, topic, "0")] and "written" in table[(open_group, topic, "1")]
        assert "not written" in table[(locked_group, topic, "0")], result.stdout
        assert "NoAuth" in result.stderr and "2 offsets written" in result.stderr, result.stderr
    finally:
        admin = cluster.zk_client(auth_data=[("digest", "ops:s3cret")])
        try:
            admin.delete(znodes.group_path(locked_group), recursive=True)
        finally:
            admin.stop()
            admin.close()
