"""A tick of many groups sampled a slice at a time: a commit made during it is shown between two slices, and only its group is rendered again."""

from __future__ import annotations

import pytest

from harness.zkmodel import ZkModel
from zkconsumer.exporter import view as view_module
from zkconsumer.exporter.exporter import Exporter
from zkconsumer.exporter.view import ViewState
from zkconsumer.zookeeper import znodes

TOPIC_NODE = b'{"version":1,"partitions":{"0":[1],"1":[1]}}'
GROUPS = ("a", "b", "c")


def _world() -> tuple[ZkModel, object, Exporter]:
    model = ZkModel()
    admin, client = model.client("admin"), model.client("exporter")
    admin.start()
    client.start()
    admin.ensure_path(znodes.BROKER_TOPICS)
    admin.create(znodes.topic_path("orders"), TOPIC_NODE)
    for group in GROUPS:
        for partition in (0, 1):
            admin.create(znodes.offset_path(group, "orders", partition), b"5", makepath=True)
    exporter = Exporter(
        client, None, host="127.0.0.1", port=0, interval_s=1.0, window_s=10.0, zk_timeout_s=0.0,
        expire_group_after_s=None,
    )  # fmt: skip
    exporter.settle_s = 0.0
    return model, admin, exporter


def _offset(state: ViewState, group: str, partition: int = 0) -> int | None:
    return state.groups[group].last.sample.partitions[("orders", partition)].committed


def test_a_commit_during_a_tick_is_shown_before_the_tick_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(view_module, "SLICE_PARTITIONS", 2)  # a group (two partitions) a slice
    model, admin, exporter = _world()
    exporter.refresh_once()  # the first tick: every group's partitions known
    model.deliver()
    assert [_offset(exporter.view.state, g) for g in GROUPS] == [5, 5, 5]
    published: list[ViewState] = []
    publish, tick_slice = exporter._publish, exporter.view.tick_slice

    def publish_and_note(state: ViewState) -> None:
        published.append(state)
        publish(state)

    def slice_then_commit(names: list[str], **kinds: bool) -> ViewState:
        state = tick_slice(names, **kinds)
        if names == ["a"]:  # group c commits while the tick is at its first slice
            admin.set(znodes.offset_path("c", "orders", 0), b"9")  # type: ignore[attr-defined]
            model.deliver()  # its watch fires: the exporter hears of it (kazoo's thread)
        return state

    monkeypatch.setattr(exporter, "_publish", publish_and_note)
    monkeypatch.setattr(exporter.view, "tick_slice", slice_then_commit)
    rendered = exporter._lines.rendered
    exporter.refresh_once()
    assert len(published) == 2, "the commit was not shown between two slices of the tick"
    between, end = published
    assert _offset(between, "c") == 9  # shown before c's own slice of the tick
    assert between.groups["b"] is not end.groups["b"]  # b was sampled after it
    assert _offset(end, "c") == 9
    # rendered again: between the slices a (its slice) and c (its commit), not b; at the end b and c
    # (their slices), not a (its lines kept since)
    assert exporter._lines.rendered - rendered == 4


def test_a_tick_in_slices_reads_what_one_slice_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slicing costs no ZooKeeper request: the topics of the other slices stay watched."""
    counts = []
    for slice_partitions in (10_000, 2):
        monkeypatch.setattr(view_module, "SLICE_PARTITIONS", slice_partitions)
        model, admin, exporter = _world()
        exporter.refresh_once()
        model.deliver()
        first = exporter.view.requests
        exporter.refresh_once()
        admin.set(znodes.offset_path("b", "orders", 1), b"7")  # type: ignore[attr-defined]
        model.deliver()
        exporter.refresh_once()
        counts.append((first, exporter.view.requests - first))
        assert (_offset(exporter.view.state, "b"), _offset(exporter.view.state, "b", 1)) == (5, 7)
    assert counts[0] == counts[1]
    assert counts[1][1] == 1  # the offset node that changed, nothing else
