"""Regressions (review of issue #42): a doubt arriving while the rebalance lock is held, during the release linger, and a
refused fence seen only by a lease renewal."""

from __future__ import annotations

import threading

from harness.sim_schedule import GROUP, ROUND_MS, TOPIC, Options, Schedule
from harness.simulation import SimMember, owner_nodes
from zkconsumer.coordinator.subscription import StaticSubscription, encode_registration
from zkconsumer.zookeeper import znodes

KEY = (TOPIC, 0)


def _settle(s: Schedule, members: list[SimMember], rounds: int = 8) -> None:
    s.calm_rounds(members, rounds)


def _foreign_claim(s: Schedule, key: tuple[str, int]) -> None:
    """A stale Scala member deletes our node blindly and a Scala claimant creates it in its session."""
    path = znodes.owner_path(GROUP, *key)
    s.admin.delete(path)
    scala = s.model.client(f"scala{key[1]}")
    scala.start()
    scala.create(path, znodes.encode_owner(f"{GROUP}_scala-0"), ephemeral=True)


def test_a_doubt_stops_delivery_at_once_while_a_rebalance_step_holds_the_lock() -> None:
    """Holds (kept): the doubt runs on kazoo's event thread and takes only the Assignment's lock, so a
    rebalance step (or a commit) holding the rebalance lock through slow ZooKeeper calls or a slow
    listener does not delay it. Fails if `Membership.on_doubt` or `Assignment.doubt` ever waits
    for the rebalance lock: the event thread would then stall behind the step."""
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    _settle(s, [m1])
    step_holds, release_step = threading.Event(), threading.Event()

    def step() -> None:
        with m1.rebalancer._lock:
            step_holds.set()
            release_step.wait(10.0)

    holder = threading.Thread(target=step, daemon=True)
    holder.start()
    assert step_holds.wait(5.0)
    _foreign_claim(s, KEY)
    heard = threading.Thread(target=s.model.deliver, args=(m1.client,), daemon=True)  # kazoo's event thread
    heard.start()
    heard.join(2.0)
    stopped = not heard.is_alive()
    release_step.set()
    holder.join(5.0)
    heard.join(5.0)
    info = m1.assignment.get(KEY)
    assert stopped, "the doubt waited for the rebalance lock"
    assert info is not None and not info.active and m1.pending


def test_a_doubt_during_the_release_linger_stops_delivery_and_the_next_run_resolves_it() -> None:
    """Holds (kept): m1 owns 4 partitions; a Scala member joins, so m1 releases its share and lingers
    (holding no lock). During the linger, t-0, which m1 keeps, is deleted blindly and claimed by
    another Scala session: delivery of t-0 stops at once, the attempt finishes its claim step without
    starting t-0 again, and the next run forgets it and waits for it. Fails if the claim step
    (which takes the lock again after the linger) re-activated a doubted partition it kept."""
    s = Schedule(0, Options(members=0, partitions=4))
    m1 = s.add_member()
    _settle(s, [m1])
    assert len(m1.assignment.owned()) == 4
    m1.rebalancer.linger.floor_s = m1.rebalancer.linger.max_s = 0.5
    scala = s.model.client("scala")
    scala.start()
    scala.create(
        znodes.member_path(GROUP, f"{GROUP}_scala"),
        ephemeral=True,
        makepath=True,
        value=encode_registration(StaticSubscription.of({TOPIC: 1}), 1),
    )
    s.model.deliver(m1.client)
    assert m1.pending

    def meddle() -> None:  # the rebalance thread is in the linger (no ZooKeeper call): the model is ours
        _foreign_claim(s, KEY)
        s.model.deliver(m1.client)

    s.log.produce(KEY, 5)
    timer = threading.Timer(0.2, meddle)
    timer.start()
    m1.rebalance()
    timer.join(5.0)
    kept = m1.assignment.get(KEY)
    assert kept is not None and not kept.active, "the kept partition in doubt is deliverable again"
    since = len(s.deliveries)
    m1.consume(50)
    s.check_no_foreign_delivery()
    assert [d for d in s.deliveries[since:] if d.key == KEY] == []
    s.model.advance(ROUND_MS)
    m1.rebalance()  # the run the doubt triggered: t-0 is another session's now
    assert m1.assignment.get(KEY) is None
    assert owner_nodes(s.model, GROUP, TOPIC)[0][0] == f"{GROUP}_scala-0"
    assert not s.result.violations, s.result.violations


def test_with_the_check_renewal_a_fence_deleted_by_hand_in_an_idle_group_is_fenced_again() -> None:
    """Failed on 9a44e14 (finding R1; Membership(renewal="check"), the measured alternative, not the
    default and not reachable from the configuration). The renewal is a transaction of one check on
    our fence node; a fence node deleted by hand refuses it, silently: `renew_lease` neither raises
    nor reports the refusal (OwnershipSignals.refused), so no rebalance re-fences. The lease runs
    out, delivery stops, and in a group with nothing new to commit no other write is ever refused:
    the member never delivers again. The default renewal (sync + exists of the member node) does not
    read the fence and keeps delivering; the next refused commit re-fences (test_ownership_doubt)."""
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    m1.membership.lease.renewal = "check"
    _settle(s, [m1])
    m1.commit()  # every position is committed: an idle group has nothing more to write
    fence = m1.group.fence
    assert fence is not None
    s.admin.delete(fence.path)  # by hand, or a tool cleaning /consumers/<g>/zkconsumer
    _settle(s, [m1], 24)  # 6 s: longer than the lease
    m1.commit()  # auto-commit: nothing consumed since the last commit, so nothing is written
    s.log.produce(KEY, 5)
    since = len(s.deliveries)
    _settle(s, [m1], 24)
    assert [d.offset for d in s.deliveries[since:] if d.key == KEY] == [0, 1, 2, 3, 4], (
        f"idle member with a refused check renewal: gate usable={m1.streams.gate.usable()}, "
        f"pending={m1.pending}, fence there={s.model.exists(m1.group.fence.path) if m1.group.fence else None}"
    )


def test_a_reconnect_rebalance_that_finds_no_brokers_still_rearms_the_owner_node_watches() -> None:
    """Failed on 9a44e14 (finding W1). The link drops and comes back in the same session: kazoo dropped
    every watch, and the reconnect's rebalance is what reads our owner nodes again and re-arms their
    watches (docs/design.md, "Fencing limits"). If /brokers/ids is empty at that moment (every
    broker's ZooKeeper registration gone, e.g. their sessions expired in the same ZooKeeper trouble,
    while librdkafka still fetches from them), `_attempt` returns done (waiting for brokers) before
    the reconcile step: the run counts as a success, the gate is open, and no watch is armed on our
    owner nodes until a broker registers again. The simulation's hearing rule
    (SimMember.hears_of_owner_nodes: a successful rebalance since the link dropped) counts this
    member as hearing; a blind delete and a foreign claim meanwhile go unheard."""
    s = Schedule(0, Options(members=0, partitions=2))
    m1 = s.add_member()
    _settle(s, [m1])
    s.admin.delete(znodes.broker_path(1))  # its registration goes; the broker itself still serves
    s.model.deliver(m1.client)
    s.model.disconnect(m1.client)
    s.model.deliver(m1.client)
    s.model.reconnect(m1.client)  # same session: kazoo dropped the watches, the reconnect rebalances
    s.model.deliver(m1.client)
    assert m1.pending
    m1.rebalance()
    assert m1.hears_of_owner_nodes(), "the harness counts the member as hearing of its owner nodes"
    _foreign_claim(s, KEY)
    s.model.deliver(m1.client)
    info = m1.assignment.get(KEY)
    assert info is not None
    assert not info.active or m1.pending, "t-0 is another session's now, and m1 still delivers it, unaware"
