"""zkconsumer markers and the release linger on the in-memory ZooKeeper: owner nodes handed to a
member without a marker (maybe a Scala member, which reads offsets before it claims) stay a while
after the commit; hand-overs between zkconsumer members do not wait."""

from __future__ import annotations

import threading
import time

import pytest

from harness.sim_schedule import GROUP, TOPIC, Options, Schedule
from harness.simulation import SimMember, owner_nodes
from harness.zkmodel import FAIL_BEFORE, ZkModel, slow
from zkconsumer.coordinator.linger import ReleaseLinger
from zkconsumer.coordinator.listener import ConsumerRebalanceListener
from zkconsumer.coordinator.subscription import StaticSubscription, encode_registration
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.group import GroupZk

MARKER = znodes.encode_zkconsumer_marker("test")


def _member(model: ZkModel, name: str, *, marked: bool) -> GroupZk:
    client = model.client(name)
    client.start()
    group = GroupZk(client, "g", f"g_{name}", timeout_s=0.0)
    group.register(b"{}")
    if marked:
        assert group.mark_as_zkconsumer(MARKER) is True
    return group


def _timed_wait(linger: ReleaseLinger) -> float:
    began = time.monotonic()
    linger.wait()
    return time.monotonic() - began


def test_marker_lives_with_the_session_and_lists_only_marked_members() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    _member(model, "scala", marked=False)
    assert me.zkconsumer_members() == {"g_me"}
    data, stat = me.client.get(znodes.zkconsumer_member_path("g", "g_me"))
    assert data == b'{"version":1,"library":"zkconsumer","library_version":"test"}'
    assert stat.ephemeralOwner == me.session
    assert me.mark_as_zkconsumer(MARKER) is True  # again in the same session: already there
    model.expire(me.client)
    model.deliver()
    observer = model.client("observer")
    observer.start()
    assert GroupZk(observer, "g", "g_observer", timeout_s=0.0).zkconsumer_members() == set()


def test_a_marker_of_an_older_session_does_not_count_as_ours() -> None:
    model = ZkModel()
    old = model.client("old")
    old.start()
    old.create(znodes.zkconsumer_member_path("g", "g_me"), MARKER, ephemeral=True, makepath=True)
    new = _member(model, "me", marked=False)
    assert new.mark_as_zkconsumer(MARKER) is False


def test_no_marker_folder_means_no_zkconsumer_members() -> None:
    model = ZkModel()
    group = _member(model, "me", marked=False)
    assert group.zkconsumer_members() == set()


def test_hand_over_lingers_only_when_some_member_may_be_a_scala_member() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    _member(model, "peer", marked=True)
    linger = ReleaseLinger(me, 0.3, threading.Event())
    linger.handing_over(["g_peer-0", "g_me-0"])
    assert _timed_wait(linger) < 0.05  # only zkconsumer members in the group
    linger.handing_over(["g_gone-0"])  # a new owner named by our assignment, unmarked (or left)
    assert 0.25 <= _timed_wait(linger) < 1.0
    assert _timed_wait(linger) < 0.05  # once over, over
    _member(model, "scala", marked=False)
    linger.handing_over(["g_peer-0"], decided_with={"g_me", "g_peer", "g_scala"})
    assert _timed_wait(linger) < 0.05  # to a zkconsumer member, decided with the Scala member known
    linger.handing_over(["g_peer-0"], decided_with={"g_me", "g_peer"})
    assert 0.25 <= _timed_wait(linger) < 1.0  # the Scala member joined since: its assignment may differ
    linger.handing_over(["g_peer-0"])
    assert 0.25 <= _timed_wait(linger) < 1.0  # what we decided with is unknown


def test_zero_linger_never_waits_and_stopping_cuts_it_short() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    _member(model, "scala", marked=False)
    off = ReleaseLinger(me, 0.0, threading.Event())
    off.handing_over(["g_scala-0"])
    assert _timed_wait(off) < 0.05 and off.wait() is True
    stopping = threading.Event()
    on = ReleaseLinger(me, 5.0, stopping)
    on.handing_over(["g_scala-0"])
    threading.Timer(0.1, stopping.set).start()
    began = time.monotonic()
    assert on.wait() is False  # the caller leaves the nodes to the session's close
    assert time.monotonic() - began < 1.0


def test_unreadable_markers_count_as_scala_members() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    linger = ReleaseLinger(me, 0.2, threading.Event())
    model.disconnect(me.client)  # the group cannot be read: assume the worst
    linger.handing_over([])
    assert _timed_wait(linger) >= 0.15


def test_leaving_lingers_only_with_an_unmarked_member_present() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    peer = _member(model, "peer", marked=True)
    linger = ReleaseLinger(me, 0.3, threading.Event())
    decided = {(TOPIC, p): "g_me-0" for p in range(4)}
    assert linger.leaving(decided, budget_s=10.0) == 0.0
    _member(model, "scala", marked=False)
    assert linger.leaving(decided, budget_s=0.1) == 0.1  # the shutdown budget caps it
    assert linger.leaving(decided, budget_s=10.0) == 0.3
    assert peer.zkconsumer_members() == {"g_me", "g_peer"}


def test_a_member_is_marked_before_it_is_registered_and_again_in_a_new_session() -> None:
    s = Schedule(0, Options(members=0, partitions=2))
    member = s.add_member()
    member.rebalance()
    observer = s.model.client("observer")
    observer.start()
    marker = znodes.zkconsumer_member_path(GROUP, member.consumer_id)
    registration = znodes.member_path(GROUP, member.consumer_id)
    # Whoever reads our registration must find the marker already there.
    assert observer.exists(marker).czxid < observer.exists(registration).czxid
    s.model.expire(member.client)
    s.model.deliver()
    assert observer.exists(marker) is None
    for _ in range(5):
        s.model.advance(250)
        s.model.deliver(member.client)
        member.rebalance()
    assert observer.exists(marker).ephemeralOwner == observer.exists(registration).ephemeralOwner


# ---- the Rebalancer's use of it ------------------------------------------------------------------


def _mixed_world(linger_s: float) -> tuple[Schedule, SimMember, list[tuple[str, float]]]:
    """m1 owns every partition; then an unmarked member (a Scala member) registers and takes half."""
    s = Schedule(0, Options(members=0, partitions=4))
    m1 = s.add_member()
    for _ in range(3):
        s.model.advance(250)
        m1.rebalance()
    assert len(owner_nodes(s.model, GROUP, TOPIC)) == 4
    m1.rebalancer.linger.floor_s = m1.rebalancer.linger.max_s = linger_s
    times: list[tuple[str, float]] = []
    commit = m1.rebalancer.commits.before_release

    def recorded_commit() -> None:
        commit()
        times.append(("commit", time.monotonic()))

    m1.rebalancer.commits.before_release = recorded_commit  # type: ignore[method-assign]

    def hook(client: object, op: str, path: str) -> None:
        if op in OWNER_DELETES and "/owners/" in path and client.name == m1.name:
            times.append(("delete", time.monotonic()))

    s.model.set_fault_hook(hook)
    scala = s.model.client("scala")
    scala.start()
    scala.create(
        znodes.member_path(GROUP, f"{GROUP}_scala"),
        ephemeral=True,
        makepath=True,
        value=encode_registration(StaticSubscription.of({TOPIC: 1}), 1),
    )
    s.model.deliver()
    return s, m1, times


OWNER_DELETES = ("delete", "multi-delete")  # one by one, or a release's transaction


def _first_delete_after_last_commit(times: list[tuple[str, float]]) -> float:
    last_commit = max(t for what, t in times if what == "commit")
    return min(t for what, t in times if what == "delete" and t >= last_commit) - last_commit


def test_a_release_to_a_scala_member_lingers_after_the_commit() -> None:
    s, m1, times = _mixed_world(0.3)
    m1.rebalance()
    assert _first_delete_after_last_commit(times) >= 0.3
    assert len(owner_nodes(s.model, GROUP, TOPIC)) < 4  # the Scala member's share was released


def test_a_release_retried_after_a_failure_lingers_after_its_new_commit() -> None:
    s, m1, times = _mixed_world(0.3)
    fired = hook_first_owner_delete_fails(s, m1, times)
    m1.rebalance()  # commit, linger, the delete fails: the release stays pending
    assert fired and len(owner_nodes(s.model, GROUP, TOPIC)) == 4
    s.model.reconnect(m1.client)
    for _ in range(3):  # the retry commits again, so lingers again before deleting
        s.model.advance(250)
        s.model.deliver(m1.client)
        m1.rebalance()
    assert _first_delete_after_last_commit(times) >= 0.3
    assert len(owner_nodes(s.model, GROUP, TOPIC)) < 4


def hook_first_owner_delete_fails(s: Schedule, m1: SimMember, times: list[tuple[str, float]]) -> list[str]:
    fired: list[str] = []

    def hook(client: object, op: str, path: str) -> object:
        if op in OWNER_DELETES and "/owners/" in path and client.name == m1.name:
            if not fired:
                fired.append(path)
                return FAIL_BEFORE
            times.append(("delete", time.monotonic()))
        return None

    s.model.set_fault_hook(hook)
    return fired


def test_the_linger_starts_after_the_listener_that_may_commit() -> None:
    s, m1, times = _mixed_world(0.3)

    class SlowCommitter(ConsumerRebalanceListener):
        def before_releasing_partitions(self, partitions: dict[str, set[int]]) -> None:
            time.sleep(0.4)  # e.g. flushing a sink, then commit_offsets()
            times.append(("commit", time.monotonic()))

    m1.rebalancer.listener = SlowCommitter()
    m1.rebalance()
    assert _first_delete_after_last_commit(times) >= 0.3


def test_stopping_during_the_linger_leaves_the_nodes_to_the_session_close() -> None:
    s, m1, _ = _mixed_world(5.0)
    threading.Timer(0.2, m1.rebalancer.begin_shutdown).start()
    began = time.monotonic()
    m1.rebalance()
    assert time.monotonic() - began < 2.0
    assert len(owner_nodes(s.model, GROUP, TOPIC)) == 4  # not deleted right after the commit


class RecordingStop:
    """The linger's stop event: records how long each wait would be and never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        return False

    def is_set(self) -> bool:
        return False


def test_finding_7_the_linger_grows_with_the_partitions_the_scala_member_takes() -> None:
    # A Scala member reads the offsets of its whole share, then claims it: the gap between its read
    # of one of our partitions and its claim grows with its share and with ZooKeeper's round trip.
    s = Schedule(0, Options(members=0, partitions=240))
    m1 = s.add_member()
    for _ in range(3):
        s.model.advance(250)
        m1.rebalance()
    assert len(owner_nodes(s.model, GROUP, TOPIC)) == 240
    linger = m1.rebalancer.linger
    linger.floor_s, linger.max_s = 1.0, 60.0  # zkconsumer.release.linger.ms / .max.ms
    stop = RecordingStop()
    linger._stopping = stop  # type: ignore[assignment]

    def slow_zookeeper(client: object, op: str, path: str) -> object:
        # 5 ms of the model's clock (the members' clock) pass during each of m1's member listings
        return slow(5) if client is m1.client and op == "get_children" and path.endswith("/ids") else None

    s.model.set_fault_hook(slow_zookeeper)
    scala = s.model.client("scala")
    scala.start()
    scala.create(
        znodes.member_path(GROUP, f"{GROUP}_scala"),
        ephemeral=True,
        makepath=True,
        value=encode_registration(StaticSubscription.of({TOPIC: 1}), 1),
    )
    s.model.deliver()
    m1.rebalance()
    decision = m1.rebalancer.decider.last
    assert decision is not None
    share = sum(1 for thread in decision.group.values() if thread.startswith(f"{GROUP}_scala-"))
    assert share >= 80
    # three times its reads and creates at our round trip: more than the old fixed second
    assert stop.waits == [pytest.approx(3 * 2 * share * 0.005)]
