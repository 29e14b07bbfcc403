"""Pure pieces of the CLI: export/import file formats, option parsing, reset targets, printed messages."""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
import warnings

import pytest

from zkconsumer.cli.formats import (
    InputError,
    OffsetEntry,
    PrintOptions,
    Target,
    export_json,
    format_export,
    format_message,
    message_json,
    parse_datetime,
    parse_export_json,
    parse_export_lines,
    parse_key_value,
    parse_partitions,
    reset_offset,
)
from zkconsumer.cli.render import TextTable
from zkconsumer.consumer.stream import Message


def test_export_lines_are_the_legacy_format_and_sorted() -> None:
    entries = [OffsetEntry("g", "t", 10, 5), OffsetEntry("g", "t", 2, 7), OffsetEntry("a", "x", 0, 0)]
    assert format_export(entries) == (
        "/consumers/a/offsets/x/0:0\n/consumers/g/offsets/t/2:7\n/consumers/g/offsets/t/10:5\n"
    )


def test_import_reads_legacy_lines_until_the_first_empty_line() -> None:
    text = (
        "/consumers/g1/offsets/orders/0:42\r\n"
        "/consumers/g1/offsets/orders/1:-1\n"
        "  /consumers/g.2/offsets/my-topic/12:9223372036854775807  \n"
        "\n"
        "/consumers/ignored/offsets/t/0:1\n"
        "garbage after the empty line is never read\n"
    )
    assert parse_export_lines(text) == [
        OffsetEntry("g1", "orders", 0, 42),
        OffsetEntry("g1", "orders", 1, -1),
        OffsetEntry("g.2", "my-topic", 12, 2**63 - 1),
    ]
    assert parse_export_lines("") == []


@pytest.mark.parametrize(
    "line,where",
    [
        ("/consumers/g/offsets/t/0", "expected /consumers"),
        ("/consumers/g/offsets/t/0:abc", "not a 64-bit decimal"),
        ("/consumers/g/offsets/t/0:9223372036854775808", "not a 64-bit decimal"),
        ("/consumers/g/owners/t/0:5", "not a /consumers/<group>/offsets"),
        ("/consumers/g/offsets/t/01:5", "canonical"),
        ("consumers/g/offsets/t/0:5", "not a /consumers"),
    ],
)
def test_import_rejects_bad_lines_naming_the_line(line: str, where: str) -> None:
    with pytest.raises(InputError, match=rf"line 2: .*{where}"):
        parse_export_lines("/consumers/g/offsets/t/0:1\n" + line + "\n")


def test_json_export_round_trips_and_is_validated() -> None:
    entries = [OffsetEntry("g", "t", 0, 3), OffsetEntry("g", "u", 1, 4)]
    assert parse_export_json(export_json(entries)) == entries
    assert parse_export_json(json.dumps([e.as_dict() for e in entries])) == entries
    with pytest.raises(InputError, match=r"offsets\[0\]: needs"):
        parse_export_json('{"offsets": [{"group": "g"}]}')
    with pytest.raises(InputError, match="must be integers"):
        parse_export_json('{"offsets": [{"group": "g", "topic": "t", "partition": "0", "offset": 1}]}')
    with pytest.raises(InputError, match="invalid group"):
        parse_export_json('{"offsets": [{"group": "a/b", "topic": "t", "partition": 0, "offset": 1}]}')
    with pytest.raises(InputError, match="not valid JSON"):
        parse_export_json("{")


def test_partition_lists() -> None:
    assert parse_partitions("0,3,5-7, 3") == [0, 3, 5, 6, 7]
    for bad in ("", "a", "3-1", "1,,2", "-1"):
        with pytest.raises(InputError):
            parse_partitions(bad)


def test_datetimes() -> None:
    assert parse_datetime("2024-05-01T12:00:00Z") == 1714564800000
    assert parse_datetime("2024-05-01T14:00:00+02:00") == 1714564800000
    assert parse_datetime("2024-05-01T12:00:00.250Z") == 1714564800250
    local = dt.datetime(2024, 5, 1, 12, 0).astimezone()
    assert parse_datetime("2024-05-01 12:00") == int(local.timestamp() * 1000)
    with pytest.raises(InputError, match="ISO 8601"):
        parse_datetime("yesterday")


def test_key_values() -> None:
    assert parse_key_value("print.key=true", "--property") == ("print.key", "true")
    assert parse_key_value("a=b=c", "x") == ("a", "b=c")
    with pytest.raises(InputError, match="key=value"):
        parse_key_value("novalue", "--consumer-property")


@pytest.mark.parametrize(
    "target,current,time_offset,expected",
    [
        (Target("earliest"), 50, None, (10, "")),
        (Target("latest"), 50, None, (100, "")),
        (Target("offset", 42), None, None, (42, "")),
        (Target("offset", 5), 50, None, (10, "clamped to the log start (5 < 10)")),
        (Target("offset", 500), 50, None, (100, "clamped to the log end (500 > 100)")),
        (Target("shift", -45), 50, None, (10, "clamped to the log start (5 < 10)")),
        (Target("shift", 20), 50, None, (70, "")),
        (Target("shift", 20), None, None, (None, "no committed offset to shift from")),
        (Target("shift", 20), -1, None, (None, "no committed offset to shift from")),
        (Target("datetime"), 50, 33, (33, "")),
        (Target("datetime"), 50, -1, (100, "")),
        (Target("datetime"), 50, None, (100, "")),
    ],
)
def test_reset_targets_clamp_to_the_log(
    target: Target, current: int | None, time_offset: int | None, expected: tuple[int | None, str]
) -> None:
    assert reset_offset(target, current, 10, 100, time_offset) == expected


def test_messages_print_like_the_default_formatter() -> None:
    msg = Message(topic="t", partition=3, offset=17, key=b"k1", value=b"hello", timestamp=(1, 1700000000000))
    assert format_message(msg, PrintOptions()) == b"hello\n"
    everything = PrintOptions.from_properties(
        {
            "print.key": "true",
            "print.timestamp": "true",
            "print.partition": "true",
            "print.offset": "true",
            "key.separator": ",",
        }
    )
    assert format_message(msg, everything) == b"CreateTime:1700000000000,Partition:3,Offset:17,k1,hello\n"
    nulls = Message(topic="t", partition=0, offset=0)
    assert format_message(nulls, PrintOptions(print_key=True, print_timestamp=True)) == b"NO_TIMESTAMP\tnull\tnull\n"
    appended = Message(topic="t", partition=0, offset=0, value=b"v", timestamp=(2, 5))
    assert format_message(appended, PrintOptions(print_timestamp=True)) == b"LogAppendTime:5\tv\n"
    with pytest.raises(InputError, match="unknown --property 'print.keys'"):
        PrintOptions.from_properties({"print.keys": "true"})
    with pytest.raises(InputError, match="true or false"):
        PrintOptions.from_properties({"print.key": "yes"})


def test_json_messages_fall_back_to_base64() -> None:
    doc = json.loads(
        message_json(Message(topic="t", partition=1, offset=2, key=b"\xff", value="ünï".encode(), timestamp=(1, 5)))
    )
    assert doc == {"topic": "t", "partition": 1, "offset": 2, "timestamp": 5, "key_base64": "/w==", "value": "ünï"}


def test_plain_tables_align_without_truncating() -> None:
    table = TextTable(["TOPIC", "PARTITION", "OWNER"], right_aligned=frozenset({"PARTITION"}))
    table.add(["orders", 0, "a-very-long-consumer-id_host-1700000000000-abcdef12-0"])
    table.add(["o", 10, None])
    assert table.plain().splitlines() == [
        "TOPIC   PARTITION  OWNER",
        "orders          0  a-very-long-consumer-id_host-1700000000000-abcdef12-0",
        "o              10  -",
    ]


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from zkconsumer.cli import common

    with common.progress(1000, "x") as bar:
        assert type(bar).__name__ == "_NoProgress"  # pytest's stderr is no terminal
    monkeypatch.setattr(common, "stderr_is_tty", lambda: True)
    with common.progress(10, "x") as bar:
        assert type(bar).__name__ == "_NoProgress"  # too few steps to bother
    with common.progress(100, "x") as bar:
        assert type(bar).__name__ == "_RichProgress"
        bar.advance(100)


def test_consume_writes_records_as_bytes_to_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    # click 8.5 deprecated get_binary_stream (gone in 9.0), which the writer used to call.
    from zkconsumer.cli.consume import _writer

    buffer = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffer))
    msg = Message(topic="t", partition=0, offset=4, value=b"v\xff")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _writer(False, PrintOptions(print_offset=True))(msg)
        _writer(True, PrintOptions())(msg)
    first, second = buffer.getvalue().split(b"\n", 1)
    assert first == b"Offset:4\tv\xff"
    assert json.loads(second)["value_base64"] == "dv8="
