"""Regressions for the core review of issue #34: claims fenced by ZooKeeper, releases decided on fresh reads."""

from __future__ import annotations

from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Schedule
from harness.simulation import SimMember, owner_nodes
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.group import GroupZk
from zkconsumer.zookeeper.watched import WatchedNodes


def _rounds(s: Schedule, seconds: float, members: list[SimMember] | None = None) -> None:
    """Time passes with every live member stepping as in the settle phase, and no watchdog."""
    for _ in range(int(seconds * 1000 / ROUND_MS)):
        s.model.advance(ROUND_MS)
        for m in members or s.live():
            s.model.deliver(m.client)
            m.renew_lease()
            m.rebalance()
            m.consume(50)


def _owners(s: Schedule) -> dict[int, str]:
    return {p: thread for p, (thread, _) in owner_nodes(s.model, GROUP, TOPIC).items()}


class ExpireAndJoin(ConsumerRebalanceListener):
    """A listener that is slow in before_releasing_partitions: meanwhile the member's session expires
    (kazoo reconnects in a new one) and a third member joins."""

    def __init__(self, s: Schedule, member: SimMember) -> None:
        self.s, self.member, self.done = s, member, False

    def before_releasing_partitions(self, partitions):  # type: ignore[no-untyped-def]
        if not self.done:
            self.done = True
            self.s.model.expire(self.member.client)
            self.s.add_member(incremental=False).rebalance()


def test_finding_1_a_claim_sent_in_a_new_session_is_refused_and_the_group_settles_without_a_watchdog() -> None:
    s = Schedule(0, Options(members=0, partitions=4))
    m1, _m2 = s.add_member(incremental=False), s.add_member(incremental=False)
    _rounds(s, 3)
    assert _owners(s) == s.expected_owners()
    old_session = m1.group.session
    m1.rebalancer.listener = ExpireAndJoin(s, m1)
    m1.trigger("test: a change")
    m1.rebalance()  # stop the world: releases everything, the listener stalls, then it claims
    s.check_accounted()  # every owner node belongs to a member that will delete it
    assert not s.result.violations, s.result.violations
    new_nodes = [p for p, (_t, owner) in owner_nodes(s.model, GROUP, TOPIC).items() if owner != old_session]
    assert all(not _owners(s)[p].startswith(m1.consumer_id) for p in new_nodes)  # ZooKeeper refused m1's claim
    _rounds(s, 100)
    assert _owners(s) == s.expected_owners()
    s.check_accounted()
    assert not s.result.violations, s.result.violations


def _registered(s: Schedule, name: str) -> GroupZk:
    client = s.model.client(name)
    client.start()
    group = GroupZk(client, GROUP, f"{GROUP}_{name}", timeout_s=0.0)
    group.ensure_paths()
    group.register(b"{}")
    return group


def test_finding_3_a_release_never_deletes_on_a_stale_watch() -> None:
    # Our node was deleted (a tool) and another member created it again, at version 0 as ours was;
    # the watch event that says so has not reached us yet (kazoo delivers it behind the answers).
    s = Schedule(0, Options(members=0))
    me, other, tool = _registered(s, "me"), _registered(s, "other"), _registered(s, "tool")
    owned = {(TOPIC, 0): f"{GROUP}_me-0"}
    assert me.claim(owned) == [] and me.not_ours(owned, watched=True) == []  # cached as ours, watched
    tool.client.delete(znodes.owner_path(GROUP, TOPIC, 0))
    assert other.claim({(TOPIC, 0): f"{GROUP}_other-0"}) == []
    assert me.release(owned) == [(TOPIC, 0)]  # confirmed: no longer ours
    assert other.not_ours({(TOPIC, 0): f"{GROUP}_other-0"}) == []  # and the other member's node is still there


def test_finding_3_forgetting_the_cache_also_drops_an_answer_already_on_the_wire() -> None:
    # The SUSPENDED/LOST listener forgets every cached read while a read is on the wire: its answer
    # may predate the change that made the listener run, and must not be kept.
    s = Schedule(0, Options(members=0))
    client = s.model.client("me")
    client.start()
    path = "/x"
    client.create(path, b"v1")
    nodes = WatchedNodes(ZkIO(client, 0.0))
    s.model.set_fault_hook(lambda _c, op, p: nodes.invalidate() if op == "get" and p == path else None)
    assert nodes.read([path])[path] is not None
    assert nodes.cached([path]) == {}  # read again next time
    s.model.set_fault_hook(None)
    nodes.read([path])
    assert path in nodes.cached([path])  # an undisturbed read is kept


def test_a_cached_node_whose_watch_fires_during_a_read_is_not_reported_gone() -> None:
    # /a is cached; a read of [/a, /b] asks only for /b, and /a's watch fires meanwhile (kazoo's
    # event thread, played by the hook). Reported as gone, a live member dropped out of the
    # registrations an attempt decided on, and nothing triggered another (a data change fires no
    # child watch on /ids).
    s = Schedule(0, Options(members=0))
    me, other = s.model.client("me"), s.model.client("other")
    me.start()
    other.start()
    me.create("/a", b"v1")
    me.create("/b", b"x")
    nodes = WatchedNodes(ZkIO(me, 0.0))
    nodes.read(["/a"])

    def change_a_while_b_is_read(client: object, op: str, path: str) -> None:
        if client is me and op == "get" and path == "/b":
            other.set("/a", b"v2")
            s.model.deliver(me)

    s.model.set_fault_hook(change_a_while_b_is_read)
    found = nodes.read(["/a", "/b"])
    s.model.set_fault_hook(None)
    assert found["/a"] is not None and found["/a"][0] == b"v1"  # what the read began from
    assert nodes.read(["/a", "/b"])["/a"][0] == b"v2"  # and the next read asks again


def test_the_fence_is_our_session_s_own_even_against_a_process_with_our_consumer_id() -> None:
    # A restarted process with the same consumer.id registers /ids/<id> at version 0 in its own
    # session while the old one's claim is still on its way, sent after its session expired: a
    # check on the registration node would pass on the newcomer's node. The fence node is ours alone.
    s = Schedule(0, Options(members=0, partitions=4))
    zombie = s.add_member()
    replacement: list[SimMember] = []

    def expire_then_replace(client: object, op: str, path: str) -> None:
        if not replacement and client is zombie.client and op == "multi" and "/owners/" in path:
            s.model.expire(zombie.client)  # LOST, then kazoo opens a new session at once
            s.model._clients[f"{zombie.name}-old"] = s.model._clients.pop(zombie.name)  # one client per name
            zombie.client.name = f"{zombie.name}-old"
            fresh = SimMember(
                zombie.name,
                s.model,
                GROUP,
                TOPIC,
                zombie.streams_count,
                s.log,
                4000,
                lambda m, d: s.check_delivery(m, d),
                on_bug=lambda what, exc: s.violation(f"bug in {what}: {exc!r}"),
            )
            s.members.append(fresh)
            fresh.membership.ensure_registered()
            replacement.append(fresh)

    s.model.set_fault_hook(expire_then_replace)
    zombie.rebalance()  # registers, then claims: the hook fires just before the claim goes out
    s.model.set_fault_hook(None)
    assert replacement, "the claim was never sent"
    assert owner_nodes(s.model, GROUP, TOPIC) == {}  # ZooKeeper refused the zombie's claim
    zombie.membership._configured_timeout_s = 0.01  # it waits out the newcomer's node in real time
    _rounds(s, 10)
    nodes = owner_nodes(s.model, GROUP, TOPIC)
    assert {owner for _thread, owner in nodes.values()} == {replacement[0].group.session}
    assert len(nodes) == 4
