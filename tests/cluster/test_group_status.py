"""`zkconsumer groups status` on a real cluster: a live zkconsumer group caught up, stopped, and with broken owner nodes."""

from __future__ import annotations

import json

import pytest

from harness import members
from harness.members import Recorder, drain, keys_of, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "auto.commit.enable": False}
REPORT_KEYS = [
    "group", "status", "why", "reasons", "judged", "samples", "window_s", "interval_s",
    "total_lag", "members", "idle_members", "partitions",
]  # fmt: skip
PARTITION_KEYS = [
    "topic", "partition", "status", "reason", "current_offset", "log_end_offset", "lag",
    "lag_seconds", "owner", "ownership", "commits_seen",
]  # fmt: skip


def status_json(run, group: str, *args: str) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    result = run("groups", "status", "--group", group, "--json", *args)
    assert not result.stderr, result.stderr
    doc = json.loads(result.stdout)
    assert list(doc) == REPORT_KEYS and all(list(row) == PARTITION_KEYS for row in doc["partitions"])
    return result.exit_code, doc


def test_status_of_a_live_group_caught_up_stopped_and_with_broken_owners(  # type: ignore[no-untyped-def]
    cluster, zk, run, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=2)
    sent = produce(topic, 20, partitions=2)
    recorder = Recorder()
    settings = {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group_id, "consumer.id": "a", **FAST}
    with ConsumerConnector(settings) as conn:
        drain("a", conn.create_message_streams({topic: 1})[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        conn.commit_offsets()
        owners = wait_for_balanced(zk, group_id, [topic], members=1)

        # Caught up: one look and a window agree.
        text = run("groups", "status", "--group", group_id)
        assert text.exit_code == 0, text.output
        header, columns, *rows, last = [
            line for line in text.stdout.splitlines() if line
        ]  # a blank line after the table
        assert header.startswith(f"Group {group_id}: 1 members, total lag 0 (one sample")
        assert columns.split() == ["TOPIC", "PARTITION", "STATUS", "LAG", "LAG-S", "OWNER", "REASON"]
        assert sorted(r.split()[:6] for r in rows) == [
            [topic, str(p), "OK", "0", "0", owners[(topic, p)]] for p in (0, 1)
        ]
        assert last == "Status OK: all 2 partitions OK"
        code, doc = status_json(run, group_id, "--watch", "2", "--interval", "1")
        assert (code, doc["status"], doc["judged"], doc["samples"], doc["total_lag"]) == (0, "OK", True, 3, 0)
        assert doc["members"] == [f"{group_id}_a"] and doc["idle_members"] == []
        for row in doc["partitions"]:
            assert (row["status"], row["lag"], row["current_offset"], row["log_end_offset"]) == ("OK", 0, 10, 10)
            assert row["lag_seconds"] == {"seconds": 0.0, "at_least": False, "within_s": 0.0}
            assert row["ownership"] == "owned" and row["owner"] == owners[(topic, row["partition"])]

        # The log grows; the member reads it but commits nothing: its offset nodes never move.
        recorder.wait_for(keys_of(produce(topic, 10, partitions=2, start=20)), timeout=60)
        code, doc = status_json(run, group_id)  # one look cannot tell
        assert (code, doc["status"], doc["judged"]) == (0, "OK", False)
        assert all("5 messages wait" in row["reason"] and row["lag_seconds"] is None for row in doc["partitions"])
        code, doc = status_json(run, group_id, "--watch", "3", "--interval", "1")
        assert (code, doc["status"], doc["total_lag"]) == (1, "ERR", 10)
        assert doc["why"] == f"2 STOP ({topic}-0, {topic}-1); a group is at worst ERR, as in Burrow"
        for row in doc["partitions"]:
            assert (row["status"], row["lag"], row["commits_seen"]) == ("STOP", 5, 1)
            assert row["reason"].startswith("no commit for ") and row["reason"].endswith(" s while 5 messages wait")
            age = row["lag_seconds"]
            # Waiting since before the first sample, 3 s before the last.
            assert age["at_least"] and 2.5 <= age["seconds"] < 10.0, age

        # Owner nodes broken behind the member's back (its rebalance lock held, so it mends nothing).
        with conn.rebalancer._lock:
            zk.delete(znodes.owner_path(group_id, topic, 1))
            text = run("groups", "status", "--group", group_id)
            assert text.exit_code == 1
            (row1,) = [line for line in text.stdout.splitlines() if line.startswith(f"{topic}  ") and " 1  ERR" in line]
            assert row1.split()[3:5] == ["5", "-"] and row1.endswith("nobody owns it and 5 messages wait")
            assert text.stdout.splitlines()[-1] == f"Status ERR: 1 ERR ({topic}-1); 1 OK"
            code, doc = status_json(run, group_id)
            assert doc["partitions"][1]["ownership"] == "unowned" and doc["partitions"][1]["owner"] is None

            ghost = f"{group_id}_ghost-0"
            zk.create(znodes.owner_path(group_id, topic, 1), ghost.encode(), ephemeral=True)
            code, doc = status_json(run, group_id)
            assert (code, doc["status"]) == (1, "ERR")
            row = doc["partitions"][1]
            assert (row["status"], row["ownership"], row["owner"]) == ("ERR", "owner-gone", ghost)
            assert row["reason"] == f"owner is not a registered member ({ghost})"
            assert doc["reasons"] == [f"{topic}-1: ERR owner is not a registered member ({ghost})"]
            zk.delete(znodes.owner_path(group_id, topic, 1))


def test_an_unknown_group_is_one_line(run) -> None:  # type: ignore[no-untyped-def]
    result = run("groups", "status", "--group", "no-such-group-status")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("zkconsumer: error: unknown group 'no-such-group-status'")
