"""Spark's timestamp options: precedence, the strategy when no message is that late, their parsing, and the
stream's new-query start resolved from them (the brokers' look-up is a stand-in here; tests/spark has the real one)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_spark_stream_reader import T0, T1, FakeMember, Reader

from zkconsumer.spark.broker_trouble import Answers
from zkconsumer.spark.by_time import NOT_FOUND, explicit_ends, explicit_starts, times_for
from zkconsumer.spark.offsets import LATEST, DataLossError, Key, batch_ranges
from zkconsumer.spark.options import OptionError, parse_options
from zkconsumer.spark.stream_reader import ReadAllAvailable

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}
keys = st.tuples(st.sampled_from(["t", "u"]), st.integers(0, 3))


@given(
    wanted=st.lists(keys, unique=True, max_size=6),
    everywhere=st.one_of(st.none(), st.integers(0, 10**13)),
    per=st.dictionaries(keys, st.integers(0, 10**13)),
)
def test_one_time_for_all_partitions_beats_per_partition_times(
    wanted: list[Key], everywhere: int | None, per: dict[Key, int]
) -> None:
    times = times_for(wanted, everywhere, per)
    if everywhere is not None:
        assert times == dict.fromkeys(wanted, everywhere)
    else:
        assert times == {k: per[k] for k in wanted if k in per}


@given(
    wanted=st.lists(keys, unique=True, max_size=6),
    explicit=st.dictionaries(keys, st.integers(-2, 100)),
    per=st.dictionaries(keys, st.integers(0, 10**6)),
    found=st.dictionaries(keys, st.one_of(st.just(NOT_FOUND), st.integers(0, 100))),
)
def test_a_time_overrides_the_offset_entry_and_latest_stands_in_for_no_message(
    wanted: list[Key], explicit: dict[Key, int], per: dict[Key, int], found: dict[Key, int]
) -> None:
    asked: list[Mapping[Key, int]] = []

    def lookup(times: Mapping[Key, int]) -> Answers[int]:
        asked.append(dict(times))
        return Answers({k: found.get(k, NOT_FOUND) for k in times})

    starts = explicit_starts(explicit, wanted, None, per, "latest", lookup).found
    ends = explicit_ends(explicit, wanted, None, per, lookup).found
    timed = {k for k in wanted if k in per}
    for result in (starts, ends):
        for k in set(result) | set(explicit):
            if k in timed:
                assert result[k] == (LATEST if found.get(k, NOT_FOUND) == NOT_FOUND else found[k])
            else:
                assert result[k] == explicit[k], "no time: the offsets option's entry, untouched"
    assert asked == ([] if not timed else [{k: per[k] for k in wanted if k in per}] * 2), "asked only with a time"


def test_the_error_strategy_fails_naming_each_partition_without_a_message_that_late() -> None:
    with pytest.raises(DataLossError, match=r"t-1 \(timestamp 50\).*startingOffsetsByTimestampStrategy=latest"):
        explicit_starts({}, [T0, T1], 50, {}, "error", lambda times: Answers({T0: 7, T1: NOT_FOUND}))
    assert explicit_starts({}, [T0, T1], 50, {}, "error", lambda times: Answers({T0: 7, T1: 9})).found == {T0: 7, T1: 9}


@given(
    wanted=st.lists(keys, unique=True, max_size=6),
    explicit=st.dictionaries(keys, st.integers(-2, 100)),
    down=st.sets(keys),
)
def test_a_partition_whose_time_the_brokers_did_not_answer_has_no_start_and_is_named(
    wanted: list[Key], explicit: dict[Key, int], down: set[Key]
) -> None:
    """Finding 2 (issue 52): a failed lookup is that partition's trouble, never another's start."""

    def lookup(times: Mapping[Key, int]) -> Answers[int]:
        return Answers({k: 5 for k in times if k not in down}, {k: "LEADER_NOT_AVAILABLE" for k in times if k in down})

    got = explicit_starts(explicit, wanted, 50, {}, "error", lookup)
    assert set(got.trouble) == set(wanted) & down
    assert not set(got.found) & set(got.trouble)
    assert {k for k in got.found if k in wanted} == set(wanted) - down


def test_the_timestamp_options_parse_in_spark_s_shape_and_are_checked() -> None:
    opts = parse_options(
        {
            **BASE,
            "startingOffsetsByTimestamp": '{"t": {"0": 1000, "1": 2000}}',
            "startingOffsetsByTimestampStrategy": "LATEST",
            "endingTimestamp": "5000",
        },
        streaming=False,
    )
    assert opts.starting_by_time == {T0: 1000, T1: 2000} and opts.starting_time_strategy == "latest"
    assert opts.ending_time == 5000 and opts.starting_time is None
    with pytest.raises(OptionError, match="'startingOffsetsByTimestampStrategy' must be error or latest"):
        parse_options({**BASE, "startingOffsetsByTimestampStrategy": "earliest"}, streaming=True)
    with pytest.raises(OptionError, match="apply to batch reads"):
        parse_options({**BASE, "endingOffsetsByTimestamp": '{"t": {"0": 1}}'}, streaming=True)
    with pytest.raises(OptionError, match=r"'startingOffsetsByTimestamp' must be a JSON object"):
        parse_options({**BASE, "startingOffsetsByTimestamp": '{"t": {"0": -5}}'}, streaming=True)
    with pytest.raises(OptionError, match="'startingtimestamp' must be >= 0"):
        parse_options({**BASE, "startingTimestamp": "-1"}, streaming=True)


def test_a_new_stream_starts_its_partitions_at_the_time_over_their_committed_offsets() -> None:
    """Spark's rule: the starting time applies to a new query; a committed offset does not beat it
    (like a startingOffsets JSON entry); partitions without a time keep the usual precedence."""
    member = FakeMember()
    member.claim(T0, 5, epoch=100)
    member.claim(T1, 8, epoch=100)
    reader = Reader(
        member,
        {T0: (0, 40), T1: (0, 40)},
        startingOffsetsByTimestamp='{"t": {"0": 1234}}',
        **{"bootstrap.servers": "b:1"},
    )
    reader.member.at_time[T0] = 17  # type: ignore[attr-defined]
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert batch_ranges(start, end) == [(T0, 17, 40), (T1, 8, 40)]
    assert reader.member.times_asked == [{T0: 1234}]  # type: ignore[attr-defined]
