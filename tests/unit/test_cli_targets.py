"""Reset targets without a cluster: --to-datetime and --by-duration parsing, each target's offset, the log-range check and --clamp."""

from __future__ import annotations

import datetime as dt

import pytest

from zkconsumer.admin import InputError, Target, clamp, parse_datetime, parse_duration, range_problem, reset_offset


def test_datetimes() -> None:
    assert parse_datetime("2024-05-01T12:00:00Z") == 1714564800000
    assert parse_datetime("2024-05-01T14:00:00+02:00") == 1714564800000
    assert parse_datetime("2024-05-01T12:00:00.250Z") == 1714564800250
    local = dt.datetime(2024, 5, 1, 12, 0).astimezone()
    assert parse_datetime("2024-05-01 12:00") == int(local.timestamp() * 1000)
    with pytest.raises(InputError, match="ISO 8601"):
        parse_datetime("yesterday")


@pytest.mark.parametrize(
    "text,millis",
    [
        ("PT1H", 3_600_000),
        ("PT30M", 1_800_000),
        ("P1DT12H", 129_600_000),
        ("pt0.5s", 500),
        ("PT1.25S", 1250),
        ("P2D", 172_800_000),
        ("-PT1M", -60_000),
    ],
)
def test_durations_as_java_duration_parse(text: str, millis: int) -> None:
    assert parse_duration(text) == millis


@pytest.mark.parametrize("text", ["", "1h", "P", "PT", "P1H", "PT1X", "3600"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="bad duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    "target,current,time_offset,expected",
    [
        (Target("earliest"), 50, None, (10, "")),
        (Target("latest"), 50, None, (100, "")),
        (Target("offset", 42), None, None, (42, "")),
        (Target("offset", 500), 50, None, (500, "")),  # not clamped here: range_problem refuses it
        (Target("shift", -45), 50, None, (5, "")),
        (Target("shift", 20), 50, None, (70, "")),
        (Target("shift", 20), None, None, (None, "no committed offset to shift from")),
        (Target("shift", 20), -1, None, (None, "no committed offset to shift from")),
        (Target("current"), 50, None, (50, "")),
        (
            Target("current"),
            None,
            None,
            (100, "no committed offset: the log end, as kafka-consumer-groups --to-current"),
        ),
        (Target("datetime"), 50, 33, (33, "")),
        (Target("datetime"), 50, -1, (100, "no message that late: the log end")),
        (Target("datetime"), 50, None, (100, "no message that late: the log end")),
    ],
)
def test_reset_targets(
    target: Target, current: int | None, time_offset: int | None, expected: tuple[int | None, str]
) -> None:
    assert reset_offset(target, current, 10, 100, time_offset) == expected


def test_the_log_range_check_and_clamp() -> None:
    assert range_problem(10, 10, 100) is None and range_problem(100, 10, 100) is None
    assert range_problem(-5, 0, 140) == "offset -5 is negative; the log holds [0, 140]"
    assert range_problem(999999, 0, 140) == "offset 999999 is beyond the log end; the log holds [0, 140]"
    assert range_problem(3, 10, 140) == "offset 3 is before the log start (deleted messages); the log holds [10, 140]"
    assert clamp(-5, 0, 140) == (0, "clamped from -5 to the log start 0")
    assert clamp(999, 0, 140) == (140, "clamped from 999 to the log end 140")
    assert clamp(70, 0, 140) == (70, "")
