"""ZooKeeper requests per member on the in-memory ZooKeeper: an idle watchdog check asks nothing, and
a join costs each member the new registration and the partitions that move, not the whole group."""

from __future__ import annotations

from collections import Counter

from harness.sim_schedule import GROUP, Options, Schedule
from harness.simulation import SimMember
from harness.zkmodel import FakeKazooClient, ZkModel
from zkconsumer.cluster import broker_nodes
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk


def _settle(s: Schedule, n: int = 12) -> None:
    for _ in range(n):
        s.model.advance(250)
        for m in s.live():
            s.model.deliver(m.client)
            m.rebalance()
            m.consume(50)


def _registered(*names: str) -> tuple[ZkModel, list[GroupZk]]:
    """An in-memory ZooKeeper with one registered GroupZk per name (group g, member ids g_<name>)."""
    model = ZkModel()
    groups = []
    for name in names:
        client = model.client(name)
        client.start()
        group = GroupZk(client, "g", f"g_{name}", timeout_s=0.0)
        group.register(b"{}")
        groups.append(group)
    return model, groups


def _me_registered_beside_an_admin() -> tuple[ZkModel, FakeKazooClient, FakeKazooClient, GroupZk]:
    """An in-memory ZooKeeper, an admin client, and member g_me registered in GROUP by its own client."""
    model = ZkModel()
    admin, me = model.client("admin"), model.client("me")
    admin.start()
    me.start()
    group = GroupZk(me, GROUP, f"{GROUP}_me", timeout_s=0.0)
    group.ensure_paths()
    group.register(b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1"}')
    return model, admin, me, group


def _requests(s: Schedule, member: SimMember, since: int) -> Counter[str]:
    """Requests `member` sent since call number `since`, by kind and folder."""
    ids = znodes.ids_path(GROUP)
    kinds: Counter[str] = Counter()
    for call in s.model.calls[since:]:
        if call.client == member.name:
            kinds[call.op + (" ids" if call.path.startswith(ids) else "")] += 1
    return kinds


def test_an_idle_watchdog_check_sends_no_request() -> None:
    s = Schedule(0, Options(members=0, partitions=16))
    members = [s.add_member() for _ in range(4)]
    _settle(s)
    for m in members:
        m.check_health()  # the first check reads the owner nodes and arms their watches
    s.model.deliver()
    since = len(s.model.calls)
    for _ in range(3):
        for m in members:
            assert m.rebalancer.health_problems() == []
    assert [c for c in s.model.calls[since:]] == []


def test_a_join_reads_the_new_registration_only() -> None:
    s = Schedule(0, Options(members=0, partitions=16))
    members = [s.add_member() for _ in range(6)]
    _settle(s)
    since = len(s.model.calls)
    s.add_member()
    _settle(s)
    for m in members:
        asked = _requests(s, m, since)
        assert asked["get ids"] == 1, (m.name, asked)  # six others were cached
        assert asked["get_children ids"] >= 1


def test_a_rebalance_that_moves_nothing_reads_no_owner_node() -> None:
    s = Schedule(0, Options(members=0, partitions=16))
    members = [s.add_member() for _ in range(4)]
    _settle(s)
    for m in members:
        m.trigger("warm up")  # the first reconcile reads the topic's owner nodes and watches them
    _settle(s, 2)
    since, before = len(s.model.calls), [sorted(m.assignment.owned()) for m in members]
    assert sum(map(len, before)) == 16
    for m in members:
        m.trigger("nothing changed")
    _settle(s, 2)
    owners = znodes.owners_path(GROUP, "t")
    touched = [c for c in s.model.calls[since:] if c.path.startswith(owners)]
    assert touched == []
    assert [sorted(m.assignment.owned()) for m in members] == before


def test_a_topic_node_is_decoded_once_per_version(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import json

    from harness.zkmodel import ZkModel
    from zkconsumer.cluster import metadata

    model = ZkModel()
    client = model.client("me")
    client.start()
    client.create(
        znodes.topic_path("t"), json.dumps({"version": 1, "partitions": {"0": [1], "1": [1]}}).encode(), makepath=True
    )
    decoded: list[bytes] = []
    real = broker_nodes.decode_topic_partitions
    monkeypatch.setattr(
        metadata.broker_nodes, "decode_topic_partitions", lambda data, path: decoded.append(data) or real(data, path)
    )
    cluster = metadata.ClusterMetadata(client)
    assert cluster.topics(["t"])["t"][0] == [0, 1]
    assert cluster.topics(["t"])["t"][0] == [0, 1]
    assert len(decoded) == 1
    client.set(
        znodes.topic_path("t"), json.dumps({"version": 1, "partitions": {"0": [1], "1": [1], "2": [1]}}).encode()
    )
    assert cluster.topics(["t"])["t"][0] == [0, 1, 2]
    assert len(decoded) == 2


def test_a_registration_is_decoded_once_per_content(monkeypatch) -> None:  # type: ignore[no-untyped-def]

    model, admin, me, group = _me_registered_beside_an_admin()
    other = znodes.member_path(GROUP, f"{GROUP}_other")
    admin.create(other, b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"2"}')
    admin.create(znodes.member_path(GROUP, f"{GROUP}_bad"), b"not json")
    model.deliver()
    decoded: list[bytes] = []
    real = znodes.Registration.decode
    monkeypatch.setattr(znodes.Registration, "decode", staticmethod(lambda d, p: decoded.append(d) or real(d, p)))
    for _ in range(3):
        good, bad = group.read_registrations()
        assert sorted(good) == [f"{GROUP}_me", f"{GROUP}_other"] and list(bad) == [f"{GROUP}_bad"]
    assert len(decoded) == 3  # each member's once, the undecodable one's included
    admin.set(other, b'{"version":1,"subscription":{"t":2},"pattern":"static","timestamp":"3"}')
    model.deliver()
    assert group.read_registrations()[0][f"{GROUP}_other"].subscription == (("t", 2),)
    assert len(decoded) == 4


def test_a_reconnect_does_not_trust_caches_whose_watches_died_with_the_link() -> None:
    """kazoo tells each watch it is gone by a queued NONE event, but runs state listeners at once:
    a read right after the reconnect, before those events ran, must not serve the old list."""

    model, admin, me, group = _me_registered_beside_an_admin()
    model.deliver()
    assert sorted(group.read_registrations()[0]) == [f"{GROUP}_me"]
    model.disconnect(me)
    assert model.deliver_listeners(me) == 1  # the SUSPENDED listener; the NONE events stay queued
    assert model.pending_events(me) > 0
    admin.create(
        znodes.member_path(GROUP, f"{GROUP}_new"),
        b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"2"}',
    )
    model.reconnect(me)
    assert sorted(group.read_registrations()[0]) == [f"{GROUP}_me", f"{GROUP}_new"]


def test_our_own_registration_is_listed_even_before_its_watch_event_ran() -> None:
    from harness.zkmodel import ZkModel
    from zkconsumer.zookeeper.group import GroupZk

    model = ZkModel()
    me = model.client("me")
    me.start()
    group = GroupZk(me, GROUP, f"{GROUP}_me", timeout_s=0.0)
    group.ensure_paths()
    assert group.read_registrations()[0] == {}
    group.register(b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1"}')
    assert sorted(group.read_registrations()[0]) == [f"{GROUP}_me"]  # its child event not delivered yet


def test_one_shot_owner_reads_set_no_watch_and_skip_bad_nodes(caplog) -> None:  # type: ignore[no-untyped-def]
    """GroupZk.owners (a Spark plan's read) reads afresh each time; bad children are skipped."""
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    _settle(s, 4)
    folder = znodes.owners_path(GROUP, "t")
    s.admin.create(f"{folder}/not-a-number", b"x")
    since = len(s.model.calls)
    assert sorted(m1.group.owners("t")) == [0, 1] and sorted(m1.group.owners("t")) == [0, 1]
    assert len([c for c in s.model.calls[since:] if c.client == m1.name]) == 2 * 4  # list + 3 children, twice
    assert "not-a-number" in caplog.text


def test_a_partial_claim_that_loses_a_race_rereads_each_node_once() -> None:
    """The claim's transaction fails on a held node; the read that follows finds the rest free, but
    one is created by someone else before the second transaction: finding which of the chunk's
    nodes are ours then costs one read per node, not one per node per node."""
    model, (me, other) = _registered("me", "other")
    wanted = {("t", p): "g_me-0" for p in range(40)}
    assert other.claim({("t", 0): "g_other-0"}) == []  # the first transaction fails on it
    read = me.owner_nodes._read_nodes_to_claim

    def then_taken(owners):  # type: ignore[no-untyped-def]
        found = read(owners)
        if other.not_ours({("t", 7): "g_other-0"}):
            assert other.claim({("t", 7): "g_other-0"}) == []  # right after the read, someone claims 7
        return found

    me.owner_nodes._read_nodes_to_claim = then_taken  # type: ignore[method-assign]
    since = len(model.calls)
    assert me.claim(wanted, partial=True) == sorted(wanted)  # the failed chunk waits for the next attempt
    owners = znodes.owners_path("g", "t")
    mine = [c for c in model.calls[since:] if c.client == "me"]
    reads = [c for c in mine if c.op == "get" and c.path.startswith(owners)]
    assert len(reads) == len(wanted) + len(wanted) - 1  # the read after the failure, the 39 it found free again
    assert [c.op for c in mine if c.op.startswith("multi")] == ["multi", "multi"]
    me.owner_nodes._read_nodes_to_claim = read  # type: ignore[method-assign]
    assert me.claim(wanted, partial=True) == [("t", 0), ("t", 7)]


def test_a_claim_waiting_for_a_neighbour_reads_nothing_again() -> None:
    """What the neighbour released is created at once; what it still holds is known from the
    watches the first claim armed: the second claim sends one transaction and no read of the held
    nodes, only one of each node it created (arming the watch that says if it stops being ours,
    which the next reconcile then finds armed: that read moved, it was not added)."""
    model, (me, other) = _registered("me", "other")
    keys = [("t", p) for p in range(40)]
    assert other.claim({k: "g_other-0" for k in keys}) == []
    wanted = {k: "g_me-0" for k in keys}
    assert me.claim(wanted, partial=True) == keys
    assert other.release({k: "g_other-0" for k in keys[:5]}) == keys[:5]
    model.deliver()  # the data watches of the five released nodes fire
    since = len(model.calls)
    assert me.claim(wanted, partial=True) == keys[5:]
    mine = [c for c in model.calls[since:] if c.client == "me"]
    assert [c.op for c in mine] == ["multi"] + ["get"] * 5
    assert sorted(c.path for c in mine[1:]) == sorted(znodes.owner_path("g", *k) for k in keys[:5])
    since = len(model.calls)
    assert me.not_ours({k: "g_me-0" for k in keys[:5]}, watched=True) == []  # ours now, and watched
    assert [c for c in model.calls[since:] if c.client == "me"] == []


def test_a_claim_confirms_a_node_that_looks_ours_before_counting_it() -> None:
    """A cached "ours" whose watch has not been delivered yet (the node was released meanwhile)
    must not count as claimed: the claim re-reads it and creates it again."""
    model, (me,) = _registered("me")
    wanted = {("t", 0): "g_me-0"}
    assert me.claim(wanted) == []
    assert me.claim(wanted) == []  # a repeated claim (its answer lost): the node is read, ours, and cached
    assert me.release(wanted) == [("t", 0)]  # its watch fires but is not delivered yet
    assert not model.exists(znodes.owner_path("g", "t", 0))
    assert me.claim(wanted) == []
    assert model.exists(znodes.owner_path("g", "t", 0))  # created again, not taken from the cache


def test_a_watchdog_check_after_a_change_reads_its_own_share_not_the_groups_moves() -> None:
    s = Schedule(0, Options(members=0, partitions=48))
    members = [s.add_member() for _ in range(6)]
    _settle(s)
    for m in members:
        m.check_health()  # arms the watches of what each checks
    s.model.deliver()
    s.add_member()  # range assignment moves most of the 48 partitions
    _settle(s)
    s.model.deliver()
    owners = znodes.owners_path(GROUP, "t")
    designated = min(m.consumer_id for m in members)
    for m in members:
        since, claimed = len(s.model.calls), len(m.assignment.releasing())  # nodes it still accounts for
        assert m.rebalancer.health_problems() == []
        reads = [c for c in s.model.calls[since:] if c.client == m.name and c.path.startswith(owners)]
        share = [
            k for k, thread in m.rebalancer.decider.last_assignment["t"].items() if thread.startswith(m.consumer_id)
        ]
        if m.consumer_id != designated:
            assert len(reads) <= len(share) + claimed, (m.name, len(reads), len(share))  # the group moved ~40


def test_a_release_reads_its_nodes_in_one_pipelined_round_and_deletes_them_in_one_transaction() -> None:
    # A fenced write decides on a fresh read, never on the watch cache: one pipelined round of
    # reads, then one transaction (fenced on our registration) for all the deletes.
    model, (me,) = _registered("me")
    owned = {("t", p): "g_me-0" for p in range(20)}
    assert me.claim(owned) == []
    assert me.not_ours(owned, watched=True) == []  # the reconcile step's read arms a data watch on each
    since = len(model.calls)
    assert me.release(owned) == sorted(owned)
    assert [c.op for c in model.calls[since:] if c.client == "me"] == ["get"] * 20 + ["multi-delete"]
    assert not any(model.exists(znodes.owner_path("g", *k)) for k in owned)


def test_a_release_leaves_another_members_node_alone() -> None:
    """A tool deleted one of our nodes and another member created it again (version 0, like ours):
    the release's fresh read sees it is not ours, and deletes only the others."""
    model, (me, other, tool) = _registered("me", "other", "tool")
    owned = {("t", p): "g_me-0" for p in range(3)}
    assert me.claim(owned) == [] and me.not_ours(owned, watched=True) == []
    tool.client.delete(znodes.owner_path("g", "t", 1))
    assert other.claim({("t", 1): "g_other-0"}) == []
    model.deliver()
    since = len(model.calls)
    assert me.release(owned) == sorted(owned)  # all three are no longer ours
    assert [c.op for c in model.calls[since:] if c.client == "me"] == ["get", "get", "get", "multi-delete"]
    assert other.not_ours({("t", 1): "g_other-0"}) == []  # the other member's node is still there


def test_a_release_whose_transaction_fails_deletes_node_by_node() -> None:
    """One node of the transaction goes between the read and the transaction (a tool deleted it):
    the transaction fails whole, and the fenced deletes one by one confirm the rest and the gone one."""
    model, (me, tool) = _registered("me", "tool")
    owned = {("t", p): "g_me-0" for p in range(3)}
    assert me.claim(owned) == []
    path = znodes.owner_path("g", "t", 2)

    def tool_deletes_first(_client: object, op: str, _path: str) -> None:
        if op == "multi-delete" and model.exists(path):
            tool.client.delete(path)

    model.set_fault_hook(tool_deletes_first)
    since = len(model.calls)
    assert me.release(owned) == sorted(owned)
    mine = [c.op for c in model.calls[since:] if c.client == "me"]
    assert mine == ["get", "get", "get", "multi-delete", "multi-delete", "multi-delete", "multi-delete"]
    assert not any(model.exists(znodes.owner_path("g", *k)) for k in owned)


def test_waiting_for_held_nodes_reuses_the_claims_watches() -> None:
    """The claim's read armed a data watch on each node another member holds; waiting for them
    adds no request, and the wait ends when the holder lets go."""
    model, (me, other) = _registered("me", "other")
    keys = [("t", p) for p in range(4)]
    assert other.claim({k: "g_other-0" for k in keys}) == []
    assert me.claim({k: "g_me-0" for k in keys}, partial=True) == keys
    freed: list[bool] = []
    since = len(model.calls)
    assert not me.watch_until_free(keys, lambda: freed.append(True))
    assert [c for c in model.calls[since:] if c.client == "me"] == []
    assert other.release({k: "g_other-0" for k in keys[:3]}) == keys[:3]
    model.deliver()
    assert freed == []  # one is still held
    assert other.release({keys[3]: "g_other-0"}) == [keys[3]]
    model.deliver()
    assert freed == [True]


def test_a_second_release_of_a_node_we_deleted_leaves_its_new_owner_alone() -> None:
    """Our own delete fires our watch, but the event may not have been delivered when the same
    partition is released again (an orphan, a rolled-back claim): the release must not trust
    the entry it left behind and delete another member's new node (its version is 0 too)."""
    model, (me, other) = _registered("me", "other")
    owned = {("t", 0): "g_me-0"}
    assert me.claim(owned) == [] and me.not_ours(owned, watched=True) == []
    assert me.release(owned) == [("t", 0)]  # its watch fired; the event is not delivered yet
    assert other.claim({("t", 0): "g_other-0"}) == []
    assert me.release(owned) == [("t", 0)]  # not ours: confirmed without a delete
    assert other.not_ours({("t", 0): "g_other-0"}) == []
