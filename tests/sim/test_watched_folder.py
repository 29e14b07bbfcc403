"""WatchedFolder on the in-memory ZooKeeper: a read asks only for what changed, and never hides a change."""

from __future__ import annotations

from typing import Any

from kazoo.protocol.states import EventType, WatchedEvent

from harness.zkmodel import ZkModel
from zkconsumer.zookeeper.client import ZkIO
from zkconsumer.zookeeper.watched import KeptFolder, WatchedFolder, WatchedNodes

FOLDER = "/f"


def _world(children: int = 3) -> tuple[ZkModel, Any, Any, WatchedFolder]:
    model = ZkModel()
    admin, me = model.client("admin"), model.client("me")
    admin.start()
    me.start()
    admin.ensure_path(FOLDER)
    for i in range(children):
        admin.create(f"{FOLDER}/c{i}", f"v{i}".encode())
    return model, admin, me, WatchedFolder(ZkIO(me, 0.0), FOLDER)


def _calls(model: ZkModel) -> list[tuple[str, str]]:
    return [(c.op, c.path) for c in model.calls if c.client == "me"]


def _data(folder: WatchedFolder) -> dict[str, bytes]:
    return {name: data for name, (data, _stat) in folder.read().items()}


def test_an_unchanged_folder_is_read_once() -> None:
    model, _admin, _me, folder = _world()
    assert _data(folder) == {"c0": b"v0", "c1": b"v1", "c2": b"v2"}
    first = len(_calls(model))
    assert first == 4  # the list and three children
    model.deliver()
    for _ in range(5):
        assert _data(folder) == {"c0": b"v0", "c1": b"v1", "c2": b"v2"}
        assert folder.names() == ["c0", "c1", "c2"]
    assert len(_calls(model)) == first
    assert folder.requests == first


def test_a_kept_folder_keeps_what_it_is_told_and_reads_only_what_changed() -> None:
    model, admin, me, _folder = _world()
    kept = KeptFolder(ZkIO(me, 0.0), FOLDER, keep=lambda data, stat: (data, stat.version))
    assert kept.read() == {"c0": (b"v0", 0), "c1": (b"v1", 0), "c2": (b"v2", 0)}
    model.deliver()
    before = len(_calls(model))
    admin.set(f"{FOLDER}/c1", b"changed")
    model.deliver()
    assert kept.read() == {"c0": (b"v0", 0), "c1": (b"changed", 1), "c2": (b"v2", 0)}
    assert _calls(model)[before:] == [("get", f"{FOLDER}/c1")]


def test_a_new_child_costs_the_list_and_that_child() -> None:
    model, admin, _me, folder = _world()
    folder.read()
    before = len(_calls(model))
    admin.create(f"{FOLDER}/c9", b"new")
    model.deliver()
    assert _data(folder)["c9"] == b"new"
    assert _calls(model)[before:] == [("get_children", FOLDER), ("get", f"{FOLDER}/c9")]


def test_a_changed_child_costs_that_child_only() -> None:
    model, admin, _me, folder = _world()
    folder.read()
    before = len(_calls(model))
    admin.set(f"{FOLDER}/c1", b"changed")
    model.deliver()
    assert _data(folder)["c1"] == b"changed"
    assert _calls(model)[before:] == [("get", f"{FOLDER}/c1")]


def test_a_deleted_child_costs_the_list_only() -> None:
    model, admin, _me, folder = _world()
    folder.read()
    before = len(_calls(model))
    admin.delete(f"{FOLDER}/c0")
    model.deliver()
    assert sorted(_data(folder)) == ["c1", "c2"]
    assert _calls(model)[before:] == [("get_children", FOLDER)]


def test_deleted_and_created_again_between_reads_is_read_again() -> None:
    model, admin, _me, folder = _world()
    folder.read()
    admin.delete(f"{FOLDER}/c2")
    admin.create(f"{FOLDER}/c2", b"second incarnation")
    model.deliver()
    assert _data(folder)["c2"] == b"second incarnation"


def test_a_change_while_its_read_is_on_the_wire_is_not_hidden() -> None:
    """The child's watch fires after ZooKeeper answered but before the answer is stored: the
    answer is used for this read and the child is read again next time."""
    model, admin, _me, folder = _world()
    folder.read()
    admin.set(f"{FOLDER}/c1", b"one")
    model.deliver()
    real_many = folder.io.many

    def many_then_change(calls: Any, what: str) -> Any:
        answers = real_many(calls, what)
        admin.set(f"{FOLDER}/c1", b"two")  # after the answer "one" and its new watch
        model.deliver()
        return answers

    folder.io.many = many_then_change  # type: ignore[method-assign]
    assert _data(folder)["c1"] == b"one"
    folder.io.many = real_many  # type: ignore[method-assign]
    assert _data(folder)["c1"] == b"two"


def test_a_list_change_while_the_list_is_on_the_wire_is_not_hidden() -> None:
    model, admin, _me, folder = _world()
    real_children = folder.io.children

    def children_then_add(path: str, watch: Any = None) -> list[str]:
        names = real_children(path, watch=watch)
        admin.create(f"{FOLDER}/late", b"x")
        model.deliver()
        return names

    folder.io.children = children_then_add  # type: ignore[method-assign]
    assert "late" not in _data(folder)
    folder.io.children = real_children  # type: ignore[method-assign]
    assert "late" in _data(folder)


def test_a_dropped_link_makes_everything_stale() -> None:
    model, admin, me, folder = _world()
    folder.read()
    model.disconnect(me)  # kazoo fires every watch with NONE and forgets them
    model.deliver()
    admin.set(f"{FOLDER}/c0", b"while away")  # no watch of ours sees this
    model.reconnect(me)
    model.deliver()
    before = len(_calls(model))
    assert _data(folder)["c0"] == b"while away"
    assert len(_calls(model)) - before == 4


def test_a_lost_session_makes_everything_stale() -> None:
    model, admin, me, folder = _world()
    folder.read()
    model.expire(me)
    model.deliver()
    admin.delete(f"{FOLDER}/c1")
    model.reconnect(me)
    model.deliver()
    assert sorted(_data(folder)) == ["c0", "c2"]


def test_a_missing_folder_reads_empty_and_is_watched_for_its_creation() -> None:
    model = ZkModel()
    admin, me = model.client("admin"), model.client("me")
    admin.start()
    me.start()
    events: list[WatchedEvent] = []
    folder = WatchedFolder(ZkIO(me, 0.0), "/missing", on_change=events.append)
    assert folder.read() == {}
    assert folder.read() == {}
    assert [op for op, _ in _calls(model)] == ["get_children", "exists"]  # the second read asked nothing
    admin.ensure_path("/missing")
    admin.create("/missing/a", b"1")
    model.deliver()
    assert [e.type for e in events] == [EventType.CREATED]
    assert _data(folder) == {"a": b"1"}


def test_on_change_runs_after_the_cache_noted_the_change() -> None:
    model, admin, _me, folder = _world()
    seen: list[list[str]] = []
    folder.on_change = lambda _event: seen.append(folder.names())
    folder.read()
    admin.create(f"{FOLDER}/c7", b"x")
    model.deliver()
    assert seen == [["c0", "c1", "c2", "c7"]]  # the callback's own read already sees the new child


def test_invalidate_reads_everything_again() -> None:
    model, _admin, _me, folder = _world()
    folder.read()
    before = len(_calls(model))
    folder.invalidate()
    folder.read()
    assert len(_calls(model)) - before == 4


# ---- WatchedNodes ------------------------------------------------------------------------------


def test_watched_nodes_are_read_once_until_their_watch_fires() -> None:
    model, admin, me, _folder = _world()
    nodes = WatchedNodes(ZkIO(me, 0.0))
    paths = [f"{FOLDER}/c0", f"{FOLDER}/c1", f"{FOLDER}/gone"]
    assert {p: e and e[0] for p, e in nodes.read(paths).items()} == {paths[0]: b"v0", paths[1]: b"v1", paths[2]: None}
    before = len(_calls(model))
    nodes.read(paths)
    assert _calls(model)[before:] == [("get", paths[2])]  # only the missing one is asked again
    admin.set(paths[1], b"changed")
    admin.delete(paths[0])
    model.deliver()
    before = len(_calls(model))
    found = nodes.read(paths)
    assert found[paths[0]] is None and found[paths[1]] is not None and found[paths[1]][0] == b"changed"
    assert sorted(_calls(model)[before:]) == sorted(("get", p) for p in paths)


def test_watched_nodes_forget_what_is_not_asked_for() -> None:
    model, _admin, me, _folder = _world()
    nodes = WatchedNodes(ZkIO(me, 0.0))
    nodes.read([f"{FOLDER}/c0", f"{FOLDER}/c1"])
    nodes.read([f"{FOLDER}/c1"])
    before = len(_calls(model))
    nodes.read([f"{FOLDER}/c0", f"{FOLDER}/c1"])
    assert _calls(model)[before:] == [("get", f"{FOLDER}/c0")]


def test_watched_nodes_do_not_cache_an_answer_overtaken_by_a_change() -> None:
    model, admin, me, _folder = _world()
    nodes = WatchedNodes(ZkIO(me, 0.0))
    real_many = nodes.io.many

    def many_then_change(calls: Any, what: str) -> Any:
        answers = real_many(calls, what)
        admin.set(f"{FOLDER}/c0", b"after")
        model.deliver()
        return answers

    nodes.io.many = many_then_change  # type: ignore[method-assign]
    assert nodes.read([f"{FOLDER}/c0"])[f"{FOLDER}/c0"][0] == b"v0"  # type: ignore[index]
    nodes.io.many = real_many  # type: ignore[method-assign]
    assert nodes.read([f"{FOLDER}/c0"])[f"{FOLDER}/c0"][0] == b"after"  # type: ignore[index]


def test_forgotten_nodes_are_read_again_even_when_forgotten_mid_read() -> None:
    model, _admin, me, _folder = _world()
    nodes = WatchedNodes(ZkIO(me, 0.0))
    paths = [f"{FOLDER}/c0", f"{FOLDER}/c1"]
    nodes.read(paths)
    assert set(nodes.cached(paths)) == set(paths)
    nodes.forget([paths[0]])
    assert set(nodes.cached(paths)) == {paths[1]}  # no request, nothing else forgotten
    real_many = nodes.io.many

    def many_then_forget(calls: Any, what: str) -> Any:
        answers = real_many(calls, what)
        nodes.forget([paths[0]])  # while the answer is on its way in
        return answers

    nodes.io.many = many_then_forget  # type: ignore[method-assign]
    assert nodes.read(paths)[paths[0]] is not None  # this read still answers
    assert set(nodes.cached(paths)) == {paths[1]}  # but the answer read before the forget is not kept


def test_on_change_hears_only_nodes_still_vouched_for() -> None:
    """WatchedNodes.on_change: a change by someone else to a node we read is heard; one to a node we
    forgot (our own delete) or stopped asking about is not."""
    model, admin, me, _folder = _world()
    heard: list[tuple[str, str]] = []
    nodes = WatchedNodes(ZkIO(me, 0.0), on_change=lambda path, event: heard.append((path, event.type)))
    nodes.read([f"{FOLDER}/c0", f"{FOLDER}/c1", f"{FOLDER}/c2"])
    admin.delete(f"{FOLDER}/c0")  # someone else
    nodes.forget([f"{FOLDER}/c1"])  # we are about to delete it ourselves
    me.delete(f"{FOLDER}/c1")
    model.deliver()
    assert heard == [(f"{FOLDER}/c0", EventType.DELETED)]
    nodes.read([f"{FOLDER}/c2"])  # cached: no new watch, the old one still counts
    admin.set(f"{FOLDER}/c2", b"x")
    model.deliver()
    assert heard[-1] == (f"{FOLDER}/c2", EventType.CHANGED)
    nodes.add([f"{FOLDER}/c2"])  # read again after the change: watched again
    nodes.read([])  # no longer asked about
    admin.set(f"{FOLDER}/c2", b"y")
    model.deliver()
    assert len(heard) == 2
