"""The live-switch audit's arithmetic on planted delivery logs (tests/harness/switch_audit.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.switch_audit import (
    Delivery,
    audit,
    longest_silence,
    offsets_differ,
    overlap_and_duplicates,
    parse_log_line,
    percentile,
)
from harness.switch_run import coordinator_partition, java_string_hash, kafka_abs

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


def test_offsets_differ_names_partitions_missing_on_either_side() -> None:
    assert offsets_differ({0: 5, 1: 7}, {0: 5, 1: 7}) == {}
    assert offsets_differ({0: 5, 1: 7}, {0: 5, 1: 6, 2: 1}) == {1: (7, 6), 2: (None, 1)}


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
