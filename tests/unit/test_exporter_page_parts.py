"""The exporter page's pure parts: the lag history's ring, the overview and history documents, what to do, the shipped files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.admin import GroupVerdict, LagStatus, Ownership, PartitionVerdict, group_status
from zkconsumer.exporter import api, page
from zkconsumer.exporter.advice import what_to_do
from zkconsumer.exporter.group_watch import GroupNodes
from zkconsumer.exporter.history import LagHistory
from zkconsumer.exporter.sampling import Topic, group_sample
from zkconsumer.exporter.view import GroupState, ViewState
from zkconsumer.exporter.window import GroupWindow

ROOT = Path(__file__).resolve().parents[2]
REGISTRATION = b'{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1"}'


def _verdict(total: int, status: LagStatus = LagStatus.OK) -> GroupVerdict:
    """A group of one owned partition whose lag is `total`."""
    partition = PartitionVerdict(status, "", total, None, Ownership.OWNED)
    return GroupVerdict(status, (), {("t", 0): partition}, total)


@given(st.lists(st.integers(1, 20_000), min_size=1, max_size=400), st.sampled_from([1.0, 5.0, 10.0]))
def test_the_ring_keeps_the_last_hour_a_point_per_step_and_the_newest_refresh(gaps: list[int], interval: float) -> None:
    history = LagHistory(interval, span_s=600, max_points=60)
    at = 1_000_000
    recorded = []
    for i, gap in enumerate(gaps):
        at += gap
        history.record(at, {"g": _verdict(i)})
        recorded.append((at, i))
    points = history.points("g")
    assert points is not None
    assert len(points["at_ms"]) <= history.capacity == int(600 / history.step_s) + 1
    assert (points["at_ms"][-1], points["lag"][-1]) == recorded[-1]  # the newest point is the last refresh
    assert points["at_ms"] == sorted(points["at_ms"])
    step_ms = history.step_s * 1000
    assert all(b - a >= step_ms for a, b in zip(points["at_ms"][:-2], points["at_ms"][1:-1]))
    assert set(zip(points["at_ms"], points["lag"])) <= set(recorded)
    if len(points["at_ms"]) < history.capacity:  # not wrapped: nothing older was dropped
        assert points["at_ms"][0] == recorded[0][0]


def test_a_group_gone_from_the_view_is_forgotten_and_unknowns_are_none() -> None:
    history = LagHistory(10)
    nodes = GroupNodes({}, {("t", 0): (b"3", 1, 1)}, {}, frozenset(), frozenset({"t"}))
    unknown = group_status([group_sample("g", nodes, {"t": Topic((0,), 1)}, {"t"}, {}, 5).sample])
    history.record(1_000, {"g": unknown, "h": _verdict(4)})
    assert history.points("g") == {
        "span_s": 3600.0, "step_s": 10, "at_ms": [1_000], "lag": [None], "max_lag_seconds": [None], "status": [2],
    }  # fmt: skip
    history.record(2_000, {"h": _verdict(5, LagStatus.ERR)})
    assert history.points("g") is None and len(history) == 1
    assert history.points("h")["lag"] == [4, 5] and history.points("h")["status"] == [1, 3]  # type: ignore[index]
    assert LagHistory(1).step_s == 5 and LagHistory(1).capacity == 721  # one point per 5 s at most


def _state() -> ViewState:
    members = {"g_scala": (REGISTRATION, 7), "g_zk": (REGISTRATION, 8)}
    owners = {("t", 0): (b"g_scala-0", 7), ("t", 1): (b"g_zk-0", 8), ("t", 3): (b"g_gone-0", 9)}
    offsets = {("t", p): (str(p).encode(), 10 + p, 1_000 + p) for p in range(4)}
    nodes = GroupNodes(members, offsets, owners, frozenset({"g_zk"}), frozenset({"t"}))
    taken = group_sample("g", nodes, {"t": Topic((0, 1, 2, 3), 1)}, {"t"}, {("t", p): 10 for p in range(4)}, 5_000)
    return ViewState(
        5_000, {"g": GroupState("g", GroupWindow.of([taken]).snapshot(), group_status([taken.sample]))}, 10.0
    )


def test_the_overview_holds_every_partition_in_columns_with_owners_kinds_and_what_to_do() -> None:
    registered = [{"id": "g_zk", "session": "0x8", "registered_ms": 3, "pattern": "static"}]
    code, kind, body = api.answer("/v1/groups/g/overview", _state(), {}, LagHistory(10), lambda g: registered)  # type: ignore[misc]
    doc = json.loads(body)
    assert (code, kind, doc["group"], doc["status"]) == (200, "application/json", "g", "ERR")
    (topic,) = doc["topics"]
    assert topic["partition"] == [0, 1, 2, 3] and topic["lag"] == [10, 9, 8, 7]
    assert [doc["owners"][i] if i >= 0 else None for i in topic["owner"]] == ["g_scala-0", "g_zk-0", None, "g_gone-0"]
    assert [doc["ownerships"][i] for i in topic["ownership"]] == ["owned", "owned", "unowned", "owner-gone"]
    assert [doc["statuses"][i] for i in topic["status"]] == ["OK", "OK", "ERR", "ERR"]
    assert doc["members"] == [{"id": "g_scala", "kind": "scala"}, {**registered[0], "kind": "zkconsumer"}]
    assert any("groups rebalance --group g" in step for step in doc["what_to_do"])


def test_history_and_unknown_groups_answer_like_the_rest_of_the_api() -> None:
    state, history = _state(), LagHistory(10)
    code, _, body = api.answer("/v1/groups/g/history", state, {}, history)  # type: ignore[misc]
    assert code == 200 and json.loads(body)["lag"] == []  # known group, no point recorded yet
    history.record(5_000, {"g": state.groups["g"].verdict})
    code, _, body = api.answer("/v1/groups/g/history", state, {}, history)  # type: ignore[misc]
    assert code == 200 and json.loads(body)["lag"] == [34]
    code, _, body = api.answer("/v1/groups/nope/overview", state, {}, history)  # type: ignore[misc]
    assert code == 404 and "nope" in json.loads(body)["message"]
    assert api.answer("/v1/groups/g/nothing", state, {}) is None


def test_what_to_do_names_the_command_for_each_problem() -> None:
    assert what_to_do("g", _verdict(0), ["m"], []) == []
    stopped = what_to_do("g", _verdict(5, LagStatus.OK), [], [])
    assert len(stopped) == 1 and "zkconsumer groups delete --group g" in stopped[0]
    assert "look at those members" in what_to_do("g", _verdict(5, LagStatus.STOP), ["m"], [])[0]
    assert "decoded" in what_to_do("g", _verdict(0), ["m"], ["/consumers/g/offsets/t/x: bad"])[0]
    # A group name is one shell word in the commands the page shows (it was pasted as several).
    gone = what_to_do("a b;rm -rf ~", _verdict(5, LagStatus.OK), [], [])[0]
    assert "zkconsumer groups delete --group 'a b;rm -rf ~')" in gone


def test_the_page_ships_in_the_package_and_loads_nothing_from_elsewhere() -> None:
    html = page.asset("/")
    assert html is not None and html[1].startswith("text/html")
    linked = set(re.findall(rb'(?:src|href)="([^"#]+)"', html[2]))
    assert linked == {b"/ui/page.js", b"/ui/page.css"}
    for path in linked:
        found = page.asset(path.decode())
        assert found is not None and found[0] == 200
        assert not re.search(rb"https?://", found[2]), path  # nothing from a CDN or any other host
    assert page.asset("/favicon.ico") is None
    assert "zkconsumer.exporter.page = *.html, *.js, *.css" in (ROOT / "setup.cfg").read_text()


def test_an_unreadable_registration_is_named_once() -> None:
    """The decoder's error already names the node: the problem line once read "<path>: <path>: ..."."""
    from zkconsumer.exporter.sampling import subscribed_topics

    problems: list[str] = []
    assert subscribed_topics("g", {"x": (b"not json", 1)}, ["orders"], problems) == set()
    assert len(problems) == 1 and problems[0].count("/consumers/g/ids/x") == 1, problems


def test_the_page_asks_whether_anything_is_new_for_a_few_bytes() -> None:
    """/v1/refreshed: the page polls it twice a second and draws again only when the view moved."""
    state = _state()
    code, kind, body = api.answer("/v1/refreshed?x=1", state, {})  # type: ignore[misc]
    assert (code, kind) == (200, api.JSON) and len(body) < 64
    assert json.loads(body) == {"refreshed_at_ms": state.at_ms, "interval_s": state.interval_s}
    assert api.answer("/v1/refreshed/more", state, {}) is None
