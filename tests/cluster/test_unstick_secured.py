"""`groups rebalance` on secured groups (ZooKeeper digest ACLs): every member rebalances; where ids/ is locked, only with the group's credentials, and without them it refuses naming the node and writes nothing.

Secured members (zookeeper.set.acl; Scala 1.1.1's with a JAAS Client section, tests/interop/
test_secured_group.py) give owner and offset nodes creator ALL + world READ and leave the group
node and ids/ open: the nudge, a child of ids/, then needs no credentials. An operator may lock
ids/ as well (creator ALL + world READ, as here); then the nudge needs the identity that created it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl

from harness.members import FAST, owner_table, wait_for_balanced
from zkconsumer import ConsumerConnector
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]

USER, PASSWORD = "ops", "s3cret"
DIGEST = f"{USER}:{PASSWORD}"
# Creator ALL, world READ: the ACL a secured member (zookeeper.set.acl) gives the nodes it creates.
LOCKED = [make_digest_acl(USER, PASSWORD, all=True), make_acl("world", "anyone", read=True)]
SECURED = {("digest:ops", 31), ("world:anyone", 1)}
OPEN = {("world:anyone", 31)}
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


@contextmanager
def secured_members(cluster, zk, group: str, topic: str) -> Iterator[dict[str, ConsumerConnector]]:  # type: ignore[no-untyped-def]
    """Two zkconsumer members logged in as digest ops with zookeeper.set.acl, balanced over the topic's 4
    partitions and done with their join rebalances; their owner nodes carry the secured ACL."""
    settings = {
        "zookeeper.connect": cluster.zookeeper_connect,
        "group.id": group,
        "zkconsumer.zookeeper.digest": DIGEST,
        "zookeeper.set.acl": True,  # owner and offset nodes: creator ALL, world READ
        **FAST,
    }
    with ExitStack() as stack:
        conns = {name: stack.enter_context(ConsumerConnector({**settings, "consumer.id": name})) for name in MEMBERS}
        for conn in conns.values():
            conn.create_message_streams({topic: 1})
        wait_for_balanced(zk, group, [topic], members=len(MEMBERS))
        for partition in range(4):
            assert acl_of(zk, znodes.owner_path(group, topic, partition)) == SECURED
        time.sleep(1.0)  # the members' join rebalances are over (owners balanced): count from here
        yield conns


def nudged(result, zk, group: str, facts, conns, before) -> None:  # type: ignore[no-untyped-def]
    """The command nudged ids/ once and every member rebalanced, nobody re-registering."""
    assert result.exit_code == 0, result.output
    assert f"nudged /consumers/{group}/ids (created and deleted {group}_zkconsumer-rebalance-" in result.stdout
    assert "every partition has an owner" in result.stdout
    after = {name: rebalances(conn) for name, conn in conns.items()}
    assert all(after[name] > before[name] for name in MEMBERS), (before, after)
    cversion, pzxid, sessions = ids_facts(zk, group)
    assert (cversion, sessions) == (facts[0] + 2, facts[2]) and pzxid > facts[1]  # created and deleted, once


@pytest.fixture
def admin(cluster, group_id: str) -> Iterator[KazooClient]:  # type: ignore[no-untyped-def]
    """A client logged in as digest ops; it removes the group after the test (its offset nodes are ops's)."""
    client = cluster.zk_client(auth_data=[("digest", DIGEST)])
    try:
        yield client
    finally:
        if client.exists(znodes.group_path(group_id)):
            client.delete(znodes.group_path(group_id), recursive=True)
        client.stop()
        client.close()


@pytest.fixture
def locked_group(admin: KazooClient, group_id: str) -> str:
    """/consumers/<group> and its ids folder writable by digest ops only (world may read)."""
    admin.ensure_path(znodes.CONSUMERS)
    admin.create(znodes.group_path(group_id), acl=LOCKED)
    admin.create(znodes.ids_path(group_id), acl=LOCKED)
    return group_id


def test_a_secured_group_with_open_ids_is_nudged_without_credentials(  # type: ignore[no-untyped-def]
    cluster, zk, run, topic_factory, admin, group_id: str
) -> None:
    g, topic = group_id, topic_factory(partitions=4)
    with secured_members(cluster, zk, g, topic) as conns:
        assert acl_of(zk, znodes.ids_path(g)) == OPEN and acl_of(zk, znodes.group_path(g)) == OPEN
        owners = owner_table(zk, g, [topic])
        before, facts = {name: rebalances(conn) for name, conn in conns.items()}, ids_facts(zk, g)
        done = run("groups", "rebalance", "--group", g, "--execute", "--timeout", "30")
        nudged(done, zk, g, facts, conns, before)
        assert owner_table(zk, g, [topic]) == owners


def test_a_locked_ids_folder_needs_the_groups_credentials(  # type: ignore[no-untyped-def]
    cluster, zk, run, topic_factory, locked_group: str
) -> None:
    g, topic = locked_group, topic_factory(partitions=4)
    with secured_members(cluster, zk, g, topic) as conns:
        assert acl_of(zk, znodes.ids_path(g)) == SECURED
        owners = owner_table(zk, g, [topic])
        before, facts = {name: rebalances(conn) for name, conn in conns.items()}, ids_facts(zk, g)

        # No credentials: the plan is readable (world READ), the nudge is not writable.
        refused = run("groups", "rebalance", "--group", g, "--execute")
        assert refused.exit_code == 1, refused.output
        assert f"Group {g}: 2 members, 4 partitions of 1 topics, 0 without an owner" in refused.stdout
        assert refused.stderr.startswith(
            f"zkconsumer: error: ZooKeeper refused the nudge of /consumers/{g}/ids (/consumers/{g}/ids/"
            f"{g}_zkconsumer-rebalance-"
        ), refused.stderr
        assert (
            f"to this command (an unauthenticated client) at {cluster.zookeeper_connect}: NoAuth (the ACL of the node"
            in refused.stderr
        )
        assert "pass --zk-digest user:password (or --zk-jaas FILE, SASL)" in refused.stderr
        assert refused.stderr.count("\n") == 1, refused.stderr  # one line: no traceback
        time.sleep(1.0)  # a nudge, had one been written, would have made the members rebalance by now
        assert ids_facts(zk, g) == facts  # nothing written under ids
        assert {name: rebalances(conn) for name, conn in conns.items()} == before
        assert owner_table(zk, g, [topic]) == owners

        # The group's credentials: every member rebalances, nobody re-registers, every partition owned.
        began = time.monotonic()
        done = run("groups", "rebalance", "--group", g, "--zk-digest", DIGEST, "--execute", "--timeout", "30")
        command_s = time.monotonic() - began
        nudged(done, zk, g, facts, conns, before)
        assert owner_table(zk, g, [topic]) == owners  # the same members, the same range assignment
        print(f"\nsecured un-stick: command {command_s:.2f} s\n{refused.output}{done.output}")
