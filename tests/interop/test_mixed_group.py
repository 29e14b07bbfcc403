"""Range groups mixing real Scala 1.1.1 members and zkconsumer members: ownership, delivery, clean leaves."""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest
from kazoo.security import OPEN_ACL_UNSAFE

from zkconsumer import zkdata
from zkconsumer.testing.members import committed_offsets, owner_table
from zkconsumer.testing.scala import verify_consumer_rebalance

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

PARTITIONS = 12
# Convergence after a clean leave, ours vs Scala's, appended here so the numbers can go into a note.
RECORD = Path(os.environ.get("ZKCONSUMER_INTEROP_RECORD", "/tmp/zkconsumer-interop-convergence.jsonl"))


def keys_of(produced) -> set[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return {(m.topic, m.partition, m.offset) for m in produced}


def start_four(mixed, topic: str) -> dict[tuple[str, int], str]:  # type: ignore[no-untyped-def]
    """2 Scala + 2 zkconsumer members with different stream counts; names interleave in thread order."""
    mixed.add_scala("a-scala", {topic: 2})
    mixed.add_scala("c-scala", {topic: 1})
    mixed.add_py("b-py", {topic: 3})
    mixed.add_py("d-py", {topic: 1})
    mixed.wait_ready()
    return mixed.balanced([topic])


def record(result: dict[str, object]) -> None:
    with RECORD.open("a") as out:
        out.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%S"), **result}) + "\n")


def node_facts(zk, path: str) -> tuple[bytes, bool, list]:  # type: ignore[no-untyped-def,type-arg]
    data, stat = zk.get(path)
    return data, stat.ephemeralOwner != 0, zk.get_acls(path)[0]


def owned_partitions(owners: dict[tuple[str, int], str], consumer_id: str) -> set[int]:
    return {p for (_, p), thread in owners.items() if thread.rsplit("-", 1)[0] == consumer_id}


def test_mixed_range_group_owns_each_partition_once_and_consumes_exactly_once(mixed, topic_factory, produce) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    owners = start_four(mixed, topic)  # already equal to our range assignor's answer
    g = mixed.group
    # Threads in String order: a-scala-0, a-scala-1, b-py-0..2, c-scala-0, d-py-0 (7 threads, 12
    # partitions): the first five get two partitions each, the last two one each.
    layout = ["a-scala-0"] * 2 + ["a-scala-1"] * 2 + ["b-py-0"] * 2 + ["b-py-1"] * 2 + ["b-py-2"] * 2 \
        + ["c-scala-0", "d-py-0"]
    assert owners == {(topic, p): f"{g}_{thread}" for p, thread in enumerate(layout)}

    sent = produce(topic, 1200, partitions=PARTITIONS)
    mixed.wait_for(keys_of(sent))
    counts = mixed.keys()
    assert set(counts) == keys_of(sent)
    assert not {k: n for k, n in counts.items() if n > 1}, "a message was delivered twice"
    for name in ("a-scala", "b-py", "c-scala", "d-py"):  # each member read only what it owns
        assert {p for _, p, _ in mixed.deliveries(name)} == owned_partitions(owners, f"{g}_{name}"), name
    assert owner_table(mixed.zk, g, [topic]) == owners  # nothing moved while consuming
    assert "Rebalance operation successful !" in verify_consumer_rebalance(mixed.cluster.zookeeper_connect, g)


@pytest.mark.parametrize("kind", ["zkconsumer", "scala"])
def test_clean_leave_hands_partitions_over_at_committed_offsets(mixed, zk, topic_factory, produce, capsys,
                                                                 caplog, kind: str) -> None:
    """The same group but for the leaver's kind: a-scala, b-py (2 streams), c-<kind>, d-scala.

    Threads a-0, b-0, b-1, c-0, d-0 own {0-2}, {3-5}, {6,7}, {8,9}, {10,11}; after c leaves,
    b-py-1 takes 8 and d-scala takes 9, so each kind takes over from the leaver, and the
    convergence times of the two runs compare like with like.
    """
    caplog.set_level(logging.INFO, logger="zkconsumer.coordinator")
    topic = topic_factory(partitions=PARTITIONS)
    leaver = "c-py" if kind == "zkconsumer" else "c-scala"
    mixed.add_scala("a-scala", {topic: 1})
    mixed.add_scala("d-scala", {topic: 1})
    if kind == "scala":
        mixed.add_scala(leaver, {topic: 1})
    mixed.add_py("b-py", {topic: 2})
    if kind == "zkconsumer":
        mixed.add_py(leaver, {topic: 1})
    mixed.wait_ready()
    before = mixed.balanced([topic])
    g = mixed.group
    first = produce(topic, 240, partitions=PARTITIONS)  # 20 per partition
    mixed.wait_for(keys_of(first))
    moved = owned_partitions(before, f"{g}_{leaver}")
    scala_tries = {n: m.log_tail(100000).count("begin rebalancing") for n, m in mixed.scala.items() if n != leaver}

    gone: list[float] = []  # when ZooKeeper deleted the leaver's member node (watch event)
    zk.exists(zkdata.member_path(g, f"{g}_{leaver}"), watch=lambda _event: gone.append(time.monotonic()))
    began, began_wall = time.monotonic(), time.time()
    leave_s = mixed.leave(leaver)
    after = mixed.balanced([topic])
    converged_s = time.monotonic() - began

    assert {p for (_, p), t in after.items() if before[(topic, p)] != t} == moved == {8, 9}
    assert (after[(topic, 8)], after[(topic, 9)]) == (f"{g}_b-py-1", f"{g}_d-scala-0")
    # The leaver committed exactly what it delivered (nothing was in flight), and nobody has
    # committed the moved partitions since: the new owners start from the leaver's offsets.
    # Every offset node (written by whichever member, Scala or us, at leave or rebalance) is a
    # bare decimal, persistent, open ACL; every owner node a bare thread id, ephemeral, open ACL.
    offsets = committed_offsets(zk, g, topic)
    assert moved <= offsets.keys()
    assert {p: node_facts(zk, zkdata.offset_path(g, topic, p)) for p in offsets} == {
        p: (b"20", False, OPEN_ACL_UNSAFE) for p in offsets}
    assert {p: node_facts(zk, zkdata.owner_path(g, topic, p)) for p in range(PARTITIONS)} == {
        p: (after[(topic, p)].encode(), True, OPEN_ACL_UNSAFE) for p in range(PARTITIONS)}
    assert all(thread.rsplit("-", 1)[0] != f"{g}_{leaver}" for thread in after.values())
    second = produce(topic, 240, partitions=PARTITIONS, start=240)
    mixed.wait_for(keys_of(second))
    counts = mixed.keys()
    assert set(counts) == keys_of(first) | keys_of(second), "loss"
    assert not {k: n for k, n in counts.items() if n > 1}, "a clean leave must not re-deliver anything"
    for p in moved:
        new_owner = after[(topic, p)].rsplit("-", 1)[0].removeprefix(f"{g}_")
        delivered = sorted(o for _, q, o in mixed.deliveries(new_owner) if q == p)
        assert delivered == list(range(20, 40)), f"{new_owner} on partition {p}"

    attempts = {n: m.log_tail(100000).count("begin rebalancing") - scala_tries[n] for n, m in mixed.scala.items()}
    for record in caplog.records:  # ours: "<consumer id>: rebalance attempt i/n (reason)"
        if record.created >= began_wall and "rebalance attempt" in record.getMessage():
            name = str(record.args[0]).removeprefix(f"{g}_")  # type: ignore[index]
            attempts[name] = attempts.get(name, 0) + 1
    gone_s = gone[0] - began if gone else float("nan")
    result = {"leave_s": round(leave_s, 3), "member_node_gone_s": round(gone_s, 3),
              "converged_s": round(converged_s, 3), "rebalance_attempts": attempts, "moved": sorted(moved)}
    record({"event": f"clean leave of a {kind} member", **result})
    with capsys.disabled():
        print(f"\n[interop] a {kind} member left a range group (+ a-scala, b-py, d-scala): shutdown "
              f"{leave_s:.2f}s, member node gone {gone_s:.2f}s, owners converged {converged_s:.2f}s after "
              f"the leave began (rebalance attempts: {attempts}; recorded in {RECORD})")


@pytest.mark.parametrize("victim", ["scala", "zkconsumer"])
def test_killed_member_is_replaced_after_its_session_expires(mixed, zk, topic_factory, produce, capsys,
                                                            victim: str) -> None:
    """kill -9 of one kind; the other kind takes over once the 6 s session has expired."""
    topic = topic_factory(partitions=6)
    g = mixed.group
    if victim == "scala":
        dead, survivor = mixed.add_scala("a-dead", {topic: 2}), "b-py"
        mixed.add_py(survivor, {topic: 1})
    else:
        survivor = "b-scala"
        mixed.add_scala(survivor, {topic: 1})
        dead = mixed.add_py_process("a-dead", topic, 2)  # its own process, so it can be killed
    mixed.wait_ready()
    before = mixed.balanced([topic])
    assert {t.rsplit("-", 1)[0] for t in before.values()} == {f"{g}_a-dead", f"{g}_{survivor}"}
    first = produce(topic, 60, partitions=6)
    mixed.wait_for(keys_of(first))
    committed = committed_offsets(zk, g, topic)  # auto-commit is every 60 s: none of this batch
    uncommitted = {(t, p, o) for t, p, o in dead.deliveries() if o >= committed.get(p, 0)}

    began = time.monotonic()
    mixed.kill("a-dead")
    after = mixed.balanced([topic], timeout=30)  # its nodes vanish when its session expires
    converged_s = time.monotonic() - began
    assert set(after.values()) == {f"{g}_{survivor}-0"}
    second = produce(topic, 60, partitions=6, start=60)
    mixed.wait_for(keys_of(first) | keys_of(second))
    counts = mixed.keys()
    assert set(counts) == keys_of(first) | keys_of(second), "loss"
    # At-least-once: exactly what the dead member handed out after its last commit comes again.
    assert uncommitted and {k for k, n in counts.items() if n > 1} == uncommitted
    if survivor in mixed.scala:
        assert "can't rebalance" not in mixed.scala[survivor].log_tail(100000)
    record({"event": f"kill -9 of a {victim} member", "converged_s": round(converged_s, 3),
            "redelivered": len(uncommitted)})
    with capsys.disabled():
        print(f"\n[interop] kill -9 of a {victim} member (session 6 s): the {survivor} member owned its "
              f"partitions {converged_s:.2f}s later; {len(uncommitted)} uncommitted messages re-delivered")
