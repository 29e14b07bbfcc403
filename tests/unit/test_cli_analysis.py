"""Problem detection behind describe/verify/top, on hand-built group states (no ZooKeeper)."""

from __future__ import annotations

from zkconsumer.admin import GroupSnapshot, RateTracker
from zkconsumer.group_problems import (
    AFTER_END,
    BAD_OFFSET,
    BAD_OWNER,
    BAD_REGISTRATION,
    BEFORE_START,
    DUPLICATE_MEMBER,
    DUPLICATE_SUBSCRIPTION,
    FOREIGN_SESSION,
    NO_PARTITION,
    NOT_SUBSCRIBED,
    UNOWNED,
    ZOMBIE,
    Member,
    Owner,
    analyse,
    duplicate_subscription_keys,
    member_problems,
)
from zkconsumer.zookeeper.znodes import Registration


def reg(**counts: int) -> Registration:
    return Registration(tuple(counts.items()), "static", "1700000000000")


def kinds(rows, topic: str, partition: int) -> list[str]:  # type: ignore[no-untyped-def]
    return [p.kind for r in rows if (r.topic, r.partition) == (topic, partition) for p in r.problems]


def test_a_healthy_group_has_no_problems_and_correct_lag() -> None:
    members = {"g_a": Member("g_a", 0x10, reg(t=1), {"t": ["g_a-0"]})}
    owners = {("t", 0): Owner("g_a-0", 0x10), ("t", 1): Owner("g_a-0", 0x10)}
    rows = analyse(members, owners, {("t", 0): 5, ("t", 1): 7}, {"t": [0, 1]}, {("t", 0): (0, 9), ("t", 1): (7, 7)})
    assert [(r.partition, r.offset, r.log_end, r.lag, r.consumer_id, r.problems) for r in rows] == [
        (0, 5, 9, 4, "g_a", []),
        (1, 7, 7, 0, "g_a", []),
    ]


def test_each_problem_is_flagged_on_its_partition() -> None:
    members = {"g_a": Member("g_a", 0x10, reg(t=1), {"t": ["g_a-0"]})}
    owners = {
        ("t", 1): Owner("g_ghost-0", 0x99),  # zombie: not registered
        ("t", 2): Owner("g_a-3", 0x10),  # not one of g_a's threads
        ("t", 3): Owner("g_a-0", 0x11),  # another session than the member's
        ("t", 4): Owner("garbage", 0x10),
    }  # not a thread id
    offsets = {("t", 0): 500, ("t", 1): 1, ("t", 2): 3, ("t", 3): 3, ("t", 4): 3, ("gone", 0): 12}
    rows = analyse(
        members,
        owners,
        offsets,
        {"t": [0, 1, 2, 3, 4]},
        {("t", p): (2, 100) for p in range(5)},
        bad_offsets={("t", 5): "offset 'x' is not..."},
    )
    assert kinds(rows, "t", 0) == [UNOWNED, AFTER_END]
    assert kinds(rows, "t", 1) == [ZOMBIE, BEFORE_START]
    assert kinds(rows, "t", 2) == [NOT_SUBSCRIBED]
    assert kinds(rows, "t", 3) == [FOREIGN_SESSION]
    assert kinds(rows, "t", 4) == [BAD_OWNER]
    assert kinds(rows, "t", 5) == [BAD_OFFSET, NO_PARTITION]  # garbled offset of a partition the topic lacks
    assert kinds(rows, "gone", 0) == [NO_PARTITION]  # offsets of a deleted topic


def test_an_inactive_group_flags_nothing_unowned() -> None:
    rows = analyse({}, {}, {("t", 0): 3}, {"t": [0, 1]}, {})
    assert [(r.partition, r.offset, r.lag, r.problems) for r in rows] == [(0, 3, None, []), (1, None, None, [])]


def test_out_of_range_checks_need_known_log_offsets() -> None:
    rows = analyse({}, {}, {("t", 0): 500}, {"t": [0]}, {("t", 0): (0, 10)}, log_offsets_known=False)
    assert rows[0].problems == []


def test_member_level_problems() -> None:
    members = {
        "g_a": Member("g_a", 0x10, reg(t=1), {"t": ["g_a-0"]}),
        "g_b": Member("g_b", 0x10, reg(t=1), {"t": ["g_b-0"]}),
        "g_c": Member("g_c", 0x12, None, error="not valid JSON"),
    }
    problems = member_problems(members, {"g_a": ["t"]})
    assert [p.kind for p in problems] == [DUPLICATE_SUBSCRIPTION, BAD_REGISTRATION, DUPLICATE_MEMBER]
    assert "g_a, g_b" in problems[-1].detail


def test_duplicate_subscription_keys() -> None:
    assert duplicate_subscription_keys(
        b'{"version":1,"subscription":{"t":1,"u":2,"t":3},"pattern":"static","timestamp":"1"}'
    ) == ["t"]
    assert duplicate_subscription_keys(b'{"version":1,"subscription":{"t":1},"pattern":"static"}') == []
    assert duplicate_subscription_keys(b"{not json") == []


def test_idle_members_and_json_shape() -> None:
    members = {"g_a": Member("g_a", 1, reg(t=1), {"t": ["g_a-0"]}), "g_b": Member("g_b", 2, reg(t=1), {"t": ["g_b-0"]})}
    rows = analyse(members, {("t", 0): Owner("g_a-0", 1)}, {("t", 0): 4}, {"t": [0]}, {("t", 0): (0, 6)})
    snap = GroupSnapshot("g", members, rows, [], 0.0, None)
    assert [m.consumer_id for m in snap.idle_members()] == ["g_b"]
    doc = snap.as_dict()
    assert doc["total_lag"] == 2 and doc["idle_members"] == ["g_b"]
    assert doc["partitions"][0] == {
        "topic": "t",
        "partition": 0,
        "current_offset": 4,
        "log_start_offset": 0,
        "log_end_offset": 6,
        "lag": 2,
        "owner": "g_a-0",
        "consumer_id": "g_a",
        "problems": [],
    }
    assert doc["members"][0]["subscription"] == "t:1" and doc["members"][0]["owned_partitions"] == 1


def test_rates_come_from_offset_and_log_end_deltas() -> None:
    tracker = RateTracker()

    def snap(at: float, offset: int, end: int) -> GroupSnapshot:
        return GroupSnapshot("g", {}, analyse({}, {}, {("t", 0): offset}, {"t": [0]}, {("t", 0): (0, end)}), [], at)

    assert tracker.update(snap(100.0, 10, 20)) == {}
    assert tracker.update(snap(102.0, 30, 60)) == {("t", 0): (20.0, 10.0)}
