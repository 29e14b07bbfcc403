"""The watch re-arm: SetWatches' bytes and batches (properties), the gate, and what each state change does to kazoo's tables."""

from __future__ import annotations

import logging
import struct
import threading
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from zkconsumer.zookeeper import internals
from zkconsumer.zookeeper.handler import make_handler
from zkconsumer.zookeeper.watch_rearm import (
    SET_WATCHES,
    ExistsWatch,
    SetWatches,
    WatchRearm,
    set_watches_batches,
    watch_lists,
)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(internals, "_said", set())
    monkeypatch.delenv(internals.REARM_SWITCH, raising=False)


def _decode(raw: bytes) -> tuple[int, list[list[str]]]:
    """SetWatches' body as the server reads it (zookeeper.jute)."""
    (zxid,) = struct.unpack_from("!q", raw, 0)
    at, lists = 8, []
    for _ in range(3):
        (count,) = struct.unpack_from("!i", raw, at)
        at += 4
        paths = []
        for _ in range(count):
            (size,) = struct.unpack_from("!i", raw, at)
            paths.append(raw[at + 4 : at + 4 + size].decode())
            at += 4 + size
        lists.append(paths)
    assert at == len(raw)
    return zxid, lists


def test_set_watches_bytes_are_the_jute_record() -> None:
    request = SetWatches(0x1_0000_0005, ("/a",), (), ("/bé",))
    assert request.type == SET_WATCHES == 101
    assert request.serialize() == (
        b"\x00\x00\x00\x01\x00\x00\x00\x05" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02/a" + b"\x00\x00\x00\x00"
        b"\x00\x00\x00\x01" + b"\x00\x00\x00\x04/b\xc3\xa9"
    )


paths = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=40).map("/".__add__)
)


@given(paths, paths, paths, st.integers(0, 2**63 - 1), st.integers(1, 200))
def test_batches_carry_each_watch_once_in_order_under_the_limit(
    data: list[str], exist: list[str], child: list[str], zxid: int, limit: int
) -> None:
    batches = set_watches_batches(zxid, data, exist, child, limit)
    decoded = [_decode(b.serialize()) for b in batches]
    assert all(z == zxid for z, _ in decoded)
    for kind, wanted in enumerate((data, exist, child)):
        assert [p for _, lists in decoded for p in lists[kind]] == wanted
    for batch in batches:
        chars = [len(p) for p in (*batch.data, *batch.exist, *batch.child)]
        assert chars and (sum(chars) <= limit or len(chars) == 1)
    assert sum(b.paths for b in batches) == len(data) + len(exist) + len(child)


def test_a_large_table_goes_in_batches_of_the_java_clients_size() -> None:
    many = [f"/consumers/group-{g}/offsets/topic/{p}" for g in range(200) for p in range(100)]
    batches = set_watches_batches(7, many, [], [])
    assert len(batches) > 1 and all(sum(map(len, b.data)) <= 128 * 1024 for b in batches)


def test_exist_watches_are_told_from_data_watches() -> None:
    def seen(event: WatchedEvent) -> None:
        pass

    def other(event: WatchedEvent) -> None:
        pass

    table = {"/gone": {ExistsWatch(seen)}, "/both": {ExistsWatch(seen), other}, "/data": {other}, "/empty": set()}
    assert watch_lists(table, {"/c": {seen}, "/none": set()}) == (["/both", "/data"], ["/gone"], ["/c"])
    assert ExistsWatch(seen) == ExistsWatch(seen) and len({ExistsWatch(seen), ExistsWatch(seen)}) == 1


def _client() -> KazooClient:
    return KazooClient(hosts="127.0.0.1:1", handler=make_handler())  # never started


def test_a_tested_kazoo_re_arms() -> None:
    assert internals.rearm_wanted(_client()) is True


@pytest.mark.parametrize("version", ["2.10.0", "2.12.0"])
def test_another_kazoo_takes_the_stock_path_and_says_so_once(
    version: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(internals, "kazoo_version", lambda: version)
    caplog.set_level(logging.INFO, logger=internals.__name__)
    rearms = [WatchRearm(_client()), WatchRearm(_client())]
    assert [r.enabled for r in rearms] == [False, False]
    assert all(not r.client.state_listeners for r in rearms)  # nothing hooked into kazoo
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and f"kazoo {version} is not one" in said[0] and "every watch re-read" in said[0]


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("_data_watchers", {}, "_data_watchers is dict"),
        ("_child_watchers", defaultdict(list), "_child_watchers is defaultdict"),
        ("last_zxid", None, "no int last_zxid"),
        ("_queue", [], "no deque _queue"),
    ],
)
def test_a_client_of_another_shape_takes_the_stock_path(
    field: str, value: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client()
    setattr(client, field, value)
    caplog.set_level(logging.INFO, logger=internals.__name__)
    assert WatchRearm(client).enabled is False
    assert any(reason in r.getMessage() and "stock reconnect" in r.getMessage() for r in caplog.records)


def test_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(internals.REARM_SWITCH, "off")
    assert WatchRearm(_client()).enabled is False


class Fired:
    """Watchers that note the events they get (kazoo's callback thread)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, EventType]] = []
        self.lock = threading.Condition()

    def watcher(self, name: str) -> Any:
        def fired(event: WatchedEvent) -> None:
            with self.lock:
                self.events.append((name, event.type))
                self.lock.notify_all()

        return fired

    def wait(self, count: int) -> list[tuple[str, EventType]]:
        with self.lock:
            assert self.lock.wait_for(lambda: len(self.events) >= count, 5), self.events
            return sorted(self.events)


@pytest.fixture
def armed() -> Any:
    """A never-connected client with a session id and two watches, its handler running (callbacks)."""
    client = _client()
    client.handler.start()
    client._session_id = 0x42
    client.last_zxid = 0x99
    fired = Fired()
    client._data_watchers["/d"].add(fired.watcher("d"))
    client._child_watchers["/c"].add(fired.watcher("c"))
    rearm = WatchRearm(client)
    yield client, rearm, fired
    client.handler.stop()


def test_a_blip_in_the_same_session_keeps_the_tables_and_queues_set_watches_first(armed: Any) -> None:
    client, rearm, fired = armed
    client._queue.append(("a read queued while the link was down", None))
    rearm._on_state(KazooState.SUSPENDED)
    assert not client._data_watchers and not client._child_watchers  # kazoo's reset finds nothing to fire
    client.last_zxid = 0x200  # a handshake or auth answer must not move the re-arm's zxid
    rearm._on_state(KazooState.CONNECTED)
    assert set(client._data_watchers) == {"/d"} and set(client._child_watchers) == {"/c"}
    request, answer = client._queue[0]
    assert request == SetWatches(0x99, ("/d",), (), ("/c",)) and rearm.paths == 2
    assert client._queue[1][0] == "a read queued while the link was down"
    answer.set(None)
    assert client.handler.completion_queue.join() is None and rearm.rearmed == 1 and rearm.fallbacks == 0
    assert fired.events == []


def test_a_new_session_fires_every_watch(armed: Any) -> None:
    client, rearm, fired = armed
    rearm._on_state(KazooState.SUSPENDED)
    client._session_id = 0x43
    rearm._on_state(KazooState.CONNECTED)
    assert fired.wait(2) == [("c", EventType.NONE), ("d", EventType.NONE)]
    assert not client._queue and rearm.fallbacks == 1


def test_a_lost_session_gives_the_watches_back_for_kazoos_reset_to_fire(armed: Any) -> None:
    client, rearm, _ = armed
    rearm._on_state(KazooState.SUSPENDED)
    rearm._on_state(KazooState.LOST)
    assert set(client._data_watchers) == {"/d"} and set(client._child_watchers) == {"/c"}


def test_a_refused_re_arm_fires_its_watches(armed: Any, caplog: pytest.LogCaptureFixture) -> None:
    client, rearm, fired = armed
    rearm._on_state(KazooState.SUSPENDED)
    rearm._on_state(KazooState.CONNECTED)
    _, answer = client._queue[0]
    answer.set_exception(NoAuthError())
    assert fired.wait(2) == [("c", EventType.NONE), ("d", EventType.NONE)]
    assert not client._data_watchers["/d"] and rearm.fallbacks == 1 and rearm.rearmed == 0
    assert any("refused the watch re-arm" in r.getMessage() for r in caplog.records)


def test_a_drop_before_the_answer_takes_the_stock_path(armed: Any) -> None:
    client, rearm, _ = armed
    rearm._on_state(KazooState.SUSPENDED)
    rearm._on_state(KazooState.CONNECTED)
    client._queue[0][1].set_exception(ConnectionLoss())
    client.handler.completion_queue.join()
    rearm._on_state(KazooState.SUSPENDED)
    assert set(client._data_watchers) == {"/d"}  # left for kazoo's reset to fire
    assert rearm.fallbacks == 1 and rearm._kept is None


def test_closing_while_the_link_is_down_fires_what_was_kept(armed: Any) -> None:
    client, rearm, fired = armed
    rearm._on_state(KazooState.SUSPENDED)
    rearm.close()
    assert fired.wait(2) == [("c", EventType.NONE), ("d", EventType.NONE)]
    assert not client.state_listeners
