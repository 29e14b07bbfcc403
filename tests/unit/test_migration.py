"""The migration planner (migration.py, migration_status.py) on hand-built sides: per-partition actions, blockers, the step, Spark's JSON."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkconsumer.migration import (
    ALLOW_REWIND,
    CLAMP,
    CLAMP_TO_LOG_END,
    COPY,
    EQUAL,
    FORCE_LIVE_SOURCE,
    FORCE_LIVE_TARGET,
    NO_OFFSET,
    REFUSE_OUT_OF_RANGE,
    REFUSE_OWNED,
    REFUSE_REWIND,
    REWIND,
    SCALA,
    SOURCE_ONLY,
    TARGET_ONLY,
    TO_KAFKA,
    TO_ZOOKEEPER,
    UNKNOWN_PARTITION,
    WRITING,
    ZKCONSUMER,
    DirectionPlan,
    KafkaMember,
    KafkaSide,
    Overrides,
    ZkSide,
    migration_step,
    mismatches,
    partition_rows,
    plan_direction,
    plan_move,
    spark_starting_offsets,
)

TP = tuple[str, int]
Offsets = dict[TP, int]
Logs = dict[TP, tuple[int, int]]
LOG = {("t", p): (10, 100) for p in range(4)}
STABLE = KafkaSide("Stable", (KafkaMember("m-1", "app", "/10.0.0.7", (("t", 0), ("t", 1))),))


def actions(plan: DirectionPlan) -> dict[TP, str]:
    return {m.key: m.action for m in plan.moves}


def codes(plan: DirectionPlan) -> list[str]:
    return [b.code for b in plan.blockers]


# ---------------------------------------------------------------- one partition


@pytest.mark.parametrize(
    "source,target,action,new",
    [
        (50, None, SOURCE_ONLY, 50),
        (50, 40, COPY, 50),
        (50, 50, EQUAL, None),
        (40, 50, REFUSE_REWIND, None),
        (None, 50, TARGET_ONLY, None),
        (5, None, CLAMP, 10),  # before the log start: clamped up, those messages are gone
        (5, 10, EQUAL, None),  # ... to exactly what the target has
        (5, 20, REFUSE_REWIND, None),  # ... and still never backwards
        (150, None, REFUSE_OUT_OF_RANGE, None),
        (100, 90, COPY, 100),  # the log end itself is in range: nothing left to read
    ],
)
def test_one_partition(source: int | None, target: int | None, action: str, new: int | None) -> None:
    move = plan_move(("t", 0), source, target, (10, 100), Overrides())
    assert (move.action, move.new) == (action, new), move
    assert move.writes == (action in WRITING)


def test_overrides_of_one_partition() -> None:
    assert (
        plan_move(("t", 0), 40, 50, (10, 100), Overrides(allow_rewind=True)).action,
        plan_move(("t", 0), 40, 50, (10, 100), Overrides(allow_rewind=True)).new,
    ) == (REWIND, 40)
    clamped = plan_move(("t", 0), 150, 20, (10, 100), Overrides(clamp_to_log_end=True))
    assert (clamped.action, clamped.new) == (CLAMP, 100) and "beyond the log end" in clamped.note
    # Clamped to the end but the target is already further: a rewind, refused without the flag.
    assert plan_move(("t", 0), 150, 120, (10, 100), Overrides(clamp_to_log_end=True)).action == REFUSE_REWIND


def test_no_log_offsets_means_not_copied_and_target_owner_is_never_raced() -> None:
    assert plan_move(("gone", 0), 5, None, None, Overrides()).action == UNKNOWN_PARTITION
    owned = plan_move(("t", 0), 50, 40, (10, 100), Overrides(), target_owner="g_a-0")
    assert (owned.action, owned.new) == (REFUSE_OWNED, None) and "g_a-0" in owned.note
    # An owner is irrelevant where nothing is written.
    assert plan_move(("t", 0), 50, 50, (10, 100), Overrides(), target_owner="g_a-0").action == EQUAL


# ---------------------------------------------------------------- a direction


def test_stopped_group_to_kafka_copies_source_only_and_keeps_target_only() -> None:
    zk = ZkSide("g", offsets={("t", 0): 50, ("t", 1): 60, ("t", 2): 70})
    kafka = KafkaSide("Empty", offsets={("t", 1): 55, ("t", 2): 70, ("t", 3): 20})
    plan = plan_direction(zk, kafka, LOG, TO_KAFKA)
    assert actions(plan) == {("t", 0): SOURCE_ONLY, ("t", 1): COPY, ("t", 2): EQUAL, ("t", 3): TARGET_ONLY}
    assert not plan.blocked and [m.key for m in plan.writes] == [("t", 0), ("t", 1)]
    assert (plan.source, plan.target) == (TO_ZOOKEEPER, TO_KAFKA)


def test_live_zookeeper_members_and_owners_block_to_kafka_unless_forced() -> None:
    zk = ZkSide("g", members={"g_a": ZKCONSUMER, "g_b": SCALA}, owners={("t", 0): "g_a-0"}, offsets={("t", 0): 50})
    plan = plan_direction(zk, KafkaSide(), LOG, TO_KAFKA)
    assert codes(plan) == ["source-zookeeper-members", "source-zookeeper-owned"]
    assert all(b.override == FORCE_LIVE_SOURCE for b in plan.blockers)
    message = plan.blockers[0].message
    assert "g_a (zkconsumer), g_b (scala)" in message and "/consumers/g/ids" in message
    assert plan.blockers[1].partitions == (("t", 0),) and "t-0 by g_a-0" in plan.blockers[1].message
    forced = plan_direction(zk, KafkaSide(), LOG, TO_KAFKA, Overrides(force_live_source=True))
    assert not forced.blocked and [b.code for b in forced.overridden] == codes(plan)


def test_a_broker_group_with_members_blocks_both_directions() -> None:
    zk = ZkSide("g", offsets={("t", 0): 50})
    to_kafka = plan_direction(zk, STABLE, LOG, TO_KAFKA)
    assert codes(to_kafka) == ["target-kafka-group-active"] and to_kafka.blockers[0].override == FORCE_LIVE_TARGET
    assert "broker group g is Stable with 1 members (app@10.0.0.7)" in to_kafka.blockers[0].message
    assert "UNKNOWN_MEMBER_ID" in to_kafka.blockers[0].message
    back = plan_direction(zk, STABLE, LOG, TO_ZOOKEEPER)
    assert codes(back) == ["source-kafka-group-active"] and back.blockers[0].override == FORCE_LIVE_SOURCE
    # A rebalancing group with no members listed yet is not idle either; Dead (unknown) and Empty are.
    assert plan_direction(zk, KafkaSide("PreparingRebalance"), LOG, TO_KAFKA).blocked
    assert not plan_direction(zk, KafkaSide("Dead"), LOG, TO_KAFKA).blocked


def test_to_zookeeper_refuses_owned_partitions_even_when_forced() -> None:
    zk = ZkSide("g", members={"g_a": ZKCONSUMER}, owners={("t", 0): "g_a-0"}, offsets={("t", 0): 5, ("t", 1): 5})
    kafka = KafkaSide("Empty", offsets={("t", 0): 50, ("t", 1): 50})
    plan = plan_direction(zk, kafka, LOG, TO_ZOOKEEPER)
    assert codes(plan) == ["target-zookeeper-members", "target-zookeeper-owned"]
    forced = plan_direction(zk, kafka, LOG, TO_ZOOKEEPER, Overrides(force_live_target=True))
    assert codes(forced) == ["target-zookeeper-owned"] and forced.blockers[0].override is None
    assert actions(forced) == {("t", 0): REFUSE_OWNED, ("t", 1): COPY}


def test_ingest_jobs_block_the_side_they_are_on_in_scope() -> None:
    zk = ZkSide("g", offsets={("t", 0): 5}, ingest_topics=("t",))
    assert codes(plan_direction(zk, KafkaSide(), LOG, TO_KAFKA)) == ["source-zookeeper-ingest"]
    assert codes(plan_direction(zk, KafkaSide(), LOG, TO_ZOOKEEPER)) == ["target-zookeeper-ingest"]
    assert not plan_direction(zk, KafkaSide(), LOG, TO_KAFKA, topics=["other"]).blocked


def test_rewinds_and_out_of_range_offsets_are_blockers_naming_partitions() -> None:
    zk = ZkSide("g", offsets={("t", 0): 40, ("t", 1): 500})
    plan = plan_direction(zk, KafkaSide("Empty", offsets={("t", 0): 50}), LOG, TO_KAFKA)
    assert codes(plan) == ["rewind-refused", "offset-beyond-log-end"]
    assert [(b.override, b.partitions) for b in plan.blockers] == [
        (ALLOW_REWIND, (("t", 0),)),
        (CLAMP_TO_LOG_END, (("t", 1),)),
    ]
    assert "t-0 (target 50 is ahead of 40)" in plan.blockers[0].message


def test_topics_limit_the_rows_and_owner_blockers() -> None:
    zk = ZkSide("g", owners={("u", 0): "g_a-0"}, offsets={("t", 0): 5, ("u", 0): 7})
    plan = plan_direction(zk, KafkaSide(), {**LOG, ("u", 0): (0, 9)}, TO_KAFKA, topics=["t"])
    assert actions(plan) == {("t", 0): CLAMP} and not plan.blocked


def test_unknown_direction_is_rejected() -> None:
    with pytest.raises(ValueError, match="target must be one of"):
        plan_direction(ZkSide("g"), KafkaSide(), {}, "hdfs")


def test_partition_rows_carry_lag_owner_and_assignment() -> None:
    zk = ZkSide("g", owners={("t", 2): "g_a-0"}, offsets={("t", 0): 60})
    rows = partition_rows(zk, STABLE, LOG)
    assert [
        (r.partition, r.zookeeper_offset, r.zookeeper_lag, r.kafka_lag, r.zookeeper_owner, r.kafka_member) for r in rows
    ] == [
        (0, 60, 40, None, None, "app@10.0.0.7"),
        (1, None, None, None, None, "app@10.0.0.7"),
        (2, None, None, None, "g_a-0", None),
    ]
    assert rows[0].as_dict()["zookeeper_lag"] == 40


# ---------------------------------------------------------------- the step


@pytest.mark.parametrize(
    "zk,kafka,step",
    [
        (ZkSide("g", members={"g_a": SCALA}, offsets={("t", 0): 5}), KafkaSide(), "zookeeper-live"),
        (
            ZkSide("g", members={"g_a": ZKCONSUMER}, offsets={("t", 0): 5}),
            KafkaSide("Empty", offsets={("t", 0): 5}),
            "dual-commit-live",
        ),
        (ZkSide("g", members={"g_a": ZKCONSUMER}), STABLE, "mixed"),
        (ZkSide("g", offsets={("t", 0): 5}), STABLE, "kafka-live"),
        (ZkSide("g", offsets={("t", 0): 5}), KafkaSide("Empty", offsets={("t", 0): 4}), "stopped"),
        (ZkSide("g", offsets={("t", 0): 5}), KafkaSide("Empty"), "stopped"),
        (ZkSide("g", offsets={("t", 0): 5}), KafkaSide("Empty", offsets={("t", 0): 5}), "copied"),
        (ZkSide("g"), KafkaSide(), "no-offsets"),
        (ZkSide("g", ingest_topics=("t",)), KafkaSide(), "zookeeper-live"),
    ],
)
def test_migration_step(zk: ZkSide, kafka: KafkaSide, step: str) -> None:
    found = migration_step(zk, kafka)
    assert found.name == step and found.detail and found.next


def test_mismatches_and_spark_offsets() -> None:
    plan = plan_direction(ZkSide("g", offsets={("t", 0): 50, ("t", 1): 60}), KafkaSide(), LOG, TO_KAFKA)
    assert mismatches(plan.writes, {("t", 0): 50, ("t", 1): 60}) == []
    assert [(m.key, got) for m, got in mismatches(plan.writes, {("t", 0): 50})] == [(("t", 1), None)]
    doc, missing = spark_starting_offsets({"t": [1, 0, 2], "u": [0]}, {("t", 0): 23, ("t", 1): 57, ("x", 0): 1})
    assert doc == {"t": {"0": 23, "1": 57, "2": -2}, "u": {"0": -2}} and missing == [("t", 2), ("u", 0)]


# ---------------------------------------------------------------- properties

keys = st.tuples(st.sampled_from(["t", "u"]), st.integers(0, 3))
offsets = st.dictionaries(keys, st.integers(0, 130), max_size=8)
logs = st.dictionaries(
    keys, st.tuples(st.integers(0, 60), st.integers(0, 70)).map(lambda p: (p[0], p[0] + p[1])), max_size=8
)
overrides = st.builds(Overrides, allow_rewind=st.booleans(), clamp_to_log_end=st.booleans())
targets = st.sampled_from([TO_KAFKA, TO_ZOOKEEPER])


def sides(target: str, source: Mapping[TP, int], other: Mapping[TP, int]) -> tuple[ZkSide, KafkaSide]:
    zk_offsets, kafka_offsets = (source, other) if target == TO_KAFKA else (other, source)
    return ZkSide("g", offsets=dict(zk_offsets)), KafkaSide("Empty", offsets=dict(kafka_offsets))


def applied(plan: DirectionPlan, zk: ZkSide, kafka: KafkaSide) -> tuple[ZkSide, KafkaSide]:
    written = {m.key: m.new for m in plan.writes if m.new is not None}
    if plan.target == TO_KAFKA:
        return zk, KafkaSide(kafka.state, kafka.members, {**kafka.offsets, **written})
    return ZkSide(zk.group, offsets={**zk.offsets, **written}), kafka


@settings(max_examples=300)
@given(offsets, offsets, logs, overrides, targets)
def test_never_backwards_without_allow_rewind_and_always_inside_the_log(
    source: Offsets, other: Offsets, log: Logs, over: Overrides, target: str
) -> None:
    zk, kafka = sides(target, source, other)
    plan = plan_direction(zk, kafka, log, target, over)
    for move in plan.writes:
        start, end = log[move.key]
        assert move.new is not None and start <= move.new <= end
        if move.target is not None and move.new < move.target:
            assert over.allow_rewind and move.action == REWIND
    assert {m.key for m in plan.moves} == set(source) | set(other)
    for move in plan.moves:
        if move.key not in source:
            assert move.action == TARGET_ONLY and move.new is None  # target-only: left alone
        elif move.key not in log:
            assert move.action == UNKNOWN_PARTITION
        elif move.key not in other and move.action not in (REFUSE_OUT_OF_RANGE,):
            assert move.writes  # source-only: copied (clamped if need be)
    assert (REFUSE_REWIND in actions(plan).values()) == ("rewind-refused" in codes(plan))
    assert (REFUSE_OUT_OF_RANGE in actions(plan).values()) == ("offset-beyond-log-end" in codes(plan))


@settings(max_examples=300)
@given(offsets, offsets, logs, overrides, targets)
def test_applying_the_plan_then_planning_again_writes_nothing(
    source: Offsets, other: Offsets, log: Logs, over: Overrides, target: str
) -> None:
    zk, kafka = sides(target, source, other)
    plan = plan_direction(zk, kafka, log, target, over)
    again = plan_direction(*applied(plan, zk, kafka), log, target, over)
    assert again.writes == []
    # Nothing that was fine before becomes a refusal after the copy.
    assert set(codes(again)) <= set(codes(plan))


@settings(max_examples=200)
@given(offsets, offsets, logs, overrides)
def test_the_two_directions_mirror_each_other(left: Offsets, right: Offsets, log: Logs, over: Overrides) -> None:
    to_kafka = plan_direction(ZkSide("g", offsets=left), KafkaSide("Empty", offsets=right), log, TO_KAFKA, over)
    to_zk = plan_direction(ZkSide("g", offsets=right), KafkaSide("Empty", offsets=left), log, TO_ZOOKEEPER, over)
    assert [m.as_dict() for m in to_kafka.moves] == [m.as_dict() for m in to_zk.moves]
    assert codes(to_kafka) == codes(to_zk)


@settings(max_examples=200)
@given(offsets, offsets, logs, targets)
def test_copied_is_the_step_once_a_full_copy_ran(source: Offsets, other: Offsets, log: Logs, target: str) -> None:
    zk, kafka = sides(target, source, other)
    plan = plan_direction(zk, kafka, log, target, Overrides(allow_rewind=True, clamp_to_log_end=True))
    zk, kafka = applied(plan, zk, kafka)
    in_sync = set(zk.offsets) == set(kafka.offsets) and all(zk.offsets[k] == kafka.offsets[k] for k in zk.offsets)
    assert (migration_step(zk, kafka).name == "copied") == (in_sync and bool(zk.offsets))


# ---------------------------------------------------------------- the broker's answers to a write


def test_a_write_rejected_for_membership_is_explained_with_state_and_members() -> None:
    from zkconsumer.admin import membership_refusal

    errors = {
        ("t", 0): "UNKNOWN_MEMBER_ID (Broker: Unknown member)",
        ("t", 1): None,
        ("t", 2): "REBALANCE_IN_PROGRESS (Broker: Group rebalance in progress)",
    }
    text = membership_refusal("g", errors, STABLE)
    assert text is not None
    for needle in (
        "REBALANCE_IN_PROGRESS/UNKNOWN_MEMBER_ID on t-0, t-2",
        "broker group g is Stable with 1 members (app@10.0.0.7)",
        "state Empty",
    ):
        assert needle in text, needle
    assert membership_refusal("g", {("t", 0): "UNKNOWN_TOPIC_OR_PART (Broker: Unknown topic)"}, STABLE) is None


def test_partitions_with_no_offset_on_either_side_are_listed_with_what_to_set() -> None:
    # A partition nobody committed (it never had a message, or was added) is invisible to a copy of
    # offsets; broker consumers started with auto.offset.reset=latest then skip whatever was produced
    # to it between the stop and their start. The plan lists it and says what to set.
    zk = ZkSide("g", offsets={("t", 0): 5})
    log = {("t", 0): (0, 10), ("t", 1): (0, 7)}
    plan = plan_direction(zk, KafkaSide(), log, TO_KAFKA, partitions=[("t", 0), ("t", 1)])
    assert [(m.key, m.action) for m in plan.moves] == [(("t", 0), SOURCE_ONLY), (("t", 1), NO_OFFSET)]
    assert [m.key for m in plan.writes] == [("t", 0)]  # nothing is written for it
    advice = plan.start_advice()
    assert advice is not None and "t-1" in advice and "auto.offset.reset=earliest" in advice
    back = plan_direction(zk, KafkaSide(), log, TO_ZOOKEEPER, partitions=[("t", 0), ("t", 1)])
    assert "auto.offset.reset=smallest" in (back.start_advice() or "")
    assert plan_direction(zk, KafkaSide(), log, TO_KAFKA).start_advice() is None  # without the brokers' list
    rows = partition_rows(zk, KafkaSide(), log, None, [("t", 0), ("t", 1)])
    assert [(r.partition, r.zookeeper_offset, r.kafka_offset, r.log_end) for r in rows] == [
        (0, 5, None, 10),
        (1, None, None, 7),
    ]
