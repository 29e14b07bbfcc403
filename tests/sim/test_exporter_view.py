"""The exporter's ClusterView on the in-memory ZooKeeper: verdicts right, and a refresh re-reads only what a watch said changed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from harness.zkmodel import ZkModel
from zkconsumer.admin import LagStatus, Ownership
from zkconsumer.exporter.view import ClusterView
from zkconsumer.partitions import TopicPartition
from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.client import ZkIO

TOPIC_NODE = b'{"version":1,"partitions":{"0":[1],"1":[1]}}'
REGISTRATION = b'{"version":1,"subscription":{"orders":1},"pattern":"static","timestamp":"1"}'


class Ends:
    """Log ends set by the test (the brokers' side)."""

    def __init__(self) -> None:
        self.ends: dict[TopicPartition, int] = {}
        self.reason: str | None = None
        self.asked: list[set[TopicPartition]] = []

    def read(self, keys: Iterable[TopicPartition]) -> Mapping[TopicPartition, int]:
        self.asked.append(set(keys))
        return {k: v for k, v in self.ends.items() if k in self.asked[-1]}


class Clock:
    """The model's logical clock (offset nodes' mtimes come from it), moved a second at a time."""

    def __init__(self, model: ZkModel) -> None:
        self.model = model

    def __call__(self) -> float:
        return self.model.now_ms / 1000.0

    def tick(self) -> None:
        self.model.advance(1000)


def _world(groups: re.Pattern[str] | None = None) -> tuple[ZkModel, Any, Any, ClusterView, Ends, Clock]:
    model = ZkModel()
    admin, member, exporter = model.client("admin"), model.client("member"), model.client("exporter")
    for client in (admin, member, exporter):
        client.start()
    admin.ensure_path(znodes.BROKER_TOPICS)
    admin.create(znodes.topic_path("orders"), TOPIC_NODE)
    # "live": a member owning both partitions, with commits; "idle": commits and no member
    member.create(znodes.member_path("live", "live_a"), REGISTRATION, ephemeral=True, makepath=True)
    for p in (0, 1):
        admin.create(znodes.offset_path("live", "orders", p), b"10", makepath=True)
        member.create(znodes.owner_path("live", "orders", p), b"live_a-0", ephemeral=True, makepath=True)
        admin.create(znodes.offset_path("idle", "orders", p), b"3", makepath=True)
    ends, clock = Ends(), Clock(model)
    ends.ends = {("orders", 0): 10, ("orders", 1): 12}
    view = ClusterView(ZkIO(exporter, 0.0), ends, window_s=10, interval_s=1, groups=groups, clock=clock)
    return model, admin, member, view, ends, clock


def _calls(model: ZkModel) -> list[tuple[str, str]]:
    return [(c.op, c.path) for c in model.calls if c.client == "exporter"]


def test_verdicts_of_a_live_group_and_a_group_without_members() -> None:
    _model, _admin, _member, view, _ends, _clock = _world()
    state = view.refresh()
    assert sorted(state.groups) == ["idle", "live"]
    live, idle = state.groups["live"], state.groups["idle"]
    assert live.last.member_kinds == {"live_a": "scala"}  # no zkconsumer marker
    assert {k: (v.lag, v.ownership) for k, v in live.verdict.partitions.items()} == {
        ("orders", 0): (0, Ownership.OWNED),
        ("orders", 1): (2, Ownership.OWNED),
    }
    assert live.verdict.total_lag == 2 and live.verdict.status is LagStatus.OK
    assert idle.last.member_kinds == {}
    assert {k: v.lag for k, v in idle.verdict.partitions.items()} == {("orders", 0): 7, ("orders", 1): 9}
    assert all(v.ownership is Ownership.UNOWNED for v in idle.verdict.partitions.values())
    assert idle.verdict.status is LagStatus.ERR  # nobody owns partitions whose messages wait


def test_an_unchanged_cluster_costs_no_request_and_a_commit_costs_one() -> None:
    model, admin, _member, view, ends, clock = _world()
    view.refresh()
    model.deliver()
    first = len(_calls(model))
    assert view.requests == first
    for _ in range(3):
        clock.tick()
        view.refresh()
    assert len(_calls(model)) == first, _calls(model)[first:]
    assert len(ends.asked) == 4  # log ends are asked every refresh, in one batch for every group
    assert ends.asked[-1] == {("orders", 0), ("orders", 1)}

    admin.set(znodes.offset_path("live", "orders", 1), b"12")
    model.deliver()
    clock.tick()
    state = view.refresh()
    assert _calls(model)[first:] == [("get", "/consumers/live/offsets/orders/1")]
    assert state.groups["live"].verdict.partitions[("orders", 1)].lag == 0
    assert len(state.groups["live"].samples) == 5
    assert view.requests == first + 1


def test_a_member_leaving_is_seen_and_costs_the_lists_only() -> None:
    model, _admin, member, view, _ends, clock = _world()
    view.refresh()
    model.deliver()
    before = len(_calls(model))
    member.stop()  # its session ends: registration and owner nodes go
    model.deliver()
    clock.tick()
    state = view.refresh()
    live = state.groups["live"]
    assert live.last.member_kinds == {}
    assert all(v.ownership is Ownership.UNOWNED for v in live.verdict.partitions.values())
    assert sorted(_calls(model)[before:]) == [
        ("get_children", "/consumers/live/ids"),
        ("get_children", "/consumers/live/owners/orders"),
    ]


def test_a_window_is_bounded_and_judged_by_burrows_rules() -> None:
    model, admin, _member, view, ends, clock = _world(groups=re.compile("live"))
    for step in range(15):  # the log grows, commits follow one behind: never caught up, lag grows
        ends.ends = {("orders", 0): 20 + 3 * step, ("orders", 1): 20 + 3 * step}
        admin.set(znodes.offset_path("live", "orders", 0), str(10 + 2 * step).encode())
        model.deliver()
        clock.tick()
        state = view.refresh()
    assert list(state.groups) == ["live"]  # --groups: "idle" is not watched
    live = state.groups["live"]
    assert len(live.samples) == view.max_samples == 11
    p0 = live.verdict.partitions[("orders", 0)]
    assert p0.status is LagStatus.WARN and p0.reason.startswith("slower than the producers")
    p1 = live.verdict.partitions[("orders", 1)]
    assert p1.status is LagStatus.STOP  # never committed in the window while messages wait
    assert p1.age is not None and p1.age.at_least  # waiting since before the window began


def test_a_new_group_and_a_deleted_group() -> None:
    model, admin, _member, view, _ends, clock = _world()
    view.refresh()
    admin.create(znodes.offset_path("later", "orders", 0), b"1", makepath=True)
    model.deliver()
    clock.tick()
    assert sorted(view.refresh().groups) == ["idle", "later", "live"]
    for path in [znodes.offset_path("idle", "orders", p) for p in (0, 1)] + [
        znodes.offsets_path("idle", "orders"),
        znodes.offsets_path("idle"),
        znodes.group_path("idle"),
    ]:
        admin.delete(path)
    model.deliver()
    clock.tick()
    assert sorted(view.refresh().groups) == ["later", "live"]


def test_log_ends_are_asked_only_for_partitions_the_brokers_list() -> None:
    """A group that once committed to a since-deleted topic (or past a topic's partition count):
    asking the brokers for those made librdkafka fail the whole batch, every group's lag unknown."""
    _model, admin, _member, view, ends, _clock = _world()
    admin.create(znodes.offset_path("idle", "gone", 0), b"5", makepath=True)
    admin.create(znodes.offset_path("idle", "orders", 7), b"5", makepath=True)
    state = view.refresh()
    assert ends.asked[-1] == {("orders", 0), ("orders", 1)}
    assert state.groups["live"].verdict.total_lag == 2  # the other groups' lag is still known
    idle = state.groups["idle"].verdict.partitions
    assert idle[("gone", 0)].lag is None and idle[("orders", 7)].lag is None
