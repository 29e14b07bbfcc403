"""How `consume` prints records without a cluster: kafka-console-consumer's --property print.* options and JSON lines."""

from __future__ import annotations

import io
import json
import sys
import warnings

import pytest

from zkconsumer.admin import InputError
from zkconsumer.cli.output.messages import PrintOptions, format_message, message_json
from zkconsumer.consumer.chunks import Message


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


def test_headers_and_print_value_as_the_console_consumer() -> None:
    msg = Message(topic="t", partition=0, offset=1, key=b"k", value=b"v", headers=[("a", b"1"), ("b", None)])
    headers = PrintOptions.from_properties({"print.headers": "true"})
    assert format_message(msg, headers) == b"a:1,b:null\tv\n"
    bare = Message(topic="t", partition=0, offset=1, value=b"v")
    assert format_message(bare, headers) == b"NO_HEADERS\tv\n"
    custom = PrintOptions.from_properties(
        {"print.headers": "true", "headers.separator": ";", "headers.key.separator": "=", "null.literal": "-"}
    )
    assert format_message(msg, custom) == b"a=1;b=-\tv\n"
    keys_only = PrintOptions.from_properties({"print.key": "true", "print.value": "false"})
    assert format_message(msg, keys_only) == b"k\n"
    assert format_message(msg, PrintOptions(print_value=False)) == b""  # nothing asked, nothing printed


def test_json_messages_fall_back_to_base64_and_carry_headers() -> None:
    doc = json.loads(
        message_json(Message(topic="t", partition=1, offset=2, key=b"\xff", value="ünï".encode(), timestamp=(1, 5)))
    )
    assert doc == {"topic": "t", "partition": 1, "offset": 2, "timestamp": 5, "key_base64": "/w==", "value": "ünï"}
    with_headers = json.loads(
        message_json(Message(topic="t", partition=0, offset=0, value=b"v", headers=[("h", b"\xfe"), ("n", None)]))
    )
    assert with_headers["headers"] == [{"key": "h", "value_base64": "/g=="}, {"key": "n", "value": None}]


def test_consume_writes_records_as_bytes_to_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    # click 8.5 deprecated get_binary_stream (gone in 9.0), which the writer used to call.
    from zkconsumer.cli.consume_run import writer

    buffer = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffer))
    msg = Message(topic="t", partition=0, offset=4, value=b"v\xff")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        writer(False, PrintOptions(print_offset=True))(msg)
        writer(True, PrintOptions())(msg)
    first, second = buffer.getvalue().split(b"\n", 1)
    assert first == b"Offset:4\tv\xff"
    assert json.loads(second)["value_base64"] == "dv8="
