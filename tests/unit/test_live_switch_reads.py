"""`migrate switch` under way (admin/live_switch.run_switch): a read the brokers cannot answer for a while is waited for, up to the deadline, not a half-way exit."""

from __future__ import annotations

import pytest

from zkconsumer.admin import live_switch
from zkconsumer.errors import AdminUnavailable
from zkconsumer.migration import Blocker, SwitchPlan
from zkconsumer.zookeeper.switch_node import SwitchNode

NODE = SwitchNode("/consumers/g/zkconsumer/switch", b"{}", 3)
WAITING = live_switch._Read(
    0, NODE, "handover", (), SwitchPlan("handover", "broker", (Blocker("seat-unassigned", "waiting"),))
)
THERE = live_switch._Read(0, NODE, "broker", (), SwitchPlan("broker", None, ()))
GONE = AdminUnavailable("cannot plan group g's offsets: the brokers gave no log offsets for 2 partition(s)")


def _scripted(monkeypatch: pytest.MonkeyPatch, answers: list[object]) -> list[object]:
    left = list(answers)

    def read(*args: object) -> object:
        answer = left.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(live_switch, "_read", read)
    return left


def test_a_read_the_brokers_cannot_answer_mid_switch_is_tried_again_and_the_switch_completes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    left = _scripted(monkeypatch, [WAITING, GONE, GONE, THERE])
    events: list[str] = []
    run = live_switch.run_switch(
        None,
        None,
        "g",
        "broker",
        timeout_s=30,
        poll_s=0.0,
        on_event=events.append,  # type: ignore[arg-type]
    )
    assert run.outcome == live_switch.COMPLETE and run.step == "broker" and not left
    assert [e for e in events if e.startswith("cannot read the group now")] == [
        f"cannot read the group now ({GONE}); reading again"
    ]


def test_past_the_deadline_the_unanswered_read_is_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, [WAITING, *[GONE] * 50])
    with pytest.raises(AdminUnavailable, match="gave no log offsets"):
        live_switch.run_switch(None, None, "g", "broker", timeout_s=0.05, poll_s=0.01)  # type: ignore[arg-type]


def test_the_first_read_failing_is_the_operators_to_see_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    left = _scripted(monkeypatch, [GONE, THERE])
    with pytest.raises(AdminUnavailable):
        live_switch.run_switch(None, None, "g", "broker", timeout_s=30, poll_s=0.0)  # type: ignore[arg-type]
    assert left == [THERE]
