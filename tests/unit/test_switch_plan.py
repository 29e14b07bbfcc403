"""The live switch's pure planning (zkconsumer/migration/switch.py): the switch node, who can switch, what blocks a step."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.migration import (
    SWITCH_REFUSALS,
    SWITCH_STEPS,
    SwitchMember,
    SwitchNodeError,
    decode_switch_node,
    encode_switch_node,
    plan_switch,
    plan_switch_back,
)
from zkconsumer.migration.model import KafkaMember, KafkaSide
from zkconsumer.migration.switch import SEAT_CLIENT_SUFFIX

PATH = "/consumers/g/zkconsumer/switch"
P0, P1 = ("t", 0), ("t", 1)


def member(cid: str, seen: str = "zookeeper", broker_id: str | None = None, protocol: int = 1) -> SwitchMember:
    marker = {
        "version": 1,
        "library": "zkconsumer",
        "switch": {"protocol": protocol, "seen": seen, "broker_member_id": broker_id},
    }
    return SwitchMember(cid, marker)


def codes(plan) -> set[str]:  # type: ignore[no-untyped-def]
    return {b.code for b in plan.blockers}


@given(st.sampled_from(SWITCH_STEPS), st.text(max_size=20), st.integers(0, 2**62))
def test_the_switch_node_round_trips(step: str, by: str, at: int) -> None:
    assert decode_switch_node(encode_switch_node(step, by, at), PATH) == step


@pytest.mark.parametrize(
    "data", [b"", b"{", b"[]", b'{"version":2,"step":"broker"}', b'{"version":1,"step":"kraft"}', b"\xff"]
)
def test_a_switch_node_no_zkconsumer_writes_is_refused_naming_it(data: bytes) -> None:
    with pytest.raises(SwitchNodeError, match=PATH):
        decode_switch_node(data, PATH)
    assert decode_switch_node(None, PATH) == "zookeeper"


def test_scala_and_older_members_are_refused_by_name() -> None:
    members = (
        SwitchMember("g_scala1", None),
        SwitchMember("g_old", {"version": 1, "library": "zkconsumer"}),
        member("g_new"),
    )
    plan = plan_switch("zookeeper", members, {}, {}, KafkaSide(), (P0,))
    assert plan.next == "joining"
    messages = {b.code: b.message for b in plan.blockers}
    assert "g_scala1" in messages["scala-member"] and "g_old" in messages["old-member"]
    assert "g_new" not in " ".join(messages.values())
    assert codes(plan_switch("zookeeper", (member("g_new"),), {}, {}, KafkaSide(), (P0,))) == set()


def test_a_running_spark_ingest_job_is_refused_naming_its_topics_at_every_step_forward() -> None:
    for step in SWITCH_STEPS[:-1]:
        plan = plan_switch(step, (member("g_a", step),), {}, {}, KafkaSide(), (P0,), ingest_topics=("t", "s"))
        found = {b.code: b.message for b in plan.blockers}
        assert "spark-ingest" in SWITCH_REFUSALS and "runs for s, t" in found["spark-ingest"]
    back = plan_switch_back("joining", (member("g_a", "joining"),), {}, {}, KafkaSide(), (P0,))
    assert back.blockers == ()


def test_kafka_ahead_and_foreign_broker_members_block_the_start() -> None:
    stranger = KafkaMember("rdkafka-1", "someone", "/10.0.0.9")
    plan = plan_switch("zookeeper", (member("g_a"),), {}, {P0: 5}, KafkaSide("Stable", (stranger,), {P0: 9}), (P0,))
    assert codes(plan) == {"kafka-ahead", "foreign-broker-member"}
    assert next(b for b in plan.blockers if b.code == "kafka-ahead").partitions == (P0,)


def test_joining_waits_for_every_member_in_the_brokers_group() -> None:
    a, b = member("g_a", "joining", "m-a"), member("g_b", "joining", None)
    kafka = KafkaSide("Stable", (KafkaMember("m-a", "g", "h"),))
    plan = plan_switch("joining", (a, b), {}, {}, kafka, (P0,))
    assert plan.next == "handover" and codes(plan) == {"not-in-broker-group"}
    assert "g_b" in plan.blockers[0].message


def test_the_handover_completes_only_with_owners_where_the_brokers_say_and_equal_offsets() -> None:
    a, b = member("g_a", "handover", "m-a"), member("g_b", "handover", "m-b")
    kafka = KafkaSide(
        "Stable", (KafkaMember("m-a", "g", "h", (P0,)), KafkaMember("m-b", "g", "h", (P1,))), {P0: 3, P1: 4}
    )
    good = plan_switch("handover", (a, b), {P0: "g_a-0", P1: "g_b-0"}, {P0: 3, P1: 4}, kafka, (P0, P1))
    assert good.next == "broker" and good.blockers == ()
    swapped = plan_switch("handover", (a, b), {P0: "g_b-0", P1: "g_b-0"}, {P0: 3, P1: 5}, kafka, (P0, P1))
    found = {blk.code: blk.partitions for blk in swapped.blockers}
    assert found == {"handover-pending": (P0,), "offsets-differ": (P1,)}
    assert plan_switch("broker", (a, b), {}, {}, kafka, (P0,)).next is None


@given(
    st.dictionaries(st.sampled_from([P0, P1]), st.integers(0, 5)),
    st.dictionaries(st.sampled_from([P0, P1]), st.integers(0, 5)),
)
def test_broker_is_never_next_while_any_offset_differs(zk: dict, kafka_offsets: dict) -> None:  # type: ignore[type-arg]
    a = member("g_a", "handover", "m-a")
    kafka = KafkaSide("Stable", (KafkaMember("m-a", "g", "h", (P0, P1)),), kafka_offsets)
    plan = plan_switch("handover", (a,), {P0: "g_a-0", P1: "g_a-1"}, zk, kafka, (P0, P1))
    assert (plan.blockers == ()) == (zk.get(P0) == kafka_offsets.get(P0) and zk.get(P1) == kafka_offsets.get(P1))


def test_migrate_plan_lists_each_blocker_with_at_most_ten_partitions_and_says_when_complete() -> None:
    from zkconsumer.cli.output.migrate import switch_dict, switch_lines

    parts = tuple(("t", p) for p in range(12))
    kafka = KafkaSide("Stable", (KafkaMember("m-1", "c", "/h", parts),), {tp: 5 for tp in parts})
    plan = plan_switch("handover", (member("a", "handover", "m-1"),), {}, {tp: 5 for tp in parts}, kafka, parts)
    lines = switch_lines(plan)
    assert lines[0] == "Live switch: step handover, next broker, blocked:"
    shown = ", ".join(f"t-{p}" for p in range(10))
    assert lines[1:] == [
        f"  BLOCKER handover-pending: partitions not yet held by the member the brokers assigned them to: {shown}"
        " and 2 more"
    ]
    assert switch_dict(plan)["blocked"] is True and len(switch_dict(plan)["blockers"][0]["partitions"]) == 12
    done = plan_switch("broker", (), {}, {}, KafkaSide("Stable", (), {}), ())
    assert switch_lines(done) == ["Live switch: step broker, complete (the brokers coordinate the group)"]
    assert switch_dict(done) == {"step": "broker", "next": None, "blocked": False, "blockers": []}


def test_the_way_back_goes_one_step_at_a_time_and_refuses_nobody() -> None:
    scala, old = SwitchMember("g_scala", None), SwitchMember("g_old", {"version": 1, "library": "zkconsumer"})
    kafka = KafkaSide("Stable", (), {P0: 3})
    steps = [plan_switch_back(step, (scala, old), {P0: "g_old-0"}, {P0: 3}, kafka, (P0,)) for step in SWITCH_STEPS]
    assert [p.next for p in steps] == [None, "zookeeper", "joining", "handover"]
    assert all(p.blockers == () for p in steps)  # Scala and older members run on ZooKeeper: no refusal back


def test_a_step_back_waits_for_members_to_act_on_the_current_step_and_for_the_handover() -> None:
    a, b = member("g_a", "broker", "m-a"), member("g_b", "handover", "m-b")
    back = plan_switch_back("broker", (a, b), {}, {}, KafkaSide(), (P0,))
    assert back.next == "handover" and codes(back) == {"member-behind"} and "g_b" in back.blockers[0].message
    a, b = member("g_a", "handover", "m-a"), member("g_b", "handover", "m-b")
    kafka = KafkaSide("Stable", (KafkaMember("m-a", "g", "h", (P0,)), KafkaMember("m-b", "g", "h", (P1,))), {P0: 3})
    pending = plan_switch_back("handover", (a, b), {P0: "g_a-0"}, {P0: 3, P1: 1}, kafka, (P0, P1))
    found = {blk.code: blk.partitions for blk in pending.blockers}
    assert pending.next == "joining" and found == {"handover-pending": (P1,), "offsets-differ": (P1,)}
    # Partitions the brokers assign to nobody (every member gone) wait for no owner node.
    empty = plan_switch_back("handover", (), {}, {P0: 3}, KafkaSide("Empty", (), {P0: 3}), (P0,))
    assert empty.next == "joining" and empty.blockers == ()


@given(
    st.sampled_from(SWITCH_STEPS),
    st.lists(st.sampled_from(SWITCH_STEPS), max_size=3),
    st.dictionaries(st.sampled_from([P0, P1]), st.integers(0, 3)),
    st.dictionaries(st.sampled_from([P0, P1]), st.integers(0, 3)),
)
def test_no_step_back_is_refused_and_one_forward_is_refused_only_for_a_member_that_cannot_switch(
    step: str,
    seen: list[str],
    zk: dict,  # type: ignore[type-arg]
    kafka_offsets: dict,  # type: ignore[type-arg]
) -> None:
    members = tuple(member(f"g_{i}", s, f"m-{i}") for i, s in enumerate(seen))
    kafka = KafkaSide("Stable", tuple(KafkaMember(f"m-{i}", "g", "h") for i in range(len(seen))), kafka_offsets)
    back = plan_switch_back(step, members, {}, zk, kafka, (P0, P1))
    assert not {b.code for b in back.blockers} & set(SWITCH_REFUSALS)
    assert back.next == (None if step == "zookeeper" else SWITCH_STEPS[SWITCH_STEPS.index(step) - 1])
    ahead = any(kafka_offsets[tp] > zk.get(tp, -1) for tp in kafka_offsets)
    forward = plan_switch(step, members, {}, zk, kafka, (P0, P1))
    assert ({b.code for b in forward.blockers} & set(SWITCH_REFUSALS)) == (
        {"kafka-ahead"} if step == "zookeeper" and ahead else set()
    )


def test_a_members_seat_that_joined_before_its_marker_names_it_is_waited_for_not_refused() -> None:
    # The seat joins the brokers' group before the member can write its member id into its marker.
    seat = KafkaMember("rdkafka-7", f"g_a{SEAT_CLIENT_SUFFIX}", "/10.0.0.1")
    plan = plan_switch("joining", (member("g_a", "zookeeper"),), {}, {}, KafkaSide("Stable", (seat,)), (P0,))
    assert codes(plan) == {"member-behind", "not-in-broker-group"}
    # A member that cannot switch is refused as such (its seat is not what stops the switch).
    old = plan_switch("joining", (member("g_a", protocol=0),), {}, {}, KafkaSide("Stable", (seat,)), (P0,))
    assert "old-member" in codes(old)


def test_a_seat_whose_member_is_not_registered_now_is_waited_for_and_a_stranger_is_refused() -> None:
    # A member whose session expired registers again; meanwhile its seat is still in the brokers'
    # group (seen in scripts/bench/live_switch.py --fault expire: the command refused it as foreign).
    seat = KafkaMember("rdkafka-7", f"g_gone{SEAT_CLIENT_SUFFIX}", "/10.0.0.1")
    stranger = KafkaMember("rdkafka-8", "billing-app", "/10.0.0.2")
    plan = plan_switch("joining", (member("g_a", "joining"),), {}, {}, KafkaSide("Stable", (seat,)), (P0,))
    assert codes(plan) == {"seat-unregistered", "not-in-broker-group"}
    assert "seat-unregistered" not in SWITCH_REFUSALS
    both = plan_switch("joining", (member("g_a", "joining"),), {}, {}, KafkaSide("Stable", (seat, stranger)), (P0,))
    found = {b.code: b.message for b in both.blockers}
    assert "billing-app" in found["foreign-broker-member"] and "g_gone" not in found["foreign-broker-member"]


def test_the_handover_waits_for_the_brokers_group_to_settle() -> None:
    """Seen in the audit (2026-12-08): the command wrote `handover` between cooperative-sticky's two
    rebalances (one seat still held every partition, revoking); the members' commits as group members
    were refused with ILLEGAL_GENERATION and their releases waited a back-off: the group was silent
    2.4 s and partitions had gaps of up to 4.6 s."""
    a, b = member("g_a", "joining", "m-a"), member("g_b", "joining", "m-b")
    whole = KafkaSide("Stable", (KafkaMember("m-a", "g", "h", (P0,)), KafkaMember("m-b", "g", "h", (P1,))))
    assert plan_switch("joining", (a, b), {}, {}, whole, (P0, P1)).blockers == ()
    rebalancing = KafkaSide("PreparingRebalance", whole.members)
    plan = plan_switch("joining", (a, b), {}, {}, rebalancing, (P0, P1))
    assert codes(plan) == {"broker-group-settling"} and "PreparingRebalance" in plan.blockers[0].message
    half = KafkaSide("Stable", (KafkaMember("m-a", "g", "h", (P0,)), KafkaMember("m-b", "g", "h", ())))
    plan = plan_switch("joining", (a, b), {}, {}, half, (P0, P1))
    assert codes(plan) == {"broker-group-settling"} and plan.blockers[0].partitions == (P1,)
    twice = KafkaSide("Stable", (KafkaMember("m-a", "g", "h", (P0, P1)), KafkaMember("m-b", "g", "h", (P1,))))
    assert plan_switch("joining", (a, b), {}, {}, twice, (P0, P1)).blockers[0].partitions == (P1,)
    assert "broker-group-settling" not in SWITCH_REFUSALS  # waited for, never refused
    # a group with no member has no brokers' group to wait for (the way on stops at `handover`)
    assert plan_switch("joining", (), {}, {}, KafkaSide("Empty"), (P0, P1)).blockers == ()


@given(st.lists(st.sets(st.integers(0, 3)), min_size=1, max_size=3), st.sampled_from(["Stable", "CompletingRebalance"]))
def test_the_handover_starts_only_with_each_partition_assigned_to_exactly_one_seat(
    assignments: list[set[int]], state: str
) -> None:
    members = tuple(member(f"g_{i}", "joining", f"m-{i}") for i in range(len(assignments)))
    kafka = KafkaSide(
        state,
        tuple(KafkaMember(f"m-{i}", "g", "h", tuple(("t", p) for p in sorted(a))) for i, a in enumerate(assignments)),
    )
    partitions = tuple(("t", p) for p in range(4))
    plan = plan_switch("joining", members, {}, {}, kafka, partitions)
    counts = [sum(p in a for a in assignments) for p in range(4)]
    settled = state == "Stable" and all(c == 1 for c in counts)
    assert (plan.blockers == ()) == settled
