"""Range groups mixing real Scala 1.1.1 and zkconsumer members: ownership, delivery, joins, leaves, kill -9."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path

import pytest
from kazoo.security import OPEN_ACL_UNSAFE

from harness.members import committed_offsets, keys_of, owner_table
from harness.scala import verify_consumer_rebalance
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

PARTITIONS = 12
# Convergence times (leave, join, kill -9; ours vs Scala's), appended here for a note.
RECORD = Path(os.environ.get("ZKCONSUMER_INTEROP_RECORD", "/tmp/zkconsumer-interop-convergence.jsonl"))


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
    layout = (
        ["a-scala-0"] * 2
        + ["a-scala-1"] * 2
        + ["b-py-0"] * 2
        + ["b-py-1"] * 2
        + ["b-py-2"] * 2
        + ["c-scala-0", "d-py-0"]
    )
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


class Attempts:
    """Rebalance attempts per member from now on: Scala's log lines and our rebalancer's records."""

    def __init__(self, mixed, caplog) -> None:  # type: ignore[no-untyped-def]
        caplog.set_level(logging.INFO, logger="zkconsumer.coordinator.rebalancer")
        self.mixed, self.caplog, self.since = mixed, caplog, time.time()
        self.scala = {n: self._scala_count(n) for n in mixed.scala}

    def _scala_count(self, name: str) -> int:
        return self.mixed.scala[name].log_tail(100000).count("begin rebalancing")

    def counts(self) -> dict[str, int]:
        prefix = f"{self.mixed.group}_"
        out = {n: self._scala_count(n) - self.scala.get(n, 0) for n in self.mixed.scala}
        for rec in self.caplog.records:  # ours: INFO "<consumer id>: rebalance attempt i/n (reason)"
            if rec.created >= self.since and rec.levelno == logging.INFO and "rebalance attempt" in rec.getMessage():
                name = str(rec.args[0]).removeprefix(prefix)  # type: ignore[index]
                out[name] = out.get(name, 0) + 1
        return out


def check_offset_and_owner_nodes(
    zk,
    group: str,
    topic: str,  # type: ignore[no-untyped-def]
    owners: dict[tuple[str, int], str],
    moved: set[int],
) -> None:
    """Moved partitions were committed at 20 by their last owner before it let go (nothing was in
    flight), and nobody committed them since. Every offset node, whoever wrote it (Scala or us),
    is a bare decimal, persistent, open ACL; every owner node a bare thread id, ephemeral, open
    ACL. (A member keeping a partition need not commit it at a rebalance, so others may differ.)"""
    nodes = {p: node_facts(zk, znodes.offset_path(group, topic, p)) for p in committed_offsets(zk, group, topic)}
    assert {p: nodes.get(p) for p in moved} == {p: (b"20", False, OPEN_ACL_UNSAFE) for p in moved}
    assert all(
        re.fullmatch(rb"0|[1-9][0-9]*", data) and (ephemeral, acl) == (False, OPEN_ACL_UNSAFE)
        for data, ephemeral, acl in nodes.values()
    ), nodes
    assert {p: node_facts(zk, znodes.owner_path(group, topic, p)) for p in range(PARTITIONS)} == {
        p: (owners[(topic, p)].encode(), True, OPEN_ACL_UNSAFE) for p in range(PARTITIONS)
    }


def check_continuation(
    mixed,
    produce,
    topic: str,
    first,  # type: ignore[no-untyped-def]
    owners: dict[tuple[str, int], str],
    moved: set[int],
    stale: dict[int, int] | None = None,
) -> dict[int, int]:
    """A second batch, then: no loss, and each moved partition's new owner started at 20, the
    offset its previous owner committed before letting go. Returns partition -> start offset.

    `stale` (joins only): the offsets committed before the change. A joiner reads offsets before
    it claims (Scala's order, and ours), so if the old owner commits and releases in between, the
    joiner starts from the stale value: legal at-least-once in the legacy protocol, allowed here
    only in exactly that form (re-delivery of [stale, 20) on that partition, nothing else).
    """
    second = produce(topic, 240, partitions=PARTITIONS, start=240)
    mixed.wait_for(keys_of(second))
    counts = mixed.keys()
    assert set(counts) == keys_of(first) | keys_of(second), "loss"
    starts, expected_dups = {}, set()
    for p in moved:
        new_owner = owners[(topic, p)].rsplit("-", 1)[0].removeprefix(f"{mixed.group}_")
        delivered = sorted(o for _, q, o in mixed.deliveries(new_owner) if q == p)
        starts[p] = delivered[0]
        allowed = {20} if stale is None else {20, max(stale.get(p, 0), 0)}
        assert starts[p] in allowed and delivered == list(range(starts[p], 40)), f"{new_owner} on partition {p}"
        expected_dups |= {(topic, p, o) for o in range(starts[p], 20)}
    assert {k for k, n in counts.items() if n > 1} == expected_dups, "unexpected re-delivery"
    assert all(n <= 2 for n in counts.values())
    return starts


def add(mixed, name: str, topic: str, streams: int = 1) -> None:  # type: ignore[no-untyped-def]
    """Scala member if the name ends in "scala", else an in-process zkconsumer member."""
    if name.endswith("scala"):
        mixed.add_scala(name, {topic: streams})
    else:
        mixed.add_py(name, {topic: streams})


@pytest.mark.parametrize("kind", ["zkconsumer", "scala"])
def test_clean_leave_hands_partitions_over_at_committed_offsets(
    mixed, zk, topic_factory, produce, capsys, caplog, kind: str
) -> None:
    """The same group but for the leaver's kind: a-scala, b-py (2 streams), c-<kind>, d-scala.

    Threads a-0, b-0, b-1, c-0, d-0 own {0-2}, {3-5}, {6,7}, {8,9}, {10,11}; after c leaves,
    b-py-1 takes 8 and d-scala takes 9, so each kind takes over from the leaver, and the
    convergence times of the two runs compare like with like.
    """
    topic = topic_factory(partitions=PARTITIONS)
    leaver = "c-py" if kind == "zkconsumer" else "c-scala"
    for name, streams in (("a-scala", 1), ("d-scala", 1), ("b-py", 2), (leaver, 1)):
        add(mixed, name, topic, streams)
    mixed.wait_ready()
    before = mixed.balanced([topic])
    g = mixed.group
    first = produce(topic, 240, partitions=PARTITIONS)  # 20 per partition
    mixed.wait_for(keys_of(first))

    attempts = Attempts(mixed, caplog)
    gone: list[float] = []  # when ZooKeeper deleted the leaver's member node (watch event)
    zk.exists(znodes.member_path(g, f"{g}_{leaver}"), watch=lambda _event: gone.append(time.monotonic()))
    scala_tries = mixed.scala_rebalances()
    began = time.monotonic()
    leave_s = mixed.leave(leaver)
    after = mixed.balanced([topic])
    converged_s = time.monotonic() - began
    assert mixed.settled([topic], scala_tries) == after

    moved = {p for (_, p), t in after.items() if before[(topic, p)] != t}
    assert moved == owned_partitions(before, f"{g}_{leaver}") == {8, 9}
    assert (after[(topic, 8)], after[(topic, 9)]) == (f"{g}_b-py-1", f"{g}_d-scala-0")
    check_offset_and_owner_nodes(zk, g, topic, after, moved)
    check_continuation(mixed, produce, topic, first, after, moved)

    gone_s = gone[0] - began if gone else float("nan")
    result = {
        "leave_s": round(leave_s, 3),
        "member_node_gone_s": round(gone_s, 3),
        "converged_s": round(converged_s, 3),
        "rebalance_attempts": attempts.counts(),
    }
    record({"event": f"clean leave of a {kind} member", **result})
    with capsys.disabled():
        print(
            f"\n[interop] a {kind} member left a range group (+ a-scala, b-py, d-scala): shutdown "
            f"{leave_s:.2f}s, member node gone {gone_s:.2f}s, owners converged {converged_s:.2f}s after "
            f"the leave began (rebalance attempts: {result['rebalance_attempts']}; recorded in {RECORD})"
        )


@pytest.mark.parametrize("kind", ["zkconsumer", "scala"])
def test_join_takes_partitions_over_at_committed_offsets(
    mixed, zk, topic_factory, produce, capsys, caplog, kind: str
) -> None:
    """a-scala, b-py (2 streams), d-scala consume; c-<kind> joins and takes 8 from b-py-1 (ours)
    and 9 from d-scala: both kinds hand over to the joiner at their committed offsets."""
    topic = topic_factory(partitions=PARTITIONS)
    joiner = "c-py" if kind == "zkconsumer" else "c-scala"
    for name, streams in (("a-scala", 1), ("d-scala", 1), ("b-py", 2)):
        add(mixed, name, topic, streams)
    mixed.wait_ready()
    before = mixed.balanced([topic])
    g = mixed.group
    first = produce(topic, 240, partitions=PARTITIONS)
    mixed.wait_for(keys_of(first))

    stale = committed_offsets(zk, g, topic)
    attempts = Attempts(mixed, caplog)
    joined: list[float] = []  # when the joiner's member node appeared (its JVM start excluded)
    zk.exists(znodes.member_path(g, f"{g}_{joiner}"), watch=lambda _event: joined.append(time.monotonic()))
    scala_tries = mixed.scala_rebalances()
    add(mixed, joiner, topic)
    mixed.wait_ready()
    after = mixed.balanced([topic])
    converged_s = time.monotonic() - joined[0]
    assert mixed.settled([topic], scala_tries) == after

    moved = {p for (_, p), t in after.items() if before[(topic, p)] != t}
    assert moved == {8, 9} and {after[(topic, p)] for p in moved} == {f"{g}_{joiner}-0"}
    check_offset_and_owner_nodes(zk, g, topic, after, moved)
    starts = check_continuation(mixed, produce, topic, first, after, moved, stale=stale)

    raced = {p: o for p, o in starts.items() if o != 20}  # read-before-claim race: see check_continuation
    # Server-side ms after the joiner registered: when each old owner committed (offset mtime) and
    # when the joiner claimed (owner ctime). 8 came from b-py (ours), 9 from d-scala.
    t0 = zk.exists(znodes.member_path(g, f"{g}_{joiner}")).ctime
    handover_ms = {
        p: {
            "committed": zk.exists(znodes.offset_path(g, topic, p)).mtime - t0,
            "claimed": zk.exists(znodes.owner_path(g, topic, p)).ctime - t0,
        }
        for p in sorted(moved)
    }
    result = {
        "converged_s": round(converged_s, 3),
        "rebalance_attempts": attempts.counts(),
        "stale_offset_reads": raced,
        "handover_ms": handover_ms,
    }
    record({"event": f"join of a {kind} member", **result})
    with capsys.disabled():
        print(
            f"\n[interop] a {kind} member joined a range group (a-scala, b-py, d-scala): owners converged "
            f"{converged_s:.2f}s after its member node appeared (rebalance attempts: "
            f"{result['rebalance_attempts']}; ms after it registered, per partition: {handover_ms}; "
            f"stale offset reads: {raced or 'none'})"
        )


@pytest.mark.parametrize("victim", ["scala", "zkconsumer"])
def test_killed_member_is_replaced_after_its_session_expires(
    mixed, zk, topic_factory, produce, capsys, victim: str
) -> None:
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
    record(
        {
            "event": f"kill -9 of a {victim} member",
            "converged_s": round(converged_s, 3),
            "redelivered": len(uncommitted),
        }
    )
    with capsys.disabled():
        print(
            f"\n[interop] kill -9 of a {victim} member (session 6 s): the {survivor} member owned its "
            f"partitions {converged_s:.2f}s later; {len(uncommitted)} uncommitted messages re-delivered"
        )
