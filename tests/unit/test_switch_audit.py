"""The live-switch audit's arithmetic on planted delivery logs (tests/harness/switch_audit.py)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.switch_audit import (
    Delivery,
    ReleaseCheck,
    RestRound,
    audit,
    judge_rest,
    longest_silence,
    overlap_and_duplicates,
    parse_log_line,
    parse_release_checks,
    percentile,
)
from harness.switch_run import coordinator_partition, java_string_hash, kafka_abs
from zkconsumer.coordinator.switch_follow import SwitchFollower

RATE = 0.01  # one message per partition every 10 ms


def clean_log(partitions: int, per_partition: int, handover_at: int | None = None) -> list[Delivery]:
    """Member a delivers every partition; with handover_at, b takes over from that offset after a 0.2 s pause."""
    out = []
    for p in range(partitions):
        for o in range(per_partition):
            at = o * RATE
            member = "a"
            if handover_at is not None and o >= handover_at:
                member, at = "b", at + 0.2
            out.append(Delivery(member, p, o, at))
    return out


def acked_of(partitions: int, per_partition: int) -> set[tuple[int, int]]:
    return {(p, o) for p in range(partitions) for o in range(per_partition)}


@settings(max_examples=60, deadline=None)
@given(
    partitions=st.integers(1, 5),
    per_partition=st.integers(20, 80),
    data=st.data(),
)
def test_a_planted_overlap_is_found_and_nothing_else(partitions: int, per_partition: int, data: st.DataObject) -> None:
    """b delivers `width` offsets of one partition while a still delivers them: exactly those are overlap."""
    log = clean_log(partitions, per_partition)
    partition = data.draw(st.integers(0, partitions - 1))
    begin = data.draw(st.integers(0, per_partition - 5))
    width = data.draw(st.integers(2, min(20, per_partition - begin)))
    planted = [Delivery("b", partition, o, o * RATE + RATE / 2) for o in range(begin, begin + width)]
    figures = audit(log + planted, acked_of(partitions, per_partition), start=0.0, end=per_partition * RATE)
    assert figures.overlap == width
    assert figures.duplicates == 0
    assert figures.lost == 0
    assert figures.overlap_spans and all(a.partition == partition for a, _ in figures.overlap_spans)


@settings(max_examples=60, deadline=None)
@given(partitions=st.integers(1, 4), per_partition=st.integers(30, 80), data=st.data())
def test_a_redelivered_window_after_a_handover_is_duplicates_not_overlap(
    partitions: int, per_partition: int, data: st.DataObject
) -> None:
    """a stops at offset h; after a pause b starts from h - window (a crash's uncommitted window)."""
    h = data.draw(st.integers(10, per_partition - 1))
    window = data.draw(st.integers(1, 10))
    log = [d for d in clean_log(partitions, per_partition) if d.offset < h]
    stop = (h - 1) * RATE
    again = [
        Delivery("b", p, o, stop + 2.0 + (o - h + window) * RATE)
        for p in range(partitions)
        for o in range(h - window, per_partition)
    ]
    figures = audit(log + again, acked_of(partitions, per_partition), start=0.0, end=stop + 3.0, span_gap=1.0)
    assert figures.overlap == 0
    assert figures.duplicates == partitions * window
    assert figures.lost == 0


@settings(max_examples=60, deadline=None)
@given(partitions=st.integers(1, 4), per_partition=st.integers(5, 50), data=st.data())
def test_lost_counts_exactly_the_acked_offsets_never_delivered(
    partitions: int, per_partition: int, data: st.DataObject
) -> None:
    log = clean_log(partitions, per_partition)
    dropped = data.draw(st.sets(st.sampled_from(log), max_size=len(log)))
    kept = [d for d in log if d not in dropped]
    figures = audit(kept, acked_of(partitions, per_partition), start=0.0, end=1.0)
    assert figures.lost == len(dropped)


@given(st.lists(st.floats(0.0, 100.0), max_size=50))
def test_the_longest_silence_is_the_largest_gap_between_window_edges_and_deliveries(times: list[float]) -> None:
    silence = longest_silence(times, 0.0, 100.0)
    points = sorted([0.0, 100.0, *times])
    assert silence == max(b - a for a, b in zip(points, points[1:]))
    assert silence >= 100.0 / (len(times) + 1) - 1e-9  # n points cut the window into n+1 pieces


def test_a_handover_pause_is_the_partition_gap_and_the_silence_when_it_is_the_only_partition() -> None:
    log = clean_log(1, 100, handover_at=50)
    figures = audit(log, acked_of(1, 100), start=0.0, end=99 * RATE + 0.2)
    assert figures.overlap == 0 and figures.duplicates == 0 and figures.lost == 0
    assert abs(figures.gap_max_s - (RATE + 0.2)) < 1e-9
    assert abs(figures.silence_s - (RATE + 0.2)) < 1e-9
    assert figures.gap_max_partition == 0


def test_the_same_member_delivering_twice_is_a_duplicate() -> None:
    log = [Delivery("a", 0, 0, 0.0), Delivery("a", 0, 1, 0.01), Delivery("a", 0, 0, 0.02)]
    assert overlap_and_duplicates(log, 1.0) == (set(), 1)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([5.0], 0.99) == 5.0


def _store_at(commits: list[tuple[float, float | None]], t: float, side: int) -> int:
    """The offset a store holds at time t: commit i (offset i + 1) reaches ZooKeeper at commits[i][0]
    and Kafka at commits[i][1] (None: never)."""
    held = 0
    for i, times in enumerate(commits):
        at = times[side]
        if at is not None and at <= t:
            held = i + 1
    return held


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.one_of(st.none(), st.floats(0, 0.5))), max_size=6),
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 0.05), st.floats(0, 0.05)), min_size=1, max_size=4),
)
def test_a_partition_is_called_equal_only_if_both_stores_held_one_offset_at_one_instant(
    steps: list[tuple[float, float | None]], reads: list[tuple[float, float, float]]
) -> None:
    # commits every 1 s, ZooKeeper first, Kafka after a lag (or never: a broken mirror)
    commits = [(i + z, None if lag is None else i + z + lag) for i, (z, lag) in enumerate(steps)]
    rounds, truly_equal = [], False
    for i, (start, to_kafka, to_second) in enumerate(reads):
        t0 = i * 1.7 + start
        t1, t2 = t0 + to_kafka, t0 + to_kafka + to_second
        rounds.append(
            RestRound({0: _store_at(commits, t0, 0)}, {0: _store_at(commits, t1, 1)}, {0: _store_at(commits, t2, 0)})
        )
        truly_equal |= _store_at(commits, t1, 0) == _store_at(commits, t1, 1)
    verdict = judge_rest([0], rounds)
    assert sum(0 in group for group in (verdict.equal, verdict.unequal, verdict.unsettled)) == 1
    if 0 in verdict.equal:
        assert truly_equal  # ZooKeeper only moves forward: unchanged around the Kafka read means equal then
    if 0 in verdict.unequal:
        z, k = verdict.unequal[0]
        assert z != k


def test_the_rest_verdict_says_which_partitions_differ_and_which_never_held_still() -> None:
    rounds = [
        RestRound({0: 5, 1: 7, 2: 1}, {0: 5, 1: 6, 2: 1}, {0: 5, 1: 7, 2: 2}),
        RestRound({0: 5, 1: 7, 2: 3}, {0: 4, 1: 6, 2: 3}, {0: 5, 1: 7, 2: 4}),
    ]
    verdict = judge_rest([0, 1, 2, 3], rounds)
    assert verdict.equal == (0, 3)  # 0: the first round; 3: no offset in either store
    assert verdict.unequal == {1: (7, 6)}
    assert verdict.unsettled == (2,)


def test_the_release_check_lines_of_a_members_log_are_read_back() -> None:
    text = (
        "2026-12-08 01:24:15,499 INFO rebalance zkconsumer.coordinator.rebalancer g_a: live switch release check "
        "(ZooKeeper/Kafka): my-topic-3 2195/2195, my-topic-10 -1/-1, my-topic-12 50/49\n"
        "2026-12-08 01:24:15,500 INFO rebalance zkconsumer.coordinator.rebalancer g_a owns 4 partitions\n"
    )
    assert parse_release_checks("zk0", text) == [
        ReleaseCheck("zk0", "my-topic", 3, 2195, 2195),
        ReleaseCheck("zk0", "my-topic", 10, -1, -1),
        ReleaseCheck("zk0", "my-topic", 12, 50, 49),
    ]
    assert [c.equal for c in parse_release_checks("zk0", text)] == [True, True, False]


def test_the_switch_followers_release_line_is_the_one_the_audit_reads(caplog) -> None:  # type: ignore[no-untyped-def]
    class Seat:
        member_id = "m-1"

        def commit(self, offsets, timeout):  # type: ignore[no-untyped-def]
            return {k: (o - 1 if k[1] == 1 else o) for k, o in offsets.items()}  # partition 1 reads back behind

    follower = SwitchFollower(
        SimpleNamespace(consumer_id="g_a"),
        lambda field: b"",
        lambda topics, on_change, holding: Seat(),
        lambda why: None,
        set,
    )  # type: ignore[arg-type]
    follower.step, follower.seat = "handover", Seat()  # type: ignore[assignment]
    pending = {("a-b", 0): 7, ("a-b", 1): 9, ("a-b", 2): -1}
    with caplog.at_level(logging.INFO, logger="zkconsumer.coordinator.rebalancer"):
        assert follower.releasable(pending, follower.carry(pending, 1.0)) == {("a-b", 0), ("a-b", 2)}
    assert parse_release_checks("m", caplog.text) == [
        ReleaseCheck("m", "a-b", 0, 7, 7),
        ReleaseCheck("m", "a-b", 1, 9, 8),
    ]


def test_a_torn_last_line_is_skipped() -> None:
    assert parse_log_line("m", "12.5 t 3 44 t:0:9") == Delivery("m", 3, 44, 12.5)
    assert parse_log_line("m", "12.5 t 3") is None
    assert parse_log_line("m", "12.5 t 3 4x v") is None


def test_a_partition_added_mid_run_counts_its_gaps_from_its_first_message() -> None:
    log = [Delivery("a", 0, o, o * RATE) for o in range(100)] + [Delivery("a", 1, o, 0.5 + o * RATE) for o in range(50)]
    end = 99 * RATE
    assert audit(log, acked_of(1, 100), start=0.0, end=end).gap_max_s >= 0.5  # partition 1 "late" from 0
    figures = audit(log, acked_of(1, 100), start=0.0, end=end, born={1: 0.49})
    assert figures.gap_max_s < 0.02 and figures.gap_max_partition in (0, 1)


def test_a_partition_handed_over_and_back_within_a_second_is_no_overlap() -> None:
    """Seen in the 6-member rolling run: zk3 delivered 18:302, zk1 (claimed it, then shut down) 18:303,
    zk3 (claimed it back) 18:304 on, within 0.6 s: sequential owners, each from the committed offset."""
    log = [Delivery("zk3", 18, o, o * RATE) for o in range(10)]
    log += [Delivery("zk1", 18, 10, 0.25)]
    log += [Delivery("zk3", 18, o, 0.6 + o * RATE) for o in range(11, 20)]
    figures = audit(log, {(18, o) for o in range(20)}, start=0.0, end=0.8)
    assert (figures.overlap, figures.overlap_spans, figures.duplicates, figures.lost) == (0, (), 0, 0)


def test_the_coordinator_partition_is_the_brokers_partition_for() -> None:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions."""
    assert java_string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert (kafka_abs(-5), kafka_abs(-(1 << 31)), kafka_abs(7)) == (5, 0, 7)
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert java_string_hash("audit-r1rolling-31580") == -2096060490
    assert coordinator_partition("audit-r1rolling-31580", 50) == 2096060490 % 50  # not (h & 0x7fffffff) % 50
