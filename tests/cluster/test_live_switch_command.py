"""`zkconsumer migrate switch` on a real cluster: refusals by name with nothing written, steps written by compare-and-set, a run continued from the node's step, the way back, a raced registration taken back."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer

from harness import members
from harness.members import Recorder, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.admin import BrokerAccess, run_switch
from zkconsumer.migration import decode_switch_node
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "auto.commit.enable": False}
REGISTRATION = b'{"version":1,"subscription":{"%s":1},"pattern":"static","timestamp":"1"}'


def _committed_group(cluster, topic_factory, produce, group_id) -> str:  # type: ignore[no-untyped-def]
    """A group whose zkconsumer member consumed a topic, committed and left (no member now)."""
    topic = topic_factory(partitions=2)
    sent = produce(topic, 10, partitions=2)
    recorder = Recorder()
    conn = ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": "a", **FAST}
    )
    try:
        drain("a", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        conn.commit_offsets()
    finally:
        conn.shutdown()
    return topic


def test_switch_refuses_members_that_cannot_switch_by_name_writing_nothing(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=2)
    conn = ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": "a", **FAST}
    )
    scala = f"{group_id}_scala"
    try:
        conn.create_message_streams({topic: 1})
        # A Scala member: a registration and no zkconsumer marker (Scala never writes one).
        zk.create(znodes.member_path(group_id, scala), REGISTRATION % topic.encode(), ephemeral=True)
        result = run("migrate", "switch", "--group", group_id, "--to", "broker", "--timeout", "5")
        assert result.exit_code == 3, result.output
        assert result.stdout.splitlines() == [
            f"Live switch of group {group_id} --to broker: step zookeeper, refused (nothing written)",
            f"  BLOCKER scala-member: a Scala consumer cannot switch: stop it or move it first: {scala}",
        ]
        assert "refusing to switch" in result.stderr and "nothing written: scala-member" in result.stderr
        assert zk.exists(znodes.switch_path(group_id)) is None
    finally:
        conn.shutdown()


def test_switch_steps_by_compare_and_set_continues_from_the_node_and_goes_back(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = _committed_group(cluster, topic_factory, produce, group_id)
    switch = znodes.switch_path(group_id)
    # No member: the way to `broker` stops at `handover`, whose partitions the brokers assign to nobody.
    first = run("migrate", "switch", "--group", group_id, "--to", "broker", "--timeout", "1.5")
    assert first.exit_code == 3, first.output
    lines = first.stdout.splitlines()
    assert lines[:3] == [
        f"Live switch of group {group_id} --to broker: step zookeeper -> handover, still blocked before step "
        "broker when --timeout ran out",
        "  wrote step joining",
        "  wrote step handover",
    ]
    assert lines[3].startswith(
        f"  BLOCKER handover-pending: partitions not yet held by the member the brokers "
        f"assigned them to: {topic}-0, {topic}-1"
    )
    assert "run it again to continue, or --to zookeeper to go back" in first.stderr
    data, stat = zk.get(switch)
    assert decode_switch_node(data, switch) == "handover" and stat.version == 1  # created, then set once
    assert "Live switch: step handover, next broker, blocked:" in run("migrate", "plan", "--group", group_id).stdout

    again = run("migrate", "switch", "--group", group_id, "--to", "broker", "--timeout", "0", "--json")
    document = json.loads(again.stdout)
    assert again.exit_code == 3 and document["from"] == "handover" and document["written"] == []
    assert document["outcome"] == "timed-out" and document["next"] == "broker"
    assert zk.get(switch)[1].version == 1  # nothing written

    # Back: `handover` -> `joining` waits for Kafka's offsets to equal ZooKeeper's.
    blocked = run("migrate", "switch", "--group", group_id, "--to", "zookeeper", "--timeout", "0")
    assert blocked.exit_code == 3 and "BLOCKER offsets-differ" in blocked.stdout, blocked.output
    copied = run("migrate", "offsets", "--group", group_id, "--to", "kafka", "--execute")
    assert copied.exit_code == 0, copied.output
    back = run(
        "migrate",
        "switch",
        "--group",
        group_id,
        "--to",
        "zookeeper",
        "--bootstrap-servers",
        cluster.bootstrap_servers,
        "--json",
    )
    assert back.exit_code == 0, back.output
    document = json.loads(back.stdout)
    assert (document["from"], document["step"], document["outcome"]) == ("handover", "zookeeper", "complete")
    assert document["written"] == ["joining", "zookeeper"]
    assert zk.exists(switch) is None
    # Back at `zookeeper` the group reads as never switched.
    assert "Live switch" not in run("migrate", "plan", "--group", group_id).stdout
    done = run("migrate", "switch", "--group", group_id, "--to", "zookeeper")
    assert done.exit_code == 0 and done.stdout.splitlines() == [
        f"Live switch of group {group_id} --to zookeeper: step zookeeper, complete (ZooKeeper coordinates the "
        "group; no switch node)"
    ]


def test_a_step_raced_by_a_registration_that_cannot_switch_is_taken_back(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    topic = _committed_group(cluster, topic_factory, produce, group_id)
    scala = f"{group_id}_scala"
    events: list[str] = []

    def register_between_the_write_and_its_check(line: str) -> None:
        events.append(line)
        if line.startswith("wrote step joining"):
            zk.create(znodes.member_path(group_id, scala), REGISTRATION % topic.encode(), ephemeral=True)

    outcome = run_switch(
        zk,
        BrokerAccess(),
        group_id,
        "broker",
        timeout_s=5,
        on_event=register_between_the_write_and_its_check,
    )
    assert outcome.outcome == "refused" and outcome.undone == "joining" and outcome.written == []
    assert [b.code for b in outcome.plan.blockers] == ["scala-member"]
    assert zk.exists(znodes.switch_path(group_id)) is None, events
    assert events[-1] == "took step joining back: a member that cannot switch registered meanwhile"
    zk.delete(znodes.member_path(group_id, scala))


def test_switch_refuses_a_foreign_broker_member_and_a_spark_ingest_job_writing_nothing(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = _committed_group(cluster, topic_factory, produce, group_id)
    # What a running Spark ingest job holds (zkconsumer/spark), and a broker-coordinated consumer of the
    # group id that no member's marker names.
    lock = znodes.ingest_lock_path(group_id, topic)
    zk.create(lock, b"spark-ingest", ephemeral=True, makepath=True)
    stranger = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group_id, "enable.auto.commit": False}
    )
    try:
        stranger.subscribe([topic])
        deadline = time.monotonic() + 60
        while not stranger.assignment():
            assert time.monotonic() < deadline, "the stranger never joined the brokers' group"
            stranger.poll(0.2)
        result = run("migrate", "switch", "--group", group_id, "--to", "broker", "--json")
        assert result.exit_code == 3, result.output
        document = json.loads(result.stdout)
        assert (document["outcome"], document["step"], document["written"]) == ("refused", "zookeeper", [])
        assert [b["code"] for b in document["blockers"]] == ["spark-ingest", "foreign-broker-member"]
        assert f"runs for {topic}" in document["blockers"][0]["message"]
        assert zk.exists(znodes.switch_path(group_id)) is None
    finally:
        stranger.close()
        zk.delete(lock)
