"""The CLI refusing an operator's mistakes on a real cluster: each refusal names the bad row or node,
exits 1 or 2 and writes no znode (the bad-input table of docs/cli.md)."""

from __future__ import annotations

import json
import os

import pytest
from kazoo.client import KazooClient

from harness.members import committed_offsets
from zkconsumer.zookeeper import znodes

pytestmark = pytest.mark.cluster


def tree(client: KazooClient, path: str) -> dict[str, int]:
    """path -> mzxid of `path` and every node under it (empty when it does not exist)."""
    stat = client.exists(path)
    if stat is None:
        return {}
    nodes = {path: stat.mzxid}
    for child in client.get_children(path):
        nodes.update(tree(client, f"{path.rstrip('/')}/{child}"))
    return nodes


def offsets_file(tmp_path, name: str, lines: list[str]):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_refuses_every_bad_row_and_writes_nothing(zk, run, topic_factory, produce, group_id, tmp_path) -> None:
    topic = topic_factory(partitions=6)
    produce(topic, 120, partitions=6)  # every log holds [0, 20]
    missing = f"no-such-topic-{group_id[-20:]}"
    zk.create(znodes.offset_path(group_id, topic, 0), b"7", makepath=True)
    before = tree(zk, "/consumers")
    good = f"/consumers/{group_id}/offsets/{topic}/0:3"
    where = f"line 2: group {group_id}, topic {topic}"
    cases = {
        "negative": (f"/consumers/{group_id}/offsets/{topic}/1:-5", f"{where}, partition 1: offset -5 is negative"),
        "past the end": (
            f"/consumers/{group_id}/offsets/{topic}/2:999999",
            f"{where}, partition 2: offset 999999 is beyond the log end; the log holds [0, 20]",
        ),
        "no partition": (
            f"/consumers/{group_id}/offsets/{topic}/99:5",
            f"{where}, partition 99: topic {topic} has no partition 99 (its partitions: 0-5)",
        ),
        "no topic": (
            f"/consumers/{group_id}/offsets/{missing}/0:5",
            f"line 2: group {group_id}, topic {missing}, partition 0: topic {missing} does not exist "
            f"(no /brokers/topics/{missing})",
        ),
    }
    for name, (line, message) in cases.items():
        result = run("offsets", "import", "-i", str(offsets_file(tmp_path, "in.txt", [good, line])), "--execute")
        assert result.exit_code == 2, (name, result.output)
        assert result.stdout == "", name
        assert f"zkconsumer: error: {message}" in result.stderr, (name, result.stderr)
        assert result.stderr.splitlines()[-1].startswith(
            "zkconsumer: error: refusing to write: 1 of 2 offsets are invalid (listed above); nothing was written."
        ), result.stderr
        assert tree(zk, "/consumers") == before, f"{name}: a refused import wrote"
    assert zk.exists(znodes.offsets_path(group_id, missing)) is None
    assert zk.exists(znodes.owners_path(group_id, missing)) is None
    assert zk.exists(znodes.topic_path(missing)) is None

    # Bytes that are no UTF-8: one line, exit 2, before ZooKeeper is asked anything.
    garbled = tmp_path / "garbled.txt"
    garbled.write_bytes(good.encode() + b"\n/consumers/\xff/offsets/t/0:1\n")
    result = run("offsets", "import", "-i", str(garbled), "--execute")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert "not UTF-8 text (byte 0xff" in result.stderr and "Traceback" not in result.output
    assert tree(zk, "/consumers") == before

    # --clamp moves offsets outside the log to its nearer end and names the rows; a missing
    # partition is still refused (there is no log to clamp into).
    clampable = [good, cases["negative"][0], cases["past the end"][0]]
    nope = run("offsets", "import", "-i", str(offsets_file(tmp_path, "c.txt", [*clampable, cases["no partition"][0]])))
    assert nope.exit_code == 2 and "--clamp" not in nope.stderr.splitlines()[-1], nope.stderr
    clamped = run("offsets", "import", "-i", str(offsets_file(tmp_path, "c.txt", clampable)), "--clamp", "--execute")
    assert clamped.exit_code == 0, clamped.output
    assert f"--clamp moved 2 offsets into the log: {topic}-1 of {group_id}, {topic}-2 of {group_id}" in clamped.stderr
    assert committed_offsets(zk, group_id, topic) == {0: 3, 1: 0, 2: 20}
    assert "clamped from -5 to the log start 0" in clamped.stdout


def test_reset_refuses_targets_outside_the_log(zk, run, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)
    for p in (0, 1):
        zk.create(znodes.offset_path(group_id, topic, p), b"4", makepath=True)
    before = tree(zk, "/consumers")
    back = run("offsets", "reset", "-g", group_id, "-t", f"{topic}:1", "--shift-by", "-9", "--execute")
    assert back.exit_code == 2, back.output
    assert "partition 1: offset -5 (--shift-by -9) is negative; the log holds [0, 10]" in back.stderr
    no_partition = run("offsets", "reset", "-g", group_id, "-t", f"{topic}:7", "--to-earliest", "--execute")
    assert (
        no_partition.exit_code == 2 and f"topic {topic} has no partition 7 (its partitions: 0-1)" in no_partition.stderr
    )
    assert tree(zk, "/consumers") == before


@pytest.mark.parametrize(
    "command",
    [
        ["groups", "list"],
        ["groups", "describe", "-g", "g"],
        ["verify", "-g", "g"],
        ["top", "-g", "g", "--once"],
        ["offsets", "export"],
        ["offsets", "reset", "-g", "g", "-t", "t", "--to-earliest", "--execute"],
        ["groups", "delete", "-g", "g", "--execute"],
        ["consume", "--topic", "t", "--max-messages", "1"],
        ["consume", "--topic", "t", "--group", "g", "--delete-consumer-offsets", "--max-messages", "1"],
        ["migrate", "plan", "-g", "g"],
    ],
    ids=" ".join,
)
def test_no_command_creates_nodes_under_a_chroot_without_brokers(cluster, run, command: list[str]) -> None:
    chroot = f"/nope-{os.getpid()}"
    root = KazooClient(hosts=cluster.zookeeper_hosts)
    root.start(timeout=30)
    try:
        before = sorted(root.get_children("/"))
        result = run(*command, "--zookeeper", cluster.zookeeper_hosts + chroot)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("\n") == 1 and "wrong chroot?" in result.stderr, result.stderr
        assert f"(/{chroot[1:]} does not exist)" in result.stderr and "Nothing was written" in result.stderr
        assert root.exists(chroot) is None and sorted(root.get_children("/")) == before
    finally:
        root.stop()
        root.close()


def test_a_chroot_without_brokers_names_the_one_that_has_them(cluster, run) -> None:
    chroot = getattr(cluster, "chroot", None)
    if not chroot:
        pytest.skip("the cluster runs without a chroot: the root has /brokers")
    result = run("groups", "list", "--zookeeper", cluster.zookeeper_hosts)
    assert result.exit_code == 2
    assert f"({chroot}/brokers exists: --zookeeper {cluster.zookeeper_hosts}{chroot})" in result.stderr


def test_describe_flags_exactly_what_verify_reports(zk, run, topic_factory, produce, group_id) -> None:
    topic = topic_factory(partitions=3)
    produce(topic, 30, partitions=3)  # logs [0, 10]
    for partition, value in {0: b"-5", 1: b"999", 2: b"4", 5: b"3"}.items():
        zk.create(znodes.offset_path(group_id, topic, partition), value, makepath=True)
    described = run("groups", "describe", "-g", group_id, "--json")
    assert described.exit_code == 0, described.output
    flagged = {(r["partition"], kind) for r in json.loads(described.stdout)["partitions"] for kind in r["problems"]}
    assert flagged == {(0, "negative-offset"), (1, "offset-after-log-end"), (5, "unknown-partition")}
    verified = run("verify", "-g", group_id, "--json")
    assert verified.exit_code == 1, verified.output
    doc = json.loads(verified.stdout)
    assert {(p["partition"], p["kind"]) for p in doc["problems"]} == flagged
    assert doc["ok"] is False and doc["rebalanced"] is True  # nobody subscribes: the balance is fine
    text = run("verify", "-g", group_id)
    assert "Rebalance operation successful ! " in text.stdout and "3 problems)" in text.stdout
    assert text.exit_code == 1


def test_expected_errors_are_one_line(cluster, run, topic_factory, group_id) -> None:
    for args in (
        ["groups", "describe", "--group", "no-such-group"],
        ["verify", "--group", "no-such-group"],
        ["top", "--group", "no-such-group", "--once"],
        ["offsets", "export", "--group", "no-such-group"],
    ):
        result = run(*args)
        assert result.exit_code == 1, args
        assert result.stderr.count("\n") == 1 and "unknown group 'no-such-group'" in result.stderr, result.stderr
        assert "Traceback" not in result.output
    result = run("groups", "describe", "--group", "x", "--zookeeper", "127.0.0.1:1", "--zk-timeout", "1")
    assert result.exit_code == 1
    assert result.stderr == "zkconsumer: error: ZooKeeper unreachable at 127.0.0.1:1 after 1 s\n"
    topic = topic_factory(partitions=1)
    run("offsets", "reset", "--group", group_id, "--topic", topic, "--to-earliest")
    os_group = run("offsets", "reset", "--group", "no-such-group", "--topic", topic, "--to-latest")
    assert os_group.exit_code == 1 and "unknown group" in os_group.stderr


def test_reset_unknown_topic_and_bad_options(cluster, zk, run, group_id) -> None:
    zk.ensure_path(znodes.ids_path(group_id))
    result = run("offsets", "reset", "--group", group_id, "--topic", "nope", "--to-earliest")
    assert result.exit_code == 2 and result.stderr.strip() == (
        "zkconsumer: error: no such topic 'nope' (no /brokers/topics/nope); nothing was written"
    )
    both = run("offsets", "reset", "--group", group_id, "--topic", "nope", "--to-earliest", "--to-latest")
    assert both.exit_code == 2 and "exactly one" in both.stderr
