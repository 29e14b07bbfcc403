"""Regressions for the membership-core review findings 1-11, each aimed at the exact call that broke it."""

from __future__ import annotations

import threading
import time

import pytest
from kazoo.protocol.states import KazooState

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, committed, owner_nodes
from harness.zkmodel import FAIL_AFTER, FAIL_BEFORE
from zkconsumer.config.timing import LEASE_FRACTION
from zkconsumer.consumer.chunks import StreamQueue
from zkconsumer.consumer.delivery import ConsumerIterator, DeliveryGate
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.errors import CommitFailed, ZooKeeperUnavailable
from zkconsumer.zookeeper import znodes


def world(partitions: int = 4) -> Schedule:
    return Schedule(0, Options(members=0, partitions=partitions))


def rounds(s: Schedule, n: int = 20, *, watchdog: bool = False, only: list[SimMember] | None = None) -> None:
    for i in range(n):
        s.model.advance(250)
        for m in only or s.live():
            s.model.deliver(m.client)
            m.renew_lease()
            m.rebalance()
            m.consume(50)
            if watchdog and i % 4 == 3:
                m.check_health()


def owners(s: Schedule) -> dict[int, str]:
    return {p: thread for p, (thread, _) in owner_nodes(s.model, GROUP, TOPIC).items()}


def hook_once(s: Schedule, op: str, path_part: str, fault: object, who: str | None = None) -> list[str]:
    """Fault the first `op` request on a path containing `path_part`; "delete" also means a
    transaction of deletes (how a release deletes its owner nodes)."""
    fired: list[str] = []
    ops = ("delete", "multi-delete") if op == "delete" else (op,)

    def hook(client: object, called: str, path: str) -> object:
        if not fired and called in ops and path_part in path and (who is None or client.name == who):
            fired.append(path)
            return fault
        return None

    s.model.set_fault_hook(hook)
    return fired


# ---- finding 1: owner nodes nobody deletes ---------------------------------------------------------


def test_1a_a_release_cut_short_is_finished_later_so_the_successor_can_claim() -> None:
    s = world()
    m1 = s.add_member()
    rounds(s, 4)
    fired = hook_once(s, "delete", "/owners/", FAIL_BEFORE, who=m1.name)
    m2 = s.add_member()  # half of m1's partitions move to m2
    m2.rebalance()  # registers; its claim fails while m1 holds them
    rounds(s, 4, only=[m1])
    assert fired, "the release was never attempted"
    assert m1.assignment.releasing(), "a release cut short must stay pending, not be forgotten"
    s.model.reconnect(m1.client)
    rounds(s, 12)  # no watchdog: the release itself must be retried
    assert owners(s) == s.expected_owners()
    assert set(owners(s).values()) >= {m2.thread_ids()[0]}


def test_1b_a_disconnect_is_not_a_new_session() -> None:
    s = world()
    m1 = s.add_member()
    rounds(s, 4)
    held = m1.assignment.owned()
    s.model.disconnect(m1.client)  # kazoo's client_id is None now
    m1.trigger("test")
    m1.rebalance()  # fails (no connection) but must not forget what it owns
    assert m1.assignment.owned() == held
    s.model.reconnect(m1.client)
    rounds(s, 4)
    assert m1.assignment.owned() == held and m1.group.session == m1.client.client_id[0]


def test_1c_nodes_of_a_claim_whose_answer_was_lost_are_released() -> None:
    s = world()
    m1 = s.add_member()
    fired = hook_once(s, "multi", "/owners/", FAIL_AFTER, who=m1.name)  # created, but m1 never heard so
    rounds(s, 1, only=[m1])
    assert fired
    m2 = s.add_member()  # the next assignment gives m2 half of what m1's lost claim holds
    m2.rebalance()  # registers before m1 retries; its claim fails on m1's nodes
    s.model.reconnect(m1.client)
    rounds(s, 16)
    assert owners(s) == s.expected_owners() and m2.assignment.owned()


def test_1c_the_watchdog_reports_a_node_of_ours_we_do_not_account_for_and_changes_nothing() -> None:
    # Every node an attempt creates is installed, pending deletion, or refused by ZooKeeper, so a
    # node of our session that we do not account for can only be planted behind our back. The
    # member the partition is assigned to reports it (and triggers a rebalance); no watchdog
    # touches an assignment, which stays the rebalance thread's alone.
    s = world()
    m1 = s.add_member()
    rounds(s, 4)
    m2 = s.add_member()
    rounds(s, 8)
    target = next(p for p, t in s.expected_owners().items() if t.startswith(m2.consumer_id))
    path = znodes.owner_path(GROUP, TOPIC, target)
    m2.client.delete(path)
    m1.client.create(path, m1.thread_ids()[0].encode(), ephemeral=True)  # behind m1's back
    before = (m1.assignment.owned(), m1.assignment.releasing())
    s.model.deliver()
    m2.rebalance()  # the run the delete triggered: its claim fails on m1's node, then it backs off
    for _ in range(3):
        s.model.advance(1000)
        s.model.deliver()
        m1.check_health()
        m2.check_health()
        if m2.watchdog.alerts:  # it triggered a rebalance: a check while that is pending reads nothing
            break
    assert (m1.assignment.owned(), m1.assignment.releasing()) == before
    assert m2.watchdog.alerts >= 1
    assert (
        f"{TOPIC}-{target} is held by {m1.thread_ids()[0]} but assigned to {m2.thread_ids()[0]}" in m2.watchdog.problems
    )


# ---- finding 2: an iterator waiting on a lapsed lease after shutdown ---------------------------------


def test_2_an_iterator_waiting_on_a_lapsed_lease_ends_at_shutdown() -> None:
    from zkconsumer.consumer.chunks import Chunk, Message, PartitionTopicInfo
    from zkconsumer.consumer.stream import StreamSet

    streams = StreamSet("g_c", static={"t": 1}, consumer_timeout_ms=-1)
    queue = streams.by_topic["t"][0].queue
    info = PartitionTopicInfo("t", 0, "g_c-0", queue, 0)
    queue.offer(Chunk(info, [Message("t", 0, 0, None, b"")]))
    streams.gate.renew(time.monotonic() - 1)  # a frozen process woke up: the lease ran out
    outcome: list[str] = []
    reader = threading.Thread(target=lambda: outcome.append(repr(list(streams.by_topic["t"][0]))), daemon=True)
    reader.start()
    time.sleep(0.3)  # the iterator holds the message and waits for the gate
    assert reader.is_alive() and not outcome
    info.active = False  # shutdown: every partition stops first (Assignment.begin_release)...
    streams.close()  # ...then the streams end
    reader.join(2.0)
    assert outcome == ["[]"], "the iterator must end, not wait on the lapsed lease forever"


def test_2_the_gate_stays_ended() -> None:
    gate = DeliveryGate()
    gate.end()
    gate.close()
    gate.renew(0.0)
    assert gate.usable()
    assert ConsumerIterator(StreamQueue(1), 0, gate) is not None


# ---- finding 3: commit_offsets() from before_releasing_partitions ------------------------------------


class CommitOnRelease(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.member: SimMember | None = None
        self.seen: list[set[int]] = []

    def before_releasing_partitions(self, partitions):  # type: ignore[no-untyped-def]
        assert self.member is not None
        self.seen.append(set(partitions.get(TOPIC, set())))
        self.member.streams.mark_consumed()
        self.member.rebalancer.commit()


def test_3_a_listener_commit_saves_the_partitions_being_released() -> None:
    s = world()
    m1 = s.add_member()
    m1.rebalancer.config = m1.config.__class__.from_mapping({**m1.config.as_properties(), "auto.commit.enable": False})
    listener = CommitOnRelease()
    listener.member, m1.rebalancer.listener = m1, listener
    rounds(s, 4)
    for p in range(4):
        s.log.produce((TOPIC, p), 5)
    rounds(s, 2)  # m1 consumes all 20 messages, commits nothing (auto-commit off)
    s.add_member()
    rounds(s, 6)
    assert listener.seen and listener.seen[0]
    for p in listener.seen[0]:
        assert committed(s.model, GROUP, (TOPIC, p)) == 5, f"t-{p} moved without its progress"


# ---- finding 4: fencing compares with the live session id ------------------------------------------------


def test_4_commits_are_fenced_by_the_registered_session_not_the_live_client_id(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    s = world()
    m1 = s.add_member()
    rounds(s, 4)
    s.log.produce((TOPIC, 0), 3)
    rounds(s, 2)
    # kazoo's client_id reads None for a moment while it reconnects, with requests still answered.
    monkeypatch.setattr(type(m1.client), "client_id", property(lambda self: None))
    m1.commit()
    assert committed(s.model, GROUP, (TOPIC, 0)) == 3
    assert m1.group.not_ours(m1.assignment.owned()) == []


def test_4_registering_while_disconnected_fails_fast_and_retriably() -> None:
    s = world()
    m1 = s.add_member()
    s.model.disconnect(m1.client)
    began = time.monotonic()
    with pytest.raises(ZooKeeperUnavailable):
        m1.group.register(b"{}", wait_for_stale_s=30.0)
    assert time.monotonic() - began < 1.0


# ---- finding 5: unusable peer registrations ----------------------------------------------------------------


@pytest.mark.parametrize(
    "registration",
    [
        b'{"version":1,"subscription":{"t":0},"pattern":"static","timestamp":"1"}',
        b'{"version":1,"subscription":{"t":-1},"pattern":"static","timestamp":"1"}',
        b'{"version":1,"subscription":{"a/b":1},"pattern":"static","timestamp":"1"}',
        b'{"version":1,"subscription":{"":1},"pattern":"static","timestamp":"1"}',
        b'{"version":1,"subscription":{"[a-z&&[^x]].*":1},"pattern":"white_list","timestamp":"1"}',
        b'{"version":1,"subscription":{"\\\\p{javaLowerCase}+":1},"pattern":"white_list","timestamp":"1"}',
    ],
)
def test_5_the_group_keeps_consuming_beside_an_unusable_peer(registration: bytes) -> None:
    s = world()
    s.admin.create(znodes.member_path(GROUP, f"{GROUP}_bad"), registration, makepath=True)
    m1, m2 = s.add_member(), s.add_member()
    for p in range(4):
        s.log.produce((TOPIC, p), 2)
    rounds(s, 10)
    assert owners(s) == s.expected_owners()
    assert {(d.key, d.offset) for d in s.deliveries} == {((TOPIC, p), o) for p in range(4) for o in range(2)}
    assert m1.rebalancer.decider.peers.count == 1 and m2.rebalancer.decider.peers.count == 1


# ---- finding 7: partitions added between the read and the watch -------------------------------------------


def test_7_partitions_added_right_after_the_topic_read_are_assigned() -> None:
    s = world(partitions=2)
    m1 = s.add_member()
    read = m1.cluster.topics

    def read_then_grow(topics, watch=None):  # type: ignore[no-untyped-def]
        answer = read(topics, watch)
        if s.partitions == 2:
            s.partitions = 4
            s.admin.set(znodes.topic_path(TOPIC), s._topic_data())
        return answer

    m1.cluster.topics = read_then_grow  # type: ignore[method-assign]
    rounds(s, 8)
    assert sorted(owners(s)) == [0, 1, 2, 3]


# ---- finding 8: a commit that cannot be written --------------------------------------------------------------


def test_8_a_deleted_offsets_folder_is_recreated_by_the_next_commit() -> None:
    s = world(partitions=1)
    m1 = s.add_member()
    s.log.produce((TOPIC, 0), 3)
    rounds(s, 4)
    m1.commit()
    assert committed(s.model, GROUP, (TOPIC, 0)) == 3
    folder = znodes.offsets_path(GROUP, TOPIC)
    s.admin.delete(f"{folder}/0")
    s.admin.delete(folder)
    s.log.produce((TOPIC, 0), 2)
    rounds(s, 2)
    m1.commit()
    assert committed(s.model, GROUP, (TOPIC, 0)) == 5


def test_8_a_commit_that_keeps_failing_raises_and_is_counted() -> None:
    s = world(partitions=1)
    m1 = s.add_member()
    s.log.produce((TOPIC, 0), 3)
    rounds(s, 4)
    m1.streams.mark_consumed()
    # Someone rewrites the owner node's data on every attempt: the fenced multi keeps failing.
    path = znodes.owner_path(GROUP, TOPIC, 0)

    def bump(client: object, op: str, called: str) -> None:
        if op == "multi" and client.name == m1.name:
            s.admin.set(path, s.model.data(path))
        return None

    s.model.set_fault_hook(bump)
    with pytest.raises(CommitFailed, match="t-0"):
        m1.rebalancer.commit()
    assert m1.offsets.failures == 1


# ---- finding 9: the lease follows the negotiated session timeout --------------------------------------------


def test_9_the_lease_uses_the_timeout_the_server_granted() -> None:
    s = Schedule(0, Options(members=0, session_timeout_ms=4000))
    m1 = SimMember(
        "big",
        s.model,
        GROUP,
        TOPIC,
        1,
        s.log,
        20000,
        lambda m, d: None,
        on_bug=lambda what, exc: (_ for _ in ()).throw(exc),
    )
    s.members.append(m1)
    rounds(s, 2)
    assert m1.client.negotiated_session_timeout_ms == 4000
    assert m1.membership.lease.session_timeout_s() == 4.0
    assert m1.streams.gate.lease_until <= s.model.now_ms / 1000 + LEASE_FRACTION * 4.0  # from a touch before now


# ---- finding 10: a bug in the rebalance is not retried and takes the member out ----------------------------


class Broken(ConsumerRebalanceListener):
    def before_starting_fetchers(self, consumer_id, assignment):  # type: ignore[no-untyped-def]
        raise KeyError("a bug in the application's listener")


def test_10_a_listener_bug_is_raised_not_retried() -> None:
    s = world()
    bugs: list[str] = []
    m1 = SimMember(
        "m1",
        s.model,
        GROUP,
        TOPIC,
        1,
        s.log,
        4000,
        lambda m, d: None,
        on_bug=lambda what, exc: bugs.append(f"{what}: {exc!r}"),
    )
    m1.rebalancer.listener = Broken()
    s.members.append(m1)
    rounds(s, 1)
    assert bugs and "KeyError" in bugs[0]


def test_10_programming_errors_are_not_retriable() -> None:
    from zkconsumer.errors import is_retriable

    assert not any(is_retriable(e) for e in (RuntimeError("x"), ValueError("x"), KeyError("x")))


# ---- finding 11: garbled nodes break no check ------------------------------------------------------------------


def test_11_garbled_owner_values_and_odd_children_break_no_check(caplog) -> None:  # type: ignore[no-untyped-def]
    s = world(partitions=2)
    m1 = s.add_member()
    rounds(s, 4)
    folder = znodes.owners_path(GROUP, TOPIC)
    s.admin.create(f"{folder}/not-a-number", b"x")
    s.admin.create(znodes.BROKER_IDS + "/garbage", b"{}")
    m1.client.set(f"{folder}/1", b"\xff\xfe")
    found = m1.group.reads.owner_threads([(TOPIC, 0), (TOPIC, 1)])  # the watchdog's read
    assert found[(TOPIC, 1)] is None and found[(TOPIC, 0)] is not None
    assert sorted(m1.group.owners(TOPIC)) == [0]  # the one-shot folder read skips the odd child too
    assert [b.broker_id for b in m1.cluster.brokers()] == [1]
    assert "not-a-number" in caplog.text and "/brokers/ids/garbage" in caplog.text
    problems = m1.rebalancer.health_problems()
    assert any("t-1" in p for p in problems)


def test_suspended_then_reconnected_in_the_same_session_rebalances_to_rearm_watches() -> None:
    s = world()
    m1 = s.add_member()
    rounds(s, 4)
    m1.membership.on_connection_state(KazooState.SUSPENDED)
    m1.membership.on_connection_state(KazooState.CONNECTED)
    assert m1.pending


# ---- found by review after the redesign --------------------------------------------------------------------


def test_a_claim_whose_session_ended_before_install_is_not_delivered() -> None:
    s = world(partitions=2)
    a = s.add_member()
    s.log.produce((TOPIC, 0), 5)
    s.log.produce((TOPIC, 1), 5)
    add = a.fetcher.add

    def add_then_expire(infos):  # type: ignore[no-untyped-def]
        add(infos)
        if s.model.live_sessions().get(a.group.session or 0) == a.name:
            s.model.expire(a.client)  # the session ends while the fetcher starts...
            s.model.deliver()  # ...and kazoo reports LOST, then a new session

    a.fetcher.add = add_then_expire  # type: ignore[method-assign]
    a.rebalance()
    assert a.assignment.owned() == {}, "a claim made in a session that ended must not be installed"
    b = s.add_member()
    for _ in range(5):
        b.rebalance()
        s.model.deliver()
    reconcile = a.rebalancer._reconcile

    def consume_meanwhile() -> None:  # iterator threads run while a re-registered member reads the group
        a.consume(3)
        reconcile()

    a.rebalancer._reconcile = consume_meanwhile  # type: ignore[method-assign]
    a.rebalance()
    s.model.deliver()
    assert s.result.violations == []


def test_records_of_a_failed_start_deliver_nothing() -> None:
    s = world(partitions=2)
    s.rng.choice = lambda seq: seq[0]  # type: ignore[method-assign]  # one stream, one timeout each
    a = s.add_member()
    s.log.produce((TOPIC, 0), 9)
    s.log.produce((TOPIC, 1), 9)
    add, failed = a.fetcher.add, []

    def add_then_time_out(infos):  # type: ignore[no-untyped-def]
        add(infos)  # the fetcher thread ran the command after all...
        a.fetcher.pump()  # ...and routed chunks into the queues...
        if not failed:
            failed.append(True)
            raise TimeoutError("fetcher did not run a command in time")  # ...but the caller gave up

    a.fetcher.add = add_then_time_out  # type: ignore[method-assign]
    for _ in range(2):  # the failed attempt, then a retry that claims again with new records
        a.rebalance()
        s.model.deliver()
    b = s.add_member()
    for _ in range(4):
        a.rebalance()
        b.rebalance()
        s.model.deliver()
    a.consume(20)  # the first records' chunks are still queued: none may be handed out
    assert failed and s.result.violations == []
    assert owners(s) == s.expected_owners()


def test_a_member_registers_again_after_the_whole_group_folder_was_deleted() -> None:
    s = world(partitions=2)
    a = s.add_member()
    rounds(s, 2)
    for path in sorted(
        (p for p in s.model.paths() if p.startswith(f"/consumers/{GROUP}")), key=lambda p: -p.count("/")
    ):
        s.admin.delete(path)  # an operator removes the group while a member runs
    rounds(s, 6)
    assert s.model.exists(a.group.member_path) and owners(s) == s.expected_owners() and not a.pending
