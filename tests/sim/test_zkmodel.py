"""The in-memory ZooKeeper model and fake kazoo client behave like ZooKeeper 3.x seen through kazoo 2.11."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import (
    Create,
    Delete,
    MultiHeader,
    SetData,
    Transaction,
    int_struct,
    stat_struct,
    write_string,
)
from kazoo.protocol.states import EventType, KazooState, KeeperState, WatchedEvent, ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from harness.zkmodel import (
    EXPIRE_BEFORE,
    FAIL_AFTER,
    FAIL_BEFORE,
    FakeKazooClient,
    Fault,
    FaultKind,
    SimBlocked,
    SimError,
    ZkModel,
    at_call,
    slow,
)


@pytest.fixture
def model() -> ZkModel:
    return ZkModel(tick_ms=2000, max_session_timeout_ms=40_000)


def started(model: ZkModel, name: str, timeout: float = 10.0) -> FakeKazooClient:
    client = model.client(name, timeout=timeout)
    client.start()
    return client


def sid(client: FakeKazooClient) -> int:
    """The live session id (fails the test when the client is not connected)."""
    assert client.client_id is not None
    return int(client.client_id[0])


def states_of(client: FakeKazooClient) -> list[str]:
    seen: list[str] = []
    client.add_listener(seen.append)
    return seen


# ---- data operations ---------------------------------------------------------------------------
def test_create_get_set_delete_with_versions(model: ZkModel) -> None:
    c = started(model, "c")
    model.advance(500)
    assert c.create("/a", b"one") == "/a"
    data, stat = c.get("/a")
    assert data == b"one" and stat.version == 0 and stat.czxid == stat.mzxid == stat.pzxid
    assert (stat.ctime, stat.mtime, stat.ephemeralOwner, stat.dataLength, stat.numChildren) == (500, 500, 0, 3, 0)
    model.advance(250)
    stat1 = c.set("/a", b"two", version=0)
    assert (stat1.version, stat1.mtime, stat1.ctime) == (1, 750, 500) and stat1.mzxid > stat.mzxid
    with pytest.raises(BadVersionError):
        c.set("/a", b"three", version=0)
    with pytest.raises(BadVersionError):
        c.delete("/a", version=0)
    assert c.get("/a")[0] == b"two"
    assert c.delete("/a", version=1) is True
    assert c.exists("/a") is None and not model.exists("/a")
    with pytest.raises(NoNodeError):
        c.get("/a")


def test_errors_are_kazoos(model: ZkModel) -> None:
    c = started(model, "c")
    c.create("/p")
    c.create("/p/kid")
    c.create("/eph", ephemeral=True)
    with pytest.raises(NodeExistsError):
        c.create("/p")
    with pytest.raises(NoNodeError):
        c.create("/missing/child")
    with pytest.raises(NotEmptyError):
        c.delete("/p")
    with pytest.raises(NoChildrenForEphemeralsError):
        c.create("/eph/kid")
    with pytest.raises(BadArgumentsError):
        c.get("/p/")
    with pytest.raises(NoNodeError):
        c.set("/nope", b"")
    with pytest.raises(TypeError):
        c.create("/s", "not bytes")  # type: ignore[arg-type]


def test_parent_stat_tracks_children_and_makepath_creates_persistent_parents(model: ZkModel) -> None:
    c = started(model, "c")
    assert c.create("/a/b/c", b"x", ephemeral=True, makepath=True) == "/a/b/c"
    assert model.stat("/a/b").ephemeralOwner == 0 and model.stat("/a/b/c").ephemeralOwner == sid(c)
    c.create("/a/d")
    c.delete("/a/d")
    parent = model.stat("/a")
    assert (parent.numChildren, parent.cversion) == (1, 3)
    assert parent.pzxid == model.last_zxid  # the delete was the last write
    assert c.ensure_path("/a/b") is True and c.ensure_path("/x/y") == "/x/y"
    assert [call.op for call in model.calls[-5:]] == ["exists", "exists", "exists", "create", "create"]


def test_one_zxid_per_write_even_a_failed_one(model: ZkModel) -> None:
    c = started(model, "c")
    before = model.last_zxid
    c.create("/a")
    with pytest.raises(NodeExistsError):
        c.create("/a")
    c.get("/a")
    assert model.last_zxid == before + 2  # ZooKeeper logs an error txn for the failed create; reads take none


# ---- multi -------------------------------------------------------------------------------------
def _as_kazoo_decodes(kinds: list[str], answers: list[Any]) -> list[Any]:
    """Encode a multi reply the way the ZooKeeper server does and decode it with kazoo's own code."""
    types = {"create": Create.type, "delete": Delete.type, "set": SetData.type, "check": 13}
    wire = bytearray()
    for kind, answer in zip(kinds, answers):
        if isinstance(answer, int) and not isinstance(answer, bool):  # an error code
            wire += MultiHeader(-1, False, answer).serialize() + int_struct.pack(answer)
        else:
            wire += MultiHeader(types[kind], False, 0).serialize()
            wire += write_string(answer) if kind == "create" else b""
            wire += stat_struct.pack(*answer) if kind == "set" else b""
    wire += MultiHeader(-1, True, -1).serialize()
    return Transaction.deserialize(bytes(wire), 0)  # type: ignore[no-any-return]


def test_multi_success_results_match_kazoo(model: ZkModel) -> None:
    c = started(model, "c")
    c.create("/x", b"0")
    c.create("/gone")
    t = c.transaction()
    t.create("/new", b"n", ephemeral=True)
    t.check("/x", 0)
    t.set_data("/x", b"1", version=0)
    t.delete("/gone")
    results = t.commit()
    assert results == _as_kazoo_decodes(["create", "check", "set", "delete"], ["/new", None, model.stat("/x"), None])
    assert results[0] == "/new" and results[1] is True and isinstance(results[2], ZnodeStat) and results[3] is True
    stats = [model.stat(p) for p in ("/new", "/x")]
    assert stats[0].czxid == stats[1].mzxid == model.last_zxid  # one transaction, one zxid
    with pytest.raises(ValueError):
        t.commit()


def test_multi_failure_applies_nothing_and_reports_like_kazoo(model: ZkModel) -> None:
    c = started(model, "c")
    c.create("/x", b"0")
    watched: list[WatchedEvent] = []
    c.get("/x", watch=watched.append)
    dump = model.dump()
    t = c.transaction()
    t.create("/new")
    t.set_data("/x", b"1")
    t.create("/x")  # NodeExists
    t.delete("/x")
    results = t.commit()
    expected = _as_kazoo_decodes(["create", "set", "create", "delete"], [0, 0, NodeExistsError.code, -2])
    assert [type(r) for r in results] == [type(e) for e in expected]
    assert [type(r) for r in results] == [RolledBackError, RolledBackError, NodeExistsError, RuntimeInconsistency]
    assert model.dump().split("\n")[1:] == dump.split("\n")[1:] and not model.exists("/new")
    model.deliver()
    assert watched == []  # nothing happened, so nothing fired


# ---- watches -----------------------------------------------------------------------------------
def test_watches_are_one_shot_and_fire_on_the_right_events(model: ZkModel) -> None:
    a, b = started(model, "a"), started(model, "b")
    seen: list[WatchedEvent] = []
    b.create("/n", b"")
    a.get("/n", watch=seen.append)
    a.exists("/n", watch=seen.append)  # same callable, same path, same kind: one firing
    a.get_children("/n", watch=seen.append)
    a.exists("/later", watch=seen.append)
    b.set("/n", b"1")
    b.set("/n", b"2")  # one-shot: the data watch is gone
    b.create("/n/kid")
    b.delete("/n/kid")  # the child watch is gone too
    b.create("/later")
    model.deliver()
    assert seen == [
        WatchedEvent(EventType.CHANGED, KeeperState.CONNECTED, "/n"),
        WatchedEvent(EventType.CHILD, KeeperState.CONNECTED, "/n"),
        WatchedEvent(EventType.CREATED, KeeperState.CONNECTED, "/later"),
    ]
    seen.clear()
    a.get("/n", watch=seen.append)
    a.get_children("/n", watch=seen.append)
    b.delete("/n")
    model.deliver()
    # kazoo hands one DELETED to the data and the child watchers: a callable in both runs twice
    assert seen == [WatchedEvent(EventType.DELETED, KeeperState.CONNECTED, "/n")] * 2


def test_callbacks_wait_for_the_driver(model: ZkModel) -> None:
    a, b = started(model, "a"), started(model, "b")
    seen: list[str] = []
    b.create("/n")
    a.exists("/n", watch=lambda e: seen.append(f"a:{e.type}"))
    b.exists("/n", watch=lambda e: seen.append(f"b:{e.type}"))
    model.deliver()  # the CONNECTED notifications
    b.set("/n", b"x")
    assert seen == [] and model.pending_events() == 2 and model.pending_events(b) == 1
    assert model.deliver_one(b) and seen == ["b:CHANGED"]
    assert model.deliver() == 1 and seen == ["b:CHANGED", "a:CHANGED"]


def test_watch_errors_are_kept_not_raised(model: ZkModel) -> None:
    a = started(model, "a")
    a.exists("/n", watch=lambda e: 1 / 0)
    a.create("/n")
    model.deliver()
    assert [(name, type(exc)) for name, exc in model.callback_errors] == [("a", ZeroDivisionError)]


# ---- sessions and connection -------------------------------------------------------------------
def test_negotiated_timeout_is_capped_and_floored(model: ZkModel) -> None:
    assert started(model, "big", timeout=600).negotiated_session_timeout_ms == 40_000
    assert started(model, "small", timeout=1).negotiated_session_timeout_ms == 4_000
    assert started(model, "mid", timeout=6).negotiated_session_timeout_ms == 6_000
    idle = model.client("idle")
    assert idle.negotiated_session_timeout_ms is None and idle.client_id is None
    gone = started(model, "gone", timeout=6)
    model.disconnect(gone)
    assert gone.client_id is None and gone.negotiated_session_timeout_ms == 6_000


def test_reconnect_within_the_session_keeps_it_but_kazoo_drops_watches(model: ZkModel) -> None:
    a, b = started(model, "a"), started(model, "b")
    model.deliver()
    states = states_of(a)
    seen: list[WatchedEvent] = []
    a.create("/eph", ephemeral=True)
    a.get("/eph", watch=seen.append)
    session = a.client_id
    model.disconnect(a)
    assert a.client_id is None and a.state == KazooState.SUSPENDED and not a.connected
    model.advance(9_000)  # within the 10 s timeout
    model.reconnect(a)
    assert a.client_id == session and model.exists("/eph")
    b.set("/eph", b"changed")
    model.deliver()
    assert states == [KazooState.SUSPENDED, KazooState.CONNECTED]
    # kazoo 2.11 clears its watchers on SUSPENDED (a NONE event each) and sends no SetWatches
    assert seen == [WatchedEvent(EventType.NONE, KeeperState.CONNECTING, None)]


def test_expiry_while_disconnected_is_lost_then_a_new_session(model: ZkModel) -> None:
    a, b = started(model, "a", timeout=6), started(model, "b")
    states = states_of(a)
    a.create("/eph", ephemeral=True)
    gone: list[WatchedEvent] = []
    b.exists("/eph", watch=gone.append)
    old = sid(a)
    model.advance(1_000)
    model.disconnect(a)
    model.advance(6_999)  # deadline: (1000 + 6000) rounded up to the next 2 s tick = 8000
    assert model.exists("/eph") and old in model.live_sessions()
    model.advance(1)
    assert not model.exists("/eph") and old not in model.live_sessions()
    model.reconnect(a)
    model.deliver()
    assert states == [KazooState.SUSPENDED, KazooState.LOST, KazooState.CONNECTED]
    assert a.client_id is not None and sid(a) != old
    assert gone == [WatchedEvent(EventType.DELETED, KeeperState.CONNECTED, "/eph")]


def test_exact_expiry_without_tick_rounding() -> None:
    model = ZkModel(tick_ms=2000, round_expiry_to_tick=False)
    a = started(model, "a", timeout=6)
    first = sid(a)
    model.disconnect(a)
    model.advance(5_999)
    assert first in model.live_sessions()
    model.advance(1)
    assert first not in model.live_sessions()


def test_connected_clients_keep_their_sessions(model: ZkModel) -> None:
    a = started(model, "a", timeout=4)
    first = sid(a)
    model.advance(10**7)
    assert sid(a) == first and first in model.live_sessions()


@pytest.mark.parametrize(
    "suspend_first, expected",
    [
        (True, [KazooState.SUSPENDED, KazooState.LOST, KazooState.CONNECTED]),
        (False, [KazooState.LOST, KazooState.CONNECTED]),
    ],
)
def test_expire_while_connected(model: ZkModel, suspend_first: bool, expected: list[str]) -> None:
    a = started(model, "a")
    states = states_of(a)
    a.create("/eph", ephemeral=True)
    seen: list[WatchedEvent] = []
    a.get_children("/", watch=seen.append)  # the expiry's own delete reaches it before the reset
    a.exists("/unrelated", watch=seen.append)
    old = sid(a)
    model.expire(a, suspend_first=suspend_first)
    model.deliver()
    assert states == expected and a.connected and sid(a) != old and not model.exists("/eph")
    keeper = KeeperState.CONNECTING if suspend_first else KeeperState.EXPIRED_SESSION
    assert seen == [
        WatchedEvent(EventType.CHILD, KeeperState.CONNECTED, "/"),
        WatchedEvent(EventType.NONE, keeper, None),
    ]


def test_stop_closes_the_session_at_once(model: ZkModel) -> None:
    a, b = started(model, "a"), started(model, "b")
    states = states_of(a)
    a.create("/eph", ephemeral=True)
    gone: list[WatchedEvent] = []
    b.exists("/eph", watch=gone.append)
    a.stop()
    assert not model.exists("/eph") and a.client_id is None
    with pytest.raises(ConnectionClosedError):
        a.get("/")
    model.deliver()
    assert states == [KazooState.LOST] and gone == [WatchedEvent(EventType.DELETED, KeeperState.CONNECTED, "/eph")]
    a.start()
    assert a.connected and a.get("/")[0] == b""


def test_stop_while_partitioned_leaves_the_session_to_expire(model: ZkModel) -> None:
    a = started(model, "a", timeout=4)
    a.create("/eph", ephemeral=True)
    model.disconnect(a)
    a.stop()
    assert model.exists("/eph")
    model.advance(6_000)
    assert not model.exists("/eph")


def test_crash_and_freeze(model: ZkModel) -> None:
    a, b, f = started(model, "a", timeout=4), started(model, "b"), started(model, "f", timeout=4)
    model.deliver()
    a.create("/a", ephemeral=True)
    f.create("/f", ephemeral=True)
    a.exists("/b", watch=lambda e: pytest.fail("a crashed"))
    f_states = states_of(f)
    model.crash(a)
    model.freeze(f)
    b.create("/b")
    with pytest.raises(SimError):
        f.get("/")
    model.advance(5_999)
    assert model.exists("/a") and model.exists("/f")
    model.advance(1)
    assert not model.exists("/a") and not model.exists("/f")
    model.deliver()
    assert f_states == []  # frozen: nothing runs
    model.thaw(f)
    model.deliver()
    assert f_states == [KazooState.SUSPENDED, KazooState.LOST, KazooState.CONNECTED] and f.connected


def test_requests_made_while_suspended_wait_for_the_reconnect(model: ZkModel) -> None:
    a = started(model, "a", timeout=4)
    model.disconnect(a)
    pending = a.create_async("/made-later")
    with pytest.raises(KazooTimeoutError):
        pending.get(timeout=1.0)
    with pytest.raises(SimBlocked):
        a.get("/")  # a real thread would hang here; its request still goes out on reconnect
    model.reconnect(a)
    assert pending.get() == "/made-later" and model.exists("/made-later")
    model.disconnect(a)
    doomed = a.create_async("/never")
    model.advance(10_000)
    model.reconnect(a)
    with pytest.raises(SessionExpiredError):
        doomed.get()
    assert not model.exists("/never")


def test_requests_while_suspended_can_fail_at_once() -> None:
    model = ZkModel(queue_while_suspended=False)
    a = started(model, "a")
    model.disconnect(a)
    with pytest.raises(ConnectionLoss):
        a.create("/x")


# ---- faults ------------------------------------------------------------------------------------
def test_fail_after_applies_the_op_and_drops_the_link(model: ZkModel) -> None:
    a = started(model, "a")
    model.set_fault_hook(at_call(model, len(model.calls) + 1, FAIL_AFTER))
    with pytest.raises(ConnectionLoss):
        a.create("/x", b"1", ephemeral=True)
    assert model.exists("/x") and a.state == KazooState.SUSPENDED
    model.reconnect(a)
    with pytest.raises(NodeExistsError):  # the retry finds its own write
        a.create("/x", b"1", ephemeral=True)
    assert model.stat("/x").ephemeralOwner == sid(a)


def test_fail_before_does_not_apply(model: ZkModel) -> None:
    a = started(model, "a")
    model.set_fault_hook(lambda c, op, path: FaultKind.FAIL_BEFORE if op == "multi" else None)
    t = a.transaction()
    t.create("/x")
    with pytest.raises(ConnectionLoss):
        t.commit()
    assert not model.exists("/x") and not a.connected
    model.set_fault_hook(lambda c, op, path: Fault(FaultKind.FAIL_BEFORE, drop_link=False))
    model.reconnect(a)
    with pytest.raises(ConnectionLoss):
        a.get("/")
    assert a.connected


def test_expire_before_and_slow(model: ZkModel) -> None:
    a, b = started(model, "a"), started(model, "b", timeout=4)
    a.create("/eph", ephemeral=True)
    old = sid(a)
    model.set_fault_hook(lambda c, op, path: EXPIRE_BEFORE if path == "/boom" else None)
    with pytest.raises(SessionExpiredError):
        a.create("/boom")
    assert not model.exists("/eph") and not model.exists("/boom") and sid(a) != old
    b.create("/b", ephemeral=True)
    model.disconnect(b)
    model.set_fault_hook(lambda c, op, path: slow(7_000) if c is a else None)
    a.create("/slow")
    assert model.now_ms == 7_000 and model.stat("/slow").ctime == 7_000 and not model.exists("/b")


def test_calls_are_counted_for_aiming(model: ZkModel) -> None:
    a = started(model, "a")
    a.create("/x/y", makepath=True)
    a.get_async("/x")
    assert [tuple(c) for c in model.calls] == [
        ("a", "create", "/x/y"),
        ("a", "exists", "/x"),
        ("a", "exists", "/"),
        ("a", "create", "/x"),
        ("a", "create", "/x/y"),
        ("a", "get", "/x"),
    ]


# ---- kazoo's recipes run on the fake -----------------------------------------------------------
def test_kazoo_watch_recipes_follow_changes_and_reconnects(model: ZkModel) -> None:
    a, b = started(model, "a"), started(model, "b")
    a.ensure_path("/ids")
    kids: list[list[str]] = []
    datas: list[bytes | None] = []
    ChildrenWatch(a, "/ids", lambda children: kids.append(sorted(children)))
    DataWatch(a, "/topic", lambda data, stat: datas.append(data))
    b.create("/ids/m1")
    b.create("/topic", b"v1")
    model.deliver()
    model.disconnect(a)
    b.create("/ids/m2")
    b.set("/topic", b"v2")
    model.reconnect(a)
    model.deliver()  # the recipes re-read on CONNECTED and re-arm their watches
    b.delete("/ids/m1")
    model.deliver()
    assert kids == [[], ["m1"], ["m1", "m2"], ["m2"]]
    assert datas == [None, b"v1", b"v2"]
    assert model.callback_errors == []


# ---- determinism and invariants ----------------------------------------------------------------
def _script() -> tuple[str, int, list[Any]]:
    model = ZkModel(tick_ms=1000)
    a, b = started(model, "a", 3), started(model, "b", 5)
    log: list[Any] = []
    for c in (a, b):
        c.add_listener(partial(lambda n, s: log.append((n, s)), c.name))
    a.create("/g/ids/a", ephemeral=True, makepath=True)
    b.get_children("/g/ids", watch=log.append)
    model.set_fault_hook(at_call(model, len(model.calls) + 2, FAIL_AFTER))
    for i in range(3):
        try:
            b.create(f"/g/ids/b{i}", ephemeral=True)
        except ConnectionLoss:
            model.reconnect(b)
    model.disconnect(a)
    model.advance(5_000)
    model.reconnect(a)
    model.deliver()
    return model.dump(), model.last_zxid, log


def test_the_same_script_gives_the_same_history() -> None:
    first, second = _script(), _script()
    assert first == second
    assert ("a", KazooState.LOST) in first[2]


PATHS = ["/a", "/a/b", "/a/c", "/d", "/d/e"]
action = st.one_of(
    st.tuples(st.just("create"), st.integers(0, 2), st.sampled_from(PATHS), st.booleans()),
    st.tuples(st.just("set"), st.integers(0, 2), st.sampled_from(PATHS), st.sampled_from([-1, 0, 1])),
    st.tuples(st.just("delete"), st.integers(0, 2), st.sampled_from(PATHS), st.sampled_from([-1, 0])),
    st.tuples(st.just("watch"), st.integers(0, 2), st.sampled_from(PATHS), st.booleans()),
    st.tuples(st.just("multi"), st.integers(0, 2), st.sampled_from(PATHS), st.sampled_from(PATHS)),
    st.tuples(st.sampled_from(["disconnect", "reconnect", "expire", "stop", "start", "fault"]), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.integers(0, 8_000)),
    st.tuples(
        st.just("deliver"),
    ),
)


def _check_invariants(model: ZkModel, clients: list[FakeKazooClient]) -> None:
    live = model.live_sessions()
    for path in model.paths():
        stat, kids = model.stat(path), model.children(path)
        assert stat.numChildren == len(kids) and stat.dataLength == len(model.data(path))
        assert stat.cversion >= stat.numChildren and (stat.cversion - stat.numChildren) % 2 == 0
        assert stat.czxid <= stat.mzxid <= model.last_zxid and stat.czxid <= stat.pzxid <= model.last_zxid
        assert all(model.exists(f"{path.rstrip('/')}/{k}") for k in kids)
        if stat.ephemeralOwner:
            assert stat.ephemeralOwner in live and not kids
        if path != "/":
            assert path.rsplit("/", 1)[1] in model.children(path.rsplit("/", 1)[0] or "/")
    for c in clients:
        assert (c.client_id is not None) == c.connected
        assert c.client_id is None or sid(c) in live


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 3), st.lists(action, max_size=40))
def test_random_histories_keep_the_invariants(n_clients: int, actions: list[tuple[Any, ...]]) -> None:
    model = ZkModel(tick_ms=1000)
    clients = [started(model, f"c{i}", timeout=4) for i in range(n_clients)]
    faults = [FAIL_BEFORE, FAIL_AFTER, EXPIRE_BEFORE, slow(1500)]
    fired: list[WatchedEvent] = []
    for step in actions:
        kind, c = step[0], clients[step[1] % n_clients] if len(step) > 1 else clients[0]
        before = model.last_zxid
        wrote = False
        try:
            if kind == "create":
                c.create(step[2], b"x", ephemeral=step[3])
                wrote = True
            elif kind == "set":
                c.set(step[2], b"y", version=step[3])
                wrote = True
            elif kind == "delete":
                c.delete(step[2], version=step[3])
                wrote = True
            elif kind == "watch":
                (c.get_children if step[3] else c.exists)(step[2], watch=fired.append)
            elif kind == "multi":
                t = c.transaction()
                t.create(step[2], ephemeral=True)
                t.set_data(step[3], b"m")
                wrote = not any(isinstance(r, Exception) for r in t.commit())
            elif kind in ("disconnect", "reconnect", "expire"):
                getattr(model, kind)(c)
            elif kind == "stop":
                c.stop()
            elif kind == "start":
                c.start()
            elif kind == "fault":
                model.set_fault_hook(at_call(model, len(model.calls) + 1, faults[step[1] % len(faults)]))
            elif kind == "advance":
                model.advance(step[1])
            else:
                model.deliver()
        except (KazooException, KazooTimeoutError, SimBlocked):
            wrote = False
        assert model.last_zxid >= before
        if wrote:
            assert model.last_zxid > before
        _check_invariants(model, clients)
    model.deliver()
    assert all(isinstance(e, WatchedEvent) for e in fired)
