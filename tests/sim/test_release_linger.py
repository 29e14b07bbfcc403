"""zkconsumer markers and the release linger on the in-memory ZooKeeper: owner nodes handed to a
member without a marker (maybe a Scala member, which reads offsets before it claims) stay a while
after the commit; hand-overs between zkconsumer members do not wait."""
from __future__ import annotations

import threading
import time

from zkconsumer import zkdata
from zkconsumer.group import GroupZk
from zkconsumer.linger import ReleaseLinger
from zkconsumer.testing.sim_schedule import GROUP, Options, Schedule
from zkconsumer.testing.zkmodel import ZkModel

MARKER = zkdata.encode_zkconsumer_marker("test")


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
    data, stat = me.client.get(zkdata.zkconsumer_member_path("g", "g_me"))
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
    old.create(zkdata.zkconsumer_member_path("g", "g_me"), MARKER, ephemeral=True, makepath=True)
    new = _member(model, "me", marked=False)
    assert new.mark_as_zkconsumer(MARKER) is False


def test_no_marker_folder_means_no_zkconsumer_members() -> None:
    model = ZkModel()
    group = _member(model, "me", marked=False)
    assert group.zkconsumer_members() == set()


def test_hand_over_to_an_unmarked_member_lingers_to_a_marked_one_does_not() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    _member(model, "peer", marked=True)
    _member(model, "scala", marked=False)
    linger = ReleaseLinger(me, 0.3, threading.Event())
    linger.handing_over({("t", 0): "g_peer-0", ("t", 1): "g_me-0"})
    assert _timed_wait(linger) < 0.05
    linger.handing_over({("t", 2): "g_scala-0"})
    assert 0.25 <= _timed_wait(linger) < 1.0
    assert _timed_wait(linger) < 0.05  # once over, over


def test_zero_linger_and_stopping_never_wait() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    _member(model, "scala", marked=False)
    off = ReleaseLinger(me, 0.0, threading.Event())
    off.handing_over({("t", 0): "g_scala-0"})
    assert _timed_wait(off) < 0.05
    stopping = threading.Event()
    on = ReleaseLinger(me, 5.0, stopping)
    on.handing_over({("t", 0): "g_scala-0"})
    threading.Timer(0.1, stopping.set).start()
    assert _timed_wait(on) < 1.0


def test_unreadable_markers_count_as_scala_members() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    linger = ReleaseLinger(me, 0.2, threading.Event())
    model.disconnect(me.client)  # the marker folder cannot be read: assume the worst
    linger.handing_over({("t", 0): "g_peer-0"})
    assert _timed_wait(linger) >= 0.15


def test_leaving_lingers_only_with_an_unmarked_member_present() -> None:
    model = ZkModel()
    me = _member(model, "me", marked=True)
    peer = _member(model, "peer", marked=True)
    linger = ReleaseLinger(me, 0.3, threading.Event())
    began = time.monotonic()
    linger.before_leaving(budget_s=10.0)
    assert time.monotonic() - began < 0.05
    _member(model, "scala", marked=False)
    began = time.monotonic()
    linger.before_leaving(budget_s=0.1)  # the shutdown budget caps it
    assert 0.08 <= time.monotonic() - began < 0.3
    began = time.monotonic()
    linger.before_leaving(budget_s=10.0)
    assert 0.25 <= time.monotonic() - began < 1.0
    assert peer.zkconsumer_members() == {"g_me", "g_peer"}


def test_a_member_is_marked_before_it_is_registered_and_again_in_a_new_session() -> None:
    s = Schedule(0, Options(members=0, partitions=2))
    member = s.add_member()
    member.rebalance()
    observer = s.model.client("observer")
    observer.start()
    marker = zkdata.zkconsumer_member_path(GROUP, member.consumer_id)
    registration = zkdata.member_path(GROUP, member.consumer_id)
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
