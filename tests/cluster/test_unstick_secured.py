"""`groups rebalance` on a secured group (ZooKeeper digest ACLs): with the group's credentials every member rebalances; without them it refuses, naming the node, and writes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from kazoo.security import make_acl, make_digest_acl

from harness.members import FAST, owner_table, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]

USER, PASSWORD = "ops", "s3cret"
DIGEST = f"{USER}:{PASSWORD}"
# Creator ALL, world READ: the ACL a secured member (zookeeper.set.acl) gives the nodes it creates.
LOCKED = [make_digest_acl(USER, PASSWORD, all=True), make_acl("world", "anyone", read=True)]
MEMBERS = ("a", "b")


def rebalances(conn: ConsumerConnector) -> int:
    """The member's successful rebalances, from its own metrics (zkconsumer_rebalances_total)."""
    for family in conn.metrics().collect():
        for sample in family.samples:
            if sample.name == "zkconsumer_rebalances_total" and sample.labels.get("result") == "succeeded":
                return int(sample.value)
    raise AssertionError("the member exposes no zkconsumer_rebalances_total{result=succeeded}")


def acl_of(zk, path: str) -> set[tuple[str, int]]:  # type: ignore[no-untyped-def]
    return {(f"{a.id.scheme}:{a.id.id.split(':')[0]}", a.perms) for a in zk.get_acls(path)[0]}


def ids_facts(zk, group: str) -> tuple[int, int, dict[str, int]]:  # type: ignore[no-untyped-def]
    """The ids folder's cversion and pzxid and each member's session: any write under ids moves one."""
    stat = zk.exists(znodes.ids_path(group))
    sessions = {
        cid: zk.exists(znodes.member_path(group, cid)).ephemeralOwner for cid in zk.get_children(znodes.ids_path(group))
    }
    return stat.cversion, stat.pzxid, sessions


@pytest.fixture
def secured_group(cluster, group_id: str) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """/consumers/<group> and its ids folder writable by digest ops only (world may read), removed after."""
    admin = cluster.zk_client(auth_data=[("digest", DIGEST)])
    try:
        admin.ensure_path(znodes.CONSUMERS)
        admin.create(znodes.group_path(group_id), acl=LOCKED)
        admin.create(znodes.ids_path(group_id), acl=LOCKED)
        yield group_id
    finally:
        admin.delete(znodes.group_path(group_id), recursive=True)
        admin.stop()
        admin.close()


def test_rebalance_of_a_secured_group_needs_its_credentials(  # type: ignore[no-untyped-def]
    cluster, zk, run, topic_factory, secured_group: str
) -> None:
    g, topic = secured_group, topic_factory(partitions=4)
    settings = {
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": g,
        "zkconsumer.zookeeper.digest": DIGEST,
        "zookeeper.set.acl": True,  # owner and offset nodes: creator ALL, world READ
        **FAST,
    }
    with ExitStack() as stack:
        conns = {name: stack.enter_context(ConsumerConnector({**settings, "consumer.id": name})) for name in MEMBERS}
        for conn in conns.values():
            conn.create_message_streams({topic: 1})
        owners = wait_for_balanced(zk, g, [topic], members=len(MEMBERS))
        for partition in range(4):  # the group's nodes are locked as a secured group's are
            assert acl_of(zk, znodes.owner_path(g, topic, partition)) == {("digest:ops", 31), ("world:anyone", 1)}
        assert acl_of(zk, znodes.ids_path(g)) == {("digest:ops", 31), ("world:anyone", 1)}
        time.sleep(1.0)  # the members' join rebalances are over (owners balanced): count from here
        before = {name: rebalances(conn) for name, conn in conns.items()}
        facts = ids_facts(zk, g)

        # No credentials: the plan is readable (world READ), the nudge is not writable.
        refused = run("groups", "rebalance", "--group", g, "--execute")
        assert refused.exit_code == 1, refused.output
        assert f"Group {g}: 2 members, 4 partitions of 1 topics, 0 without an owner" in refused.stdout
        assert refused.stderr.startswith(
            f"zkconsumer: error: ZooKeeper refused the nudge of /consumers/{g}/ids (/consumers/{g}/ids/"
            f"{g}_zkconsumer-rebalance-"
        ), refused.stderr
        assert f"to this command at {cluster.zookeeper_connect}: NoAuth (the ACL of the node" in refused.stderr
        assert refused.stderr.count("\n") == 1, refused.stderr  # one line: no traceback
        time.sleep(1.0)  # a nudge, had one been written, would have made the members rebalance by now
        assert ids_facts(zk, g) == facts  # nothing written under ids
        assert {name: rebalances(conn) for name, conn in conns.items()} == before
        assert owner_table(zk, g, [topic]) == owners

        # The group's credentials: every member rebalances, nobody re-registers, every partition owned.
        began = time.monotonic()
        done = run("groups", "rebalance", "--group", g, "--zk-digest", DIGEST, "--execute", "--timeout", "30")
        command_s = time.monotonic() - began
        assert done.exit_code == 0, done.output
        assert f"nudged /consumers/{g}/ids (created and deleted {g}_zkconsumer-rebalance-" in done.stdout
        assert "every partition has an owner" in done.stdout
        after = {name: rebalances(conn) for name, conn in conns.items()}
        assert all(after[name] > before[name] for name in MEMBERS), (before, after)
        cversion, pzxid, sessions = ids_facts(zk, g)
        assert (cversion, sessions) == (facts[0] + 2, facts[2]) and pzxid > facts[1]  # created and deleted, once
        assert owner_table(zk, g, [topic]) == owners  # the same members, the same range assignment
        print(f"\nsecured un-stick: command {command_s:.2f} s; rebalances {before} -> {after}\n{done.output}")
