"""Claims on the in-memory ZooKeeper: a claimer blocked by another member's owner nodes is woken
when they are deleted, not after a fixed back-off; an incremental member takes the free partitions
of its share at once; a claim larger than one transaction may be is split, and an all-or-nothing
claim whose later transaction fails rolls the earlier ones back."""

from __future__ import annotations

from collections.abc import Callable

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, owner_nodes
from harness.zkmodel import Fault, FaultKind, ZkModel
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk


def _owner(client, group: str, topic: str, partition: int) -> str:  # type: ignore[no-untyped-def]
    path = znodes.owner_path(group, topic, partition)
    client.ensure_path(znodes.owners_path(group, topic))
    client.create(path, znodes.encode_owner(f"{group}_other-0"), ephemeral=True)
    return path


def _world(transaction_max_bytes: int = 1 << 19) -> tuple[ZkModel, object, GroupZk]:
    """A model, another member's started client, and our registered GroupZk."""
    model = ZkModel()
    other = model.client("other")
    other.start()
    return model, other, _claimer(model, transaction_max_bytes)


def test_wakes_when_the_last_blocking_owner_node_is_deleted() -> None:
    model, other, group = _world()
    paths = [_owner(other, "g", "t", p) for p in (0, 1)]
    woken: list[bool] = []
    assert group.watch_until_free([("t", 0), ("t", 1)], lambda: woken.append(True)) is False
    other.delete(paths[0])
    model.deliver()
    assert woken == []  # t-1 is still held
    other.delete(paths[1])
    model.deliver()
    assert woken == [True]


def test_already_free_and_session_end() -> None:
    model, other, group = _world()
    assert group.watch_until_free([("t", 0)], lambda: None) is True  # nothing in the way
    _owner(other, "g", "t", 0)
    woken: list[bool] = []
    assert group.watch_until_free([("t", 0)], lambda: woken.append(True)) is False
    model.expire(other)  # a crashed owner: its node goes with its session
    model.deliver()
    assert woken == [True]


def test_any_free_wakes_at_the_first_deletion() -> None:
    model, other, group = _world()
    paths = [_owner(other, "g", "t", p) for p in (0, 1)]
    woken: list[bool] = []
    assert group.watch_until_free([("t", 0), ("t", 1)], lambda: woken.append(True), any_free=True) is False
    other.delete(paths[1])
    model.deliver()
    assert woken == [True]
    assert group.watch_until_free([("t", 0), ("t", 1)], lambda: None, any_free=True) is True  # t-1 is gone


def _claimer(model: ZkModel, transaction_max_bytes: int = 1 << 19) -> GroupZk:
    me = model.client("me")
    me.start()
    group = GroupZk(me, "g", "g_me", timeout_s=0.0, transaction_max_bytes=transaction_max_bytes)
    group.register(b"{}")
    return group


def test_all_or_nothing_claim_creates_nothing_while_one_node_is_held() -> None:
    model, other, group = _world()
    _owner(other, "g", "t", 1)
    share = {("t", 0): "g_me-0", ("t", 1): "g_me-0", ("t", 2): "g_me-0"}
    assert group.claim(share) == [("t", 1)]
    assert group.not_ours(share) == [("t", 0), ("t", 1), ("t", 2)]


def test_partial_claim_takes_the_free_nodes_and_reports_the_held_ones() -> None:
    model, other, group = _world()
    _owner(other, "g", "t", 1)
    share = {("t", 0): "g_me-0", ("t", 1): "g_me-0", ("t", 2): "g_me-0"}
    assert group.claim(share, partial=True) == [("t", 1)]
    assert group.not_ours(share) == [("t", 1)]
    assert group.claim(share, partial=True) == [("t", 1)]  # again: ours stay ours, nothing rewritten
    model.expire(other)
    model.deliver()
    assert group.claim(share, partial=True) == []
    assert group.not_ours(share) == []


def test_an_incremental_member_fetches_the_free_part_of_its_share_while_a_neighbour_still_holds_the_rest() -> None:
    s = Schedule(0, Options(members=0, partitions=6))
    m1 = s.add_member()  # two streams a member
    for _ in range(3):
        s.model.advance(250)
        m1.rebalance()
    assert len(owner_nodes(s.model, GROUP, TOPIC)) == 6
    m2 = s.add_member()  # range over m1-0, m1-1, m2-0: m2 gets 4-5
    # m1 has let go of partition 5 only (its rebalance is still to come), then m2 rebalances first.
    observer = s.model.client("observer")
    observer.start()
    observer.delete(znodes.owner_path(GROUP, TOPIC, 5))
    m2.rebalance()
    owners = owner_nodes(s.model, GROUP, TOPIC)
    assert owners[5][0].startswith(m2.consumer_id) and owners[4][0].startswith(m1.consumer_id)
    assert m2.assignment.owned().keys() == {(TOPIC, 5)} and m2.fetcher.assigned() == {(TOPIC, 5)}
    s.model.deliver()  # m1 hears of m2's registration
    m1.rebalance()  # releases 4 (and finds 5 no longer its own)
    s.model.deliver()
    m2.rebalance()
    assert {p: thread.rsplit("-", 1)[0] for p, (thread, _) in owner_nodes(s.model, GROUP, TOPIC).items()} == {
        **{p: m1.consumer_id for p in range(4)},
        4: m2.consumer_id,
        5: m2.consumer_id,
    }
    assert m2.assignment.owned().keys() == {(TOPIC, 4), (TOPIC, 5)}


def _count_transactions(model: ZkModel) -> list[str]:
    seen: list[str] = []
    model.set_fault_hook(lambda client, op, path: seen.append(path) if op == "multi" else None)
    return seen


def test_a_claim_over_the_transaction_budget_is_split() -> None:
    model, _other, group = _world(600)  # two or three creates a transaction
    transactions = _count_transactions(model)
    share = {("t", p): "g_me-0" for p in range(12)}
    assert group.claim(share) == []
    assert group.not_ours(share) == [] and len(transactions) >= 4


def _created_after_our_read(group: GroupZk, key: tuple[str, int]) -> None:
    """Make the claim's read miss the node another member holds: it was created right after."""
    read = group.owner_nodes._read_owner_nodes
    calls = iter(range(1 << 30))

    def first_read_misses_it(keys):  # type: ignore[no-untyped-def]
        found = read(keys)
        return {**found, key: None} if next(calls) == 0 and key in found else found

    group.owner_nodes._read_owner_nodes = first_read_misses_it  # type: ignore[method-assign]


def test_an_all_or_nothing_claim_rolls_back_its_earlier_transactions_when_a_later_one_fails() -> None:
    model, other, group = _world(600)
    _owner(other, "g", "t", 10)
    _created_after_our_read(group, ("t", 10))
    share = {("t", p): "g_me-0" for p in range(12)}
    assert ("t", 10) in group.claim(share)
    assert group.not_ours(share) == sorted(share)  # nothing of ours is left


def test_a_partial_claim_keeps_the_transactions_that_succeeded() -> None:
    model, other, group = _world(600)
    _owner(other, "g", "t", 10)
    _created_after_our_read(group, ("t", 10))
    share = {("t", p): "g_me-0" for p in range(12)}
    blocked = group.claim(share, partial=True)
    assert ("t", 10) in blocked and len(blocked) < 4  # only the failed transaction's partitions
    assert group.not_ours(share) == blocked


def _three_members_then_one_leaves() -> tuple[Schedule, SimMember, SimMember, Callable[[], dict[int, str]]]:
    """m1 (2 streams), m2 (1), m3 (2) settled over 6 partitions, then m1 leaves cleanly. Range over
    m2-0, m3-0, m3-1 then gives m2-0 partitions 0-1 (free: the leaver's) and has it hand 3 to m3-0."""
    s = Schedule(0, Options(members=0, partitions=6))
    m1, m2, m3 = s.add_member(), s.add_member(), s.add_member()
    assert [len(m.thread_ids()) for m in (m1, m2, m3)] == [2, 1, 2]  # the seed's stream counts

    def owners() -> dict[int, str]:
        return {p: thread for p, (thread, _) in owner_nodes(s.model, GROUP, TOPIC).items()}

    settled = dict(enumerate(["g_m1-0", "g_m1-0", "g_m1-1", "g_m2-0", "g_m3-0", "g_m3-1"]))
    for _ in range(20):
        s.model.advance(250)
        s.model.deliver()
        for m in (m1, m2, m3):
            m.rebalance()
        if owners() == settled:
            break
    assert owners() == settled
    m1.leave()
    s.model.deliver()
    return s, m2, m3, owners


def _fail(s: Schedule, op: str, path: str) -> None:
    lost = Fault(FaultKind.FAIL_BEFORE, drop_link=False)
    ops = (op, f"multi-{op}")  # a release deletes in a transaction: "multi-delete", path its first op's
    s.model.set_fault_hook(lambda _client, o, p: lost if o in ops and p.endswith(path) else None)


def _settle(s: Schedule, *members: SimMember) -> None:
    s.model.set_fault_hook(None)
    for _ in range(20):
        s.model.advance(250)
        s.model.deliver()
        for m in members:
            m.rebalance()


SETTLED_AFTER_THE_LEAVE = dict(enumerate(["g_m2-0", "g_m2-0", "g_m3-0", "g_m3-0", "g_m3-1", "g_m3-1"]))


def test_one_attempt_releases_then_claims_and_starts_once() -> None:
    # One path: release what moves away, then claim and start what is free; the listener hears
    # each once, release first (Scala's contract: a release is followed by a start).
    s, m2, m3, owners = _three_members_then_one_leaves()
    events: list[str] = []
    m2.rebalancer.listener = RecordingListener(events)
    m2.rebalance()
    assert events == ["release", "start"]
    assert {p: owners().get(p) for p in (0, 1, 3)} == {0: "g_m2-0", 1: "g_m2-0", 3: None}
    assert m2.fetcher.assigned() == {(TOPIC, 0), (TOPIC, 1)}
    _settle(s, m2, m3)
    assert owners() == SETTLED_AFTER_THE_LEAVE


def test_a_failed_release_fails_the_attempt_and_the_next_one_finishes_it() -> None:
    s, m2, m3, owners = _three_members_then_one_leaves()
    events: list[str] = []
    m2.rebalancer.listener = RecordingListener(events)
    _fail(s, "delete", znodes.owner_path(GROUP, TOPIC, 3))  # m2's hand-over of 3 fails at its delete
    m2.rebalance()
    assert owners().get(3) == "g_m2-0" and (TOPIC, 3) in m2.assignment.releasing()  # kept pending
    assert not m2.assignment.owned() and m2.fetcher.assigned() <= {(TOPIC, 3)}  # nothing claimed before it is done
    _settle(s, m2, m3)
    assert owners() == SETTLED_AFTER_THE_LEAVE
    assert "release" in events and events[-1] == "start"
    assert all(b == "start" for a, b in zip(events, events[1:]) if a == "release")


def test_a_start_that_fails_leaves_its_nodes_pending_deletion_not_forgotten() -> None:
    s, m2, m3, owners = _three_members_then_one_leaves()
    _fail(s, "get", znodes.offset_path(GROUP, TOPIC, 0))  # m2 cannot read the offsets of what it claimed
    m2.rebalance()
    assert 3 not in owners()  # released first all the same: m3 need not wait for m2's next attempt
    assert {(TOPIC, 0), (TOPIC, 1)} <= set(m2.assignment.releasing())  # claimed, not started: to delete
    _settle(s, m2, m3)
    assert owners() == SETTLED_AFTER_THE_LEAVE


class RecordingListener(ConsumerRebalanceListener):
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def before_releasing_partitions(self, partitions):  # type: ignore[no-untyped-def]
        self.events.append("release")

    def before_starting_fetchers(self, consumer_id, assignment):  # type: ignore[no-untyped-def]
        self.events.append("start")
