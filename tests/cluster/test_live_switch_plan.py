"""`zkconsumer migrate plan` on a group with a live switch node: the step, the next one and its blockers, by name."""

from __future__ import annotations

import json
import time

import pytest

from harness import members
from harness.members import Recorder, drain, keys_of
from zkconsumer import ConsumerConnector
from zkconsumer.migration import encode_switch_node
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "auto.commit.enable": False}
REGISTRATION = b'{"version":1,"subscription":{"%s":1},"pattern":"static","timestamp":"1"}'


def test_plan_names_the_switch_step_and_who_blocks_it_and_is_unchanged_without_a_switch_node(
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=2)
    sent = produce(topic, 20, partitions=2)
    recorder = Recorder()
    conn = ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": "a", **FAST}
    )
    scala = f"{group_id}_scala"
    switch = znodes.switch_path(group_id)
    try:
        drain("a", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        conn.commit_offsets()
        # A Scala member: a registration and no zkconsumer marker (Scala never writes one).
        zk.create(znodes.member_path(group_id, scala), REGISTRATION % topic.encode(), ephemeral=True)
        # Settle first: our member's rebalance gives the Scala member one partition, whose owner node
        # it never creates (so the plans read before and after the switch node are of the same group).
        deadline = time.monotonic() + 30
        while len(zk.get_children(znodes.owners_path(group_id, topic))) != 1:
            assert time.monotonic() < deadline, "the rebalance for the Scala registration did not settle"
            time.sleep(0.1)
        before = [run("migrate", "plan", "--group", group_id, *extra) for extra in ((), ("--json",))]
        assert "Live switch" not in before[0].stdout and "switch" not in json.loads(before[1].stdout)

        zk.create(switch, encode_switch_node("zookeeper", "test", 1), makepath=True)
        text = run("migrate", "plan", "--group", group_id)
        # The switch never changes the exit status: that stays the --to direction's (blocked: live members).
        assert text.exit_code == before[0].exit_code == 3, text.output
        lines = text.stdout.splitlines()
        start = lines.index("Live switch: step zookeeper, next joining, blocked:")
        assert lines[start + 1 :] == [
            # Our member follows the switch node (its marker has switch.protocol): only Scala's blocks.
            f"  BLOCKER scala-member: a Scala consumer cannot switch: stop it or move it first: {scala}",
        ]
        assert text.stdout.startswith(before[0].stdout), "the switch section must only be added at the end"
        document = json.loads(run("migrate", "plan", "--group", group_id, "--json").stdout)
        assert document["switch"]["step"] == "zookeeper" and document["switch"]["next"] == "joining"
        assert [b["code"] for b in document["switch"]["blockers"]] == ["scala-member"]
        assert document["switch"]["blocked"] is True
        assert {k: v for k, v in document.items() if k != "switch"} == json.loads(before[1].stdout)

        # The steps below are written by hand, as no command would: with our member gone, so that it
        # does not act on them, and the group's plan read again without a switch node to compare with.
        conn.shutdown()
        zk.delete(switch)
        before = [run("migrate", "plan", "--group", group_id, *extra) for extra in ((), ("--json",))]
        zk.create(switch, encode_switch_node("zookeeper", "test", 1), makepath=True)

        zk.set(switch, encode_switch_node("broker", "test", 2))
        done = run("migrate", "plan", "--group", group_id)
        assert done.stdout.splitlines()[-1] == "Live switch: step broker, complete (the brokers coordinate the group)"

        zk.set(switch, b"not the switch node")
        garbled = run("migrate", "plan", "--group", group_id)
        assert garbled.exit_code == 1 and switch in garbled.stderr and "not JSON" in garbled.stderr, garbled.output

        zk.delete(switch)
        after = [run("migrate", "plan", "--group", group_id, *extra) for extra in ((), ("--json",))]
        assert [r.stdout for r in after] == [r.stdout for r in before]
    finally:
        conn.shutdown()
