"""`zkconsumer migrate plan|offsets` and `offsets export --format spark` against a real cluster."""

from __future__ import annotations

import json
import time

import pytest

from harness import members
from harness.members import Recorder, committed_offsets, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "auto.commit.enable": False}
REGISTRATION = b'{"version":1,"subscription":{"%s":1},"pattern":"static","timestamp":"1"}'
BLOCKED = 3


def admin(cluster):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def kafka_offsets(cluster, group: str) -> dict[tuple[str, int], int]:  # type: ignore[no-untyped-def]
    from confluent_kafka import ConsumerGroupTopicPartitions

    client = admin(cluster)  # kept: a collected AdminClient never completes its futures
    found = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions if tp.offset >= 0}


def set_kafka_offsets(cluster, group: str, offsets: dict[tuple[str, int], int]) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    client = admin(cluster)
    found = client.alter_consumer_group_offsets([request])[group].result(30)
    assert all(tp.error is None for tp in found.topic_partitions)


def set_zk_offsets(zk, group: str, offsets: dict[tuple[str, int], int]) -> None:  # type: ignore[no-untyped-def]
    for (topic, partition), offset in offsets.items():
        zk.create(znodes.offset_path(group, topic, partition), str(offset).encode(), makepath=True)


def zk_offsets(zk, group: str, topic: str) -> dict[tuple[str, int], int]:  # type: ignore[no-untyped-def]
    return {(topic, p): o for p, o in committed_offsets(zk, group, topic).items()}


def doc(result) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(result.stdout)


def by_key(rows: list[dict], field: str) -> dict[tuple[str, int], object]:
    return {(r["topic"], r["partition"]): r[field] for r in rows}


def codes(direction: dict) -> list[str]:
    return [b["code"] for b in direction["blockers"]]


def test_copy_to_kafka_from_a_zkconsumer_group(cluster, zk, run, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    sent = produce(topic, 40, partitions=2)
    recorder = Recorder()
    conn = ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": "a", **FAST}
    )
    try:
        drain("a", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        conn.commit_offsets()
        expected = {(topic, 0): 20, (topic, 1): 20}
        assert zk_offsets(zk, group_id, topic) == expected

        live = run("migrate", "plan", "--group", group_id, "--json")
        assert live.exit_code == BLOCKED, live.output
        plan = doc(live)
        assert plan["zookeeper"]["members"] == [{"consumer_id": f"{group_id}_a", "kind": "zkconsumer"}]
        assert plan["step"]["name"] == "zookeeper-live" and plan["kafka"]["state"] == "Dead"
        assert codes(plan["to_kafka"]) == ["source-zookeeper-members", "source-zookeeper-owned"]
        assert by_key(plan["partitions"], "zookeeper_offset") == expected
        assert by_key(plan["partitions"], "zookeeper_lag") == {k: 0 for k in expected}
        assert by_key(plan["partitions"], "zookeeper_owner") == {
            (topic, 0): f"{group_id}_a-0",
            (topic, 1): f"{group_id}_a-0",
        }
        assert by_key(plan["to_kafka"]["partitions"], "action") == {k: "source-only" for k in expected}
        assert "refusing to copy" in live.stderr and "--force-live-source" in live.stderr

        blocked = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute")
        assert blocked.exit_code == BLOCKED and "source-zookeeper-members" in blocked.stderr, blocked.output
        assert "BLOCKER source-zookeeper-members" in blocked.stdout and f"{group_id}_a (zkconsumer)" in blocked.stdout
        dry = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--force-live-source", "--json")
        assert dry.exit_code == 0, dry.output
        assert by_key(doc(dry)["partitions"], "status") == {k: "planned" for k in expected}
        assert doc(dry)["executed"] is False and "overridden by --force-live-source" in dry.stderr
        assert kafka_offsets(cluster, group_id) == {}, "a dry run wrote"
    finally:
        conn.shutdown()

    copied = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute", "--json")
    assert copied.exit_code == 0, copied.output
    result = doc(copied)
    assert (result["executed"], result["verified"], result["writes"]) == (True, True, 2)
    assert by_key(result["partitions"], "status") == {k: "written" for k in expected}
    assert kafka_offsets(cluster, group_id) == expected == zk_offsets(zk, group_id, topic)

    again = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute", "--json")
    assert again.exit_code == 0 and doc(again)["writes"] == 0, again.output
    assert by_key(doc(again)["partitions"], "action") == {k: "already-equal" for k in expected}
    assert "Nothing to copy" in again.stderr
    done = run("migrate", "plan", "--group", group_id, "--json")
    assert done.exit_code == 0 and doc(done)["step"]["name"] == "copied", done.output
    text = run("migrate", "plan", "--group", group_id)
    assert text.exit_code == 0 and "step copied" in text.stdout and "--to kafka (ZooKeeper -> Kafka): 0" in text.stdout


def test_a_broker_coordinated_member_blocks_the_copy_to_kafka(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    from confluent_kafka import Consumer

    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)
    set_zk_offsets(zk, group_id, {(topic, 0): 4, (topic, 1): 6})
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group_id,
            "client.id": "new-app",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the broker-coordinated consumer got no partitions"
            consumer.poll(0.2)
        plan = run("migrate", "plan", "--group", group_id, "--json")
        assert plan.exit_code == BLOCKED, plan.output
        found = doc(plan)
        assert found["kafka"]["state"] == "Stable" and found["step"]["name"] == "kafka-live"
        assert [m["client_id"] for m in found["kafka"]["members"]] == ["new-app"]
        assert codes(found["to_kafka"]) == ["target-kafka-group-active"]
        assert by_key(found["partitions"], "kafka_member") == {(topic, p): "new-app@127.0.0.1" for p in (0, 1)}

        blocked = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute")
        assert blocked.exit_code == BLOCKED and "target-kafka-group-active" in blocked.stderr, blocked.output
        forced = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute", "--force-live-target")
        assert forced.exit_code == 1, forced.output
        for needle in (
            "UNKNOWN_MEMBER_ID",
            f"broker group {group_id} is Stable with 1 members (new-app@",
            f"{topic}-0",
            f"{topic}-1",
            "did not read back",
        ):
            assert needle in forced.stderr, (needle, forced.stderr)
        assert kafka_offsets(cluster, group_id) == {}
    finally:
        consumer.close()
    after = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute")
    assert after.exit_code == 0, after.output
    assert kafka_offsets(cluster, group_id) == {(topic, 0): 4, (topic, 1): 6}


def test_copy_back_to_zookeeper_refuses_a_rewind_and_keeps_one_sided_partitions(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=4)
    produce(topic, 80, partitions=4)
    set_zk_offsets(zk, group_id, {(topic, 0): 10, (topic, 1): 15, (topic, 3): 9})
    set_kafka_offsets(cluster, group_id, {(topic, 0): 18, (topic, 1): 12, (topic, 2): 5})

    # A registered ZooKeeper member blocks the target; forced, its owned partition is still refused.
    member = cluster.zk_client()
    try:
        member.create(
            znodes.member_path(group_id, f"{group_id}_x"), REGISTRATION % topic.encode(), ephemeral=True, makepath=True
        )
        member.create(znodes.owner_path(group_id, topic, 0), f"{group_id}_x-0".encode(), ephemeral=True, makepath=True)
        live = run(
            "migrate", "offsets", "--group", group_id, "--to", "zookeeper", "--execute", "--allow-rewind", "--json"
        )
        assert live.exit_code == BLOCKED and codes(doc(live)) == [
            "target-zookeeper-members",
            "target-zookeeper-owned",
        ], live.output
        assert by_key(doc(live)["partitions"], "action")[(topic, 0)] == "refuse-owned"
        forced = run(
            "migrate",
            "offsets",
            "--group",
            group_id,
            "--to",
            "zookeeper",
            "--execute",
            "--allow-rewind",
            "--force-live-target",
            "--json",
        )
        assert forced.exit_code == BLOCKED and codes(doc(forced)) == ["target-zookeeper-owned"], forced.output
        assert doc(live)["blockers"][0]["message"].count(f"{group_id}_x (scala)") == 1
    finally:
        member.stop()
        member.close()
    assert zk_offsets(zk, group_id, topic) == {(topic, 0): 10, (topic, 1): 15, (topic, 3): 9}

    refused = run("migrate", "offsets", "--group", group_id, "--to", "zookeeper", "--execute")
    assert refused.exit_code == BLOCKED, refused.output
    assert "rewind-refused (override: --allow-rewind)" in refused.stderr
    assert "refuse-rewind" in refused.stdout and f"{topic}-1 (target 15 is ahead of 12)" in refused.stdout
    assert zk_offsets(zk, group_id, topic) == {(topic, 0): 10, (topic, 1): 15, (topic, 3): 9}

    back = run("migrate", "offsets", "--group", group_id, "--to", "zookeeper", "--execute", "--allow-rewind", "--json")
    assert back.exit_code == 0, back.output
    assert by_key(doc(back)["partitions"], "action") == {
        (topic, 0): "copy",
        (topic, 1): "rewind",
        (topic, 2): "source-only",
        (topic, 3): "target-only-keep",
    }
    assert by_key(doc(back)["partitions"], "status") == {
        (topic, 0): "written",
        (topic, 1): "written",
        (topic, 2): "written",
        (topic, 3): "unchanged",
    }
    assert doc(back)["verified"] is True
    assert zk_offsets(zk, group_id, topic) == {(topic, 0): 18, (topic, 1): 12, (topic, 2): 5, (topic, 3): 9}
    again = run("migrate", "offsets", "--group", group_id, "--to", "zookeeper", "--execute", "--json")
    assert again.exit_code == 0 and doc(again)["writes"] == 0, again.output


def test_offsets_export_format_spark(cluster, zk, run, topic_factory, produce, group_id, tmp_path) -> None:
    topic, other = topic_factory(partitions=3), topic_factory(partitions=1)
    produce(topic, 90, partitions=3)
    produce(other, 5)
    set_zk_offsets(zk, group_id, {(topic, 0): 23, (topic, 1): 17, (other, 0): 5})

    result = run("offsets", "export", "--group", group_id, "--format", "spark")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {topic: {"0": 23, "1": 17, "2": -2}, other: {"0": 5}}
    assert f"{topic}-2: -2 (earliest)" in result.stderr

    one = run(
        "offsets",
        "export",
        "--group",
        group_id,
        "--format",
        "spark",
        "--topic",
        other,
        "--output",
        str(tmp_path / "start.json"),
    )
    assert one.exit_code == 0, one.output
    assert json.loads((tmp_path / "start.json").read_text()) == {other: {"0": 5}}
    # The ExportZkOffsets lines are unchanged.
    lines = run("offsets", "export", "--group", group_id, "--topic", topic)
    assert lines.stdout.splitlines() == [
        f"/consumers/{group_id}/offsets/{topic}/0:23",
        f"/consumers/{group_id}/offsets/{topic}/1:17",
    ]
    missing = run("offsets", "export", "--group", group_id, "--format", "spark", "--topic", "no-such-topic")
    assert missing.exit_code == 1 and "no such topic 'no-such-topic'" in missing.stderr, missing.output


def test_a_group_on_neither_side_is_one_error_line(cluster, run, group_id) -> None:
    for args in (
        ["migrate", "plan", "--group", group_id],
        ["migrate", "offsets", "--group", group_id, "--to", "kafka"],
    ):
        result = run(*args)
        assert result.exit_code == 1, result.output
        assert result.stderr.count("\n") == 1 and f"unknown group {group_id!r}" in result.stderr, result.stderr


def test_a_partition_with_no_offset_on_either_side_is_listed_with_what_the_new_consumers_must_set(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    # Partition 1 never had a commit (say it stayed empty until the members stopped): copying the
    # offsets leaves it without one, and broker consumers starting with the default
    # auto.offset.reset=latest would skip what is produced to it before they start.
    topic = topic_factory(partitions=2)
    produce(topic, 10, partitions=2)
    set_zk_offsets(zk, group_id, {(topic, 0): 5})
    result = run("migrate", "plan", "--group", group_id, "--json")
    plan = doc(result)["to_kafka"]
    assert by_key(plan["partitions"], "action") == {(topic, 0): "source-only", (topic, 1): "no-offset-either-side"}
    assert f"{topic}-1" in plan["start_advice"] and "auto.offset.reset=earliest" in plan["start_advice"]
    human = run("migrate", "plan", "--group", group_id)
    assert "NOTE:" in human.stdout and "auto.offset.reset=earliest" in human.stdout
    copied = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute")
    assert copied.exit_code == 0 and kafka_offsets(cluster, group_id) == {(topic, 0): 5}
    assert "auto.offset.reset=earliest" in copied.stdout
