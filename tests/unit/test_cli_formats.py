"""Pure pieces of the CLI: offset files (lines, JSON, CSV), their bytes, option values, tables, progress bars."""

from __future__ import annotations

import json

import pytest

from zkconsumer.admin import (
    InputError,
    OffsetEntry,
    decode_input,
    export_json,
    format_csv,
    format_export,
    parse_offsets_file,
)
from zkconsumer.admin.offset_files import parse_csv, parse_export_json, parse_export_lines
from zkconsumer.cli.formats import parse_key_value, parse_partitions, parse_topic_specs
from zkconsumer.cli.output.render import TextTable


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


def test_key_values() -> None:
    assert parse_key_value("print.key=true", "--property") == ("print.key", "true")
    assert parse_key_value("a=b=c", "x") == ("a", "b=c")
    with pytest.raises(InputError, match="key=value"):
        parse_key_value("novalue", "--consumer-property")


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
    from zkconsumer.cli.output import progress

    with progress.progress(1000, "x") as bar:
        assert not isinstance(bar, progress.RichBar)  # pytest's stderr is no terminal
    monkeypatch.setattr(progress, "stderr_is_tty", lambda: True)
    with progress.progress(10, "x") as bar:
        assert not isinstance(bar, progress.RichBar)  # too few steps to bother
    with progress.progress(100, "x") as bar:
        assert isinstance(bar, progress.RichBar)
        bar.advance()


def test_input_bytes_must_be_utf8_and_the_error_names_the_byte() -> None:
    assert decode_input("\ufeff/consumers/g/offsets/t/0:1\n".encode(), "f") == "/consumers/g/offsets/t/0:1\n"
    with pytest.raises(InputError, match=r"^in.txt: not UTF-8 text \(byte 0xff at offset 3, line 2\)"):
        decode_input(b"ok\n\xff\xfe", "in.txt")


def test_a_json_or_csv_file_given_as_lines_says_which_format_to_pass() -> None:
    with pytest.raises(InputError, match="line 1: .*pass --format json"):
        parse_export_lines('{"version": 1, "offsets": []}')
    with pytest.raises(InputError, match="line 1: .*pass --format csv"):
        parse_export_lines("orders,0,15\n")


def test_csv_is_kafka_consumer_groups_export_and_reads_back() -> None:
    entries = [OffsetEntry("g", "t", 1, 9), OffsetEntry("g", "t", 0, 3)]
    assert format_csv(entries, with_group=False) == "t,0,3\nt,1,9\n"
    assert format_csv(entries, with_group=True) == "g,t,0,3\ng,t,1,9\n"
    assert parse_csv("topic,partition,offset\nt,0,3\n\nt,1,9\n", "g") == sorted(entries)
    assert parse_offsets_file("g,t,0,3\ng,t,1,9\n", "csv", None) == sorted(entries)
    assert [e.source for e in parse_csv("t,0,3\nt,1,9\n", "g")] == ["line 1", "line 2"]


@pytest.mark.parametrize(
    "text,group,needle",
    [
        ("t,0,3\n", None, "line 1: topic,partition,offset names no group: pass --group"),
        ("t,0\n", "g", "line 1: expected topic,partition,offset or group,topic,partition,offset"),
        ("t,x,3\n", "g", "line 1: partition 'x' is not a number"),
        ("t,0,3\nt,1,many\n", "g", "line 2: offset 'many' is not a 64-bit decimal integer"),
        ("a/b,t,0,3\n", None, "line 1: invalid group"),
    ],
)
def test_bad_csv_names_the_line(text: str, group: str | None, needle: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_csv(text, group)
    assert needle in str(caught.value)


def test_topic_specs_take_both_old_tools_spellings() -> None:
    # ConsumerOffsetChecker's --topic a,b and kafka-consumer-groups' --topic t:0,1 (ranges too).
    assert parse_topic_specs(["a,b"]) == [("a", None), ("b", None)]
    assert parse_topic_specs(["t:0,1"]) == [("t", [0, 1])]
    assert parse_topic_specs(["t:0,2-3,u", "v:1"]) == [("t", [0, 2, 3]), ("u", None), ("v", [1])]
    assert parse_topic_specs(["t:1", "t:0"]) == [("t", [0, 1])]
    assert parse_topic_specs(["t:1", "t"]) == [("t", None)]  # the whole topic wins
    assert parse_topic_specs([]) == []
    with pytest.raises(InputError, match="invalid topic name 'a/b'"):
        parse_topic_specs(["a/b"])
    with pytest.raises(InputError, match="bad partition list"):
        parse_topic_specs(["t:x"])
