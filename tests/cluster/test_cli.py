"""The `zkconsumer` CLI against a real cluster: describe, verify, offsets export/reset/import, top, errors."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pexpect
import pytest

from harness import members
from harness.members import Recorder, committed_offsets, drain, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster

FAST = {**members.FAST, "auto.commit.enable": False}
ZKCONSUMER = os.path.join(os.path.dirname(sys.executable), "zkconsumer")


def member(cluster, group: str, name: str) -> ConsumerConnector:
    return ConsumerConnector(
        {"zookeeper.connect": cluster.zookeeper_connect, "group.id": group, "consumer.id": name, **FAST}
    )


def keys_of(produced) -> set[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return {(m.topic, m.partition, m.offset) for m in produced}


def describe(run, group: str) -> dict:  # type: ignore[no-untyped-def]
    result = run("groups", "describe", "--group", group, "--members", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_describe_verify_and_top_on_a_live_group(cluster, zk, run, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=4)
    sent = produce(topic, 100, partitions=4)
    recorder = Recorder()
    with member(cluster, group_id, "a") as conn:
        drain("a", conn.create_message_streams({topic: 2})[topic], recorder)
        recorder.wait_for(keys_of(sent), timeout=60)
        conn.commit_offsets()
        owners = wait_for_balanced(zk, group_id, [topic], members=1)

        doc = describe(run, group_id)
        consumed = {p: max(d.offset for d in recorder.deliveries if d.partition == p) + 1 for p in range(4)}
        rows = {r["partition"]: r for r in doc["partitions"]}
        assert set(rows) == {0, 1, 2, 3}
        for p, row in rows.items():
            assert (row["current_offset"], row["log_end_offset"], row["lag"]) == (consumed[p], 25, 0)
            assert row["owner"] == owners[(topic, p)] and row["consumer_id"] == f"{group_id}_a"
            assert row["problems"] == []
        assert doc["problems"] == [] and doc["total_lag"] == 0
        assert [m["consumer_id"] for m in doc["members"]] == [f"{group_id}_a"]
        assert doc["members"][0]["owned_partitions"] == 4 and doc["members"][0]["threads"] == 2

        text = run("groups", "describe", "--group", group_id)
        assert text.exit_code == 0
        header, *lines = text.stdout.splitlines()
        assert header.split() == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "OWNER", "PROBLEM"]
        assert sorted(line.split()[:6] for line in lines) == sorted(
            [topic, str(p), "25", "25", "0", owners[(topic, p)]] for p in range(4)
        )

        listed = json.loads(run("groups", "list", "--json").stdout)
        assert {"group": group_id, "members": 1} in listed

        ok = run("verify", "--group", group_id)
        assert ok.exit_code == 0, ok.stdout
        assert "Rebalance operation successful" in ok.stdout

        frame = run("top", "--group", group_id, "--once")
        assert frame.exit_code == 0, frame.stderr
        assert f"{group_id}_a" in frame.stdout and "LAG" in frame.stdout and "MSG/S" in frame.stdout
        top_json = json.loads(run("top", "--group", group_id, "--once", "--json").stdout)
        assert top_json["total_lag"] == 0

        # Break it on purpose: remove one owner node behind the member's back (unowned), then claim
        # the partition from a foreign session whose consumer id is not registered (zombie). The
        # member's watch on its node stops its delivery at once and asks for a rebalance, which
        # would claim the node again: holding its rebalance lock keeps the group broken meanwhile.
        with conn.rebalancer._lock:
            zk.delete(znodes.owner_path(group_id, topic, 1))
            bad = run("verify", "--group", group_id, "--json")
            assert bad.exit_code == 1
            assert [(p["kind"], p["topic"], p["partition"]) for p in json.loads(bad.stdout)["problems"]] == [
                ("unowned", topic, 1)
            ]
            zk.create(znodes.owner_path(group_id, topic, 1), f"{group_id}_ghost-0".encode(), ephemeral=True)
            bad = run("verify", "--group", group_id)
            assert bad.exit_code == 1
            assert f"zombie-owner: [{topic},1]" in bad.stdout and "Rebalance operation failed" in bad.stdout
            assert rows_by_partition(describe(run, group_id))[1]["problems"] == ["zombie-owner"]

            # Live members: reset refuses; with --force, owned partitions are still refused.
            refused = run("offsets", "reset", "--group", group_id, "--topic", topic, "--to-earliest", "--execute")
            assert refused.exit_code == 1 and "live members" in refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1
            forced = run(
                "offsets",
                "reset",
                "--group",
                group_id,
                "--topic",
                topic,
                "--to-earliest",
                "--execute",
                "--force",
                "--json",
            )
            assert forced.exit_code == 1
            statuses = {r["partition"]: r["status"] for r in json.loads(forced.stdout)["partitions"]}
            assert all(s.startswith("refused: owned by") for s in statuses.values()), statuses
            assert committed_offsets(zk, group_id, topic) == consumed
            zk.delete(znodes.owner_path(group_id, topic, 1))  # no owner node now: --force may write it
            forced = run(
                "offsets",
                "reset",
                "--group",
                group_id,
                "--topic",
                topic,
                "--to-earliest",
                "--execute",
                "--force",
                "--json",
                "--partitions",
                "1,2",
            )
            statuses = {r["partition"]: r["status"] for r in json.loads(forced.stdout)["partitions"]}
            assert statuses[1] == "written" and statuses[2].startswith("refused")
            assert committed_offsets(zk, group_id, topic) == {**consumed, 1: 0}

        delete = run("groups", "delete", "--group", group_id, "--execute")
        assert delete.exit_code == 1 and "consumers are still active" in delete.stderr
    assert zk.exists(znodes.member_path(group_id, f"{group_id}_a")) is None

    # An inactive group: lag appears as messages arrive; nothing is flagged (nobody subscribes).
    produce(topic, 20, partitions=4, start=100)
    doc = describe(run, group_id)
    assert {r["partition"]: r["lag"] for r in doc["partitions"]} == {0: 5, 1: 30, 2: 5, 3: 5}
    assert all(r["owner"] is None and r["problems"] == [] for r in doc["partitions"])
    plan = run("groups", "delete", "--group", group_id)  # the plan: nothing deleted
    assert plan.exit_code == 0 and plan.stdout == f"would delete {znodes.group_path(group_id)}\n"
    assert "Re-run with --execute" in plan.stderr and zk.exists(znodes.group_path(group_id)) is not None
    delete = run("groups", "delete", "--group", group_id, "--execute")
    assert delete.exit_code == 0 and zk.exists(znodes.group_path(group_id)) is None


def rows_by_partition(doc: dict) -> dict[int, dict]:
    return {r["partition"]: r for r in doc["partitions"]}


def test_export_reset_import_round_trip(cluster, zk, run, topic_factory, produce, group_id, tmp_path) -> None:
    topic = topic_factory(partitions=3)
    produce(topic, 90, partitions=3)
    for p, offset in {0: 10, 1: 20, 2: 30}.items():
        zk.create(znodes.offset_path(group_id, topic, p), str(offset).encode(), makepath=True)

    exported = tmp_path / "offsets.txt"
    result = run("offsets", "export", "--group", group_id, "--output", str(exported))
    assert result.exit_code == 0, result.stderr
    assert exported.read_text() == "".join(
        f"/consumers/{group_id}/offsets/{topic}/{p}:{o}\n" for p, o in {0: 10, 1: 20, 2: 30}.items()
    )

    plan = run("offsets", "reset", "--group", group_id, "--topic", topic, "--to-earliest")
    assert plan.exit_code == 0 and "--execute" in plan.stderr
    assert committed_offsets(zk, group_id, topic) == {0: 10, 1: 20, 2: 30}  # a plan writes nothing
    # Past the log end: refused, naming each partition, unless --clamp (which says what it moved).
    refused = run("offsets", "reset", "--group", group_id, "--topic", topic, "--shift-by", "15", "--json")
    assert refused.exit_code == 2 and refused.stdout == "", refused.output
    assert f"group {group_id}, topic {topic}, partition 1: offset 35 (--shift-by 15) is beyond" in refused.stderr
    assert "partition 0" not in refused.stderr and "2 of 3 offsets are invalid" in refused.stderr
    shifted = json.loads(
        run("offsets", "reset", "--group", group_id, "--topic", topic, "--shift-by", "15", "--clamp", "--json").stdout
    )
    assert [(r["current_offset"], r["new_offset"], r["note"]) for r in shifted["partitions"]] == [
        (10, 25, ""),
        (20, 30, "clamped from 35 to the log end 30"),
        (30, 30, "clamped from 45 to the log end 30"),
    ]
    result = run("offsets", "reset", "--group", group_id, "--topic", topic, "--to-offset", "999", "--execute")
    assert result.exit_code == 2 and committed_offsets(zk, group_id, topic) == {0: 10, 1: 20, 2: 30}
    result = run("offsets", "reset", "-g", group_id, "-t", topic, "--to-offset", "999", "--clamp", "--execute")
    assert result.exit_code == 0, result.stderr
    assert committed_offsets(zk, group_id, topic) == {0: 30, 1: 30, 2: 30}
    result = run(
        "offsets", "reset", "--group", group_id, "--topic", topic, "--to-earliest", "--execute", "--partitions", "0,2"
    )
    assert committed_offsets(zk, group_id, topic) == {0: 0, 1: 30, 2: 0}

    plan = run("offsets", "import", "--input", str(exported))
    assert plan.exit_code == 0 and committed_offsets(zk, group_id, topic) == {0: 0, 1: 30, 2: 0}
    result = run("offsets", "import", "--input", str(exported), "--execute")
    assert result.exit_code == 0, result.stderr
    assert committed_offsets(zk, group_id, topic) == {0: 10, 1: 20, 2: 30}

    # A legacy file: reading stops at the first empty line; JSON export round-trips too.
    legacy = tmp_path / "legacy.txt"
    legacy.write_text(f"/consumers/{group_id}/offsets/{topic}/0:7\r\n\n/consumers/{group_id}/offsets/{topic}/1:8\n")
    assert run("offsets", "import", "--input", str(legacy), "--execute").exit_code == 0
    assert committed_offsets(zk, group_id, topic) == {0: 7, 1: 20, 2: 30}
    as_json = run("offsets", "export", "--group", group_id, "--json")
    assert json.loads(as_json.stdout)["offsets"][0] == {"group": group_id, "topic": topic, "partition": 0, "offset": 7}
    imported = run("offsets", "import", "--format", "json", "--input", "-", "--execute", input=as_json.stdout)
    assert imported.exit_code == 0, imported.output
    assert committed_offsets(zk, group_id, topic) == {0: 7, 1: 20, 2: 30}

    bad = tmp_path / "bad.txt"
    bad.write_text(f"/consumers/{group_id}/offsets/{topic}/0:12\n/consumers/{group_id}/offset/{topic}/1:5\n")
    result = run("offsets", "import", "--input", str(bad), "--execute")
    assert result.exit_code == 2 and "line 2" in result.stderr
    assert committed_offsets(zk, group_id, topic)[0] == 7  # nothing written from a bad file


def test_consume_from_beginning_prints_exactly_n_and_cleans_up(cluster, zk, topic_factory, produce) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 40, partitions=2)
    before = set(zk.get_children("/consumers"))
    proc = _run_cli(cluster, "consume", "--topic", topic, "--from-beginning", "--max-messages", "7")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 7 and all(line.startswith(f"{topic}-") for line in lines)
    assert "Processed a total of 7 messages" in proc.stderr.decode()
    after = set(zk.get_children("/consumers"))
    assert not {g for g in after - before if g.startswith("console-consumer-")}, after - before


def test_consume_named_group_refuses_previous_offsets_then_ctrl_c_commits(
    cluster, zk, topic_factory, produce, group_id
) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 10, partitions=2)
    first = _run_cli(
        cluster,
        "consume",
        "--topic",
        topic,
        "--group",
        group_id,
        "--from-beginning",
        "--timeout-ms",
        "3000",
        "--property",
        "print.partition=true",
        "--property",
        "print.offset=true",
    )
    assert first.returncode == 0, first.stderr
    assert sorted(first.stdout.decode().splitlines()) == sorted(
        f"Partition:{p}\tOffset:{o}\t{topic}-{2 * o + p}" for p in range(2) for o in range(5)
    )
    assert committed_offsets(zk, group_id, topic) == {0: 5, 1: 5}

    again = _run_cli(cluster, "consume", "--topic", topic, "--group", group_id, "--from-beginning")
    assert again.returncode == 1
    assert again.stderr.decode().strip() == (
        f"zkconsumer: error: Found previous offset information for this group {group_id}. "
        "Please use --delete-consumer-offsets to delete previous offsets metadata"
    )

    # Ctrl-C: a clean shutdown that commits what was printed and leaves the group.
    child = pexpect.spawn(
        ZKCONSUMER,
        [
            "consume",
            "--zookeeper",
            cluster.zookeeper_connect,
            "--topic",
            topic,
            "--group",
            group_id,
            "--from-beginning",
            "--delete-consumer-offsets",
            "--json",
        ],
        timeout=60,
    )
    for _ in range(10):
        child.expect(r'\{"topic": [^\r\n]*\}')
    time.sleep(0.3)
    child.sendintr()
    child.expect("Processed a total of 10 messages")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert committed_offsets(zk, group_id, topic) == {0: 5, 1: 5}
    assert zk.get_children(znodes.ids_path(group_id)) == []

    # SIGTERM likewise; without --from-beginning the group resumes from its committed offsets.
    produce(topic, 4, partitions=2, start=10)
    child = pexpect.spawn(
        ZKCONSUMER,
        ["consume", "--zookeeper", cluster.zookeeper_connect, "--topic", topic, "--group", group_id],
        timeout=60,
    )
    for _ in range(4):
        child.expect(rf"{topic}-1[0-3]\r\n")
    child.kill(signal.SIGTERM)
    child.expect("Processed a total of 4 messages")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert committed_offsets(zk, group_id, topic) == {0: 7, 1: 7}


def test_top_under_a_terminal_refreshes_until_ctrl_c(cluster, zk, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 10, partitions=2)
    with member(cluster, group_id, "t") as conn:
        conn.create_message_streams({topic: 1})
        wait_for_balanced(zk, group_id, [topic], members=1)
        child = pexpect.spawn(
            ZKCONSUMER,
            ["top", "--zookeeper", cluster.zookeeper_connect, "--group", group_id, "--interval", "0.5"],
            timeout=30,
            dimensions=(50, 320),
            env={**os.environ, "COLUMNS": "320", "LINES": "50"},
            # A suite started as a background job (`.ci/run &`) ignores SIGINT, and
            # children inherit that: give the CLI the default, as a terminal would.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        child.expect(f"group {group_id}")
        child.expect("Partitions")
        child.expect(f"{group_id}_t-0")
        child.expect(f"group {group_id}")  # a second frame
        child.sendintr()
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before


def _run_cli(cluster, *args: str):  # type: ignore[no-untyped-def]
    import subprocess

    return subprocess.run(
        [ZKCONSUMER, *args, "--zookeeper", cluster.zookeeper_connect], capture_output=True, timeout=90
    )


def test_import_into_a_new_group_and_delete_by_topic(cluster, zk, run, topic_factory, group_id, tmp_path) -> None:
    topic, other = topic_factory(partitions=2), topic_factory(partitions=1)
    lines = [
        f"/consumers/{group_id}/offsets/{topic}/0:0",
        f"/consumers/{group_id}/offsets/{topic}/1:0",
        f"/consumers/{group_id}/offsets/{other}/0:0",
    ]
    (tmp_path / "new.txt").write_text("\n".join(lines) + "\n")
    result = run("offsets", "import", "--input", str(tmp_path / "new.txt"), "--execute")
    assert result.exit_code == 0, result.stderr
    assert committed_offsets(zk, group_id, topic) == {0: 0, 1: 0}
    assert zk.get_children(znodes.owners_path(group_id, topic)) == []  # the guard left no owner behind

    zk.create(
        znodes.member_path(group_id, f"{group_id}_x"),
        b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1"}',
        ephemeral=True,
        makepath=True,
    )
    refused = run("groups", "delete", "--topic", topic, "--execute")
    assert refused.exit_code == 1 and "still active" in refused.stderr
    zk.delete(znodes.member_path(group_id, f"{group_id}_x"))
    dry = run("groups", "delete", "--group", group_id, "--topic", topic, "--dry-run")
    assert dry.exit_code == 0 and committed_offsets(zk, group_id, topic) == {0: 0, 1: 0}
    assert dry.stdout.split() == [
        "would",
        "delete",
        znodes.owners_path(group_id, topic),
        "would",
        "delete",
        znodes.offsets_path(group_id, topic),
    ]
    assert run("groups", "delete", "--topic", topic, "--execute").exit_code == 0
    assert zk.exists(znodes.offsets_path(group_id, topic)) is None
    assert committed_offsets(zk, group_id, other) == {0: 0}


def test_digest_protected_group_needs_zk_digest(cluster, run, group_id) -> None:
    from kazoo.security import make_digest_acl

    admin = cluster.zk_client(auth_data=[("digest", "ops:s3cret")])
    try:
        acl = [make_digest_acl("ops", "s3cret", all=True)]
        admin.create(znodes.ids_path(group_id), acl=acl, makepath=True)
        admin.set_acls(znodes.group_path(group_id), acl)
        denied = run("groups", "describe", "--group", group_id)
        assert denied.exit_code == 1
        assert denied.stderr == (
            f"zkconsumer: error: ZooKeeper refused to read {znodes.group_path(group_id)}: NoAuth (its ACL does "
            "not allow this client's identity); pass --zk-jaas FILE (SASL, as the group's Scala members log in) "
            "or --zk-digest user:password\n"
        )
        allowed = run("groups", "describe", "--group", group_id, "--zk-digest", "ops:s3cret", "--json")
        assert allowed.exit_code == 0, allowed.stderr
        assert json.loads(allowed.stdout)["members"] == []
    finally:
        admin.delete(znodes.group_path(group_id), recursive=True)
        admin.stop()
        admin.close()
