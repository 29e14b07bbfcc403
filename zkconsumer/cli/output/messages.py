"""How `consume` prints a record: DefaultMessageFormatter's --property print.* options, or one JSON line."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE, Message

from zkconsumer.admin import InputError

FLAGS = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key", "print.value")
SEPARATORS = ("key.separator", "line.separator", "headers.separator", "headers.key.separator", "null.literal")


@dataclass(frozen=True)
class PrintOptions:
    """DefaultMessageFormatter's properties (kafka-console-consumer --property)."""

    print_key: bool = False
    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    print_headers: bool = False
    print_value: bool = True
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> PrintOptions:
        known = set(FLAGS) | set(SEPARATORS)
        unknown = sorted(set(props) - known)
        if unknown:
            raise InputError(f"unknown --property {unknown[0]!r}; known: {', '.join(sorted(known))}")

        def flag(name: str, default: str = "false") -> bool:
            value = props.get(name, default).strip().lower()
            if value not in ("true", "false"):
                raise InputError(f"--property {name}={props[name]!r}: expected true or false")
            return value == "true"

        def text(name: str, default: str) -> bytes:
            return _unescape(props.get(name, default)).encode()

        return cls(
            print_key=flag("print.key"),
            print_timestamp=flag("print.timestamp"),
            print_partition=flag("print.partition"),
            print_offset=flag("print.offset"),
            key_separator=text("key.separator", "\t"),
            line_separator=text("line.separator", "\n"),
            print_headers=flag("print.headers"),
            print_value=flag("print.value", "true"),
            headers_separator=text("headers.separator", ","),
            headers_key_separator=text("headers.key.separator", ":"),
            null_literal=text("null.literal", "null"),
        )


def _unescape(text: str) -> str:
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def header_items(msg: Message) -> list[tuple[str, bytes | None]]:
    """The record's headers in order, values as bytes (None: a null value)."""
    headers = msg.headers() or []
    items = list(headers.items()) if isinstance(headers, dict) else list(headers)
    return [(name, value.encode() if isinstance(value, str) else value) for name, value in items]


def create_time(msg: Message) -> int | None:
    """The record's timestamp in ms, or None when it has none."""
    kind, stamp = msg.timestamp()
    return None if kind == TIMESTAMP_NOT_AVAILABLE or stamp < 0 else stamp


def format_message(msg: Message, options: PrintOptions) -> bytes:
    """One record as kafka-console-consumer prints it: [CreateTime|LogAppendTime:ts sep][Partition:p sep]
    [Offset:o sep][headers sep][key sep][value] line-separator, where only what is printed is
    separated; a null key/value/header prints as null.literal, no headers as NO_HEADERS."""
    parts: list[bytes] = []
    if options.print_timestamp:
        stamp = create_time(msg)
        kind = "LogAppendTime" if msg.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME else "CreateTime"
        parts.append(b"NO_TIMESTAMP" if stamp is None else f"{kind}:{stamp}".encode())
    if options.print_partition:
        parts.append(f"Partition:{msg.partition()}".encode())
    if options.print_offset:
        parts.append(f"Offset:{msg.offset()}".encode())
    if options.print_headers:
        headers = header_items(msg)
        parts.append(
            options.headers_separator.join(
                name.encode() + options.headers_key_separator + (options.null_literal if v is None else bytes(v))
                for name, v in headers
            )
            if headers
            else b"NO_HEADERS"
        )
    key, value = msg.key(), msg.value()
    if options.print_key:
        parts.append(options.null_literal if key is None else bytes(key))
    if options.print_value:
        parts.append(options.null_literal if value is None else bytes(value))
    if not parts:
        return b""
    return options.key_separator.join(parts) + options.line_separator


def _text_or_base64(data: bytes | None, name: str) -> dict[str, Any]:
    if data is None:
        return {name: None}
    try:
        return {name: bytes(data).decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_base64": base64.b64encode(bytes(data)).decode("ascii")}


def message_json(msg: Message) -> str:
    """One JSON line per record; key/value as text when UTF-8, else as key_base64/value_base64;
    headers (when the record has any) as a list of {"key", "value" or "value_base64"}."""
    doc: dict[str, Any] = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": create_time(msg),
    }
    doc.update(_text_or_base64(msg.key(), "key"))
    doc.update(_text_or_base64(msg.value(), "value"))
    headers = header_items(msg)
    if headers:
        doc["headers"] = [{"key": name, **_text_or_base64(value, "value")} for name, value in headers]
    return json.dumps(doc, ensure_ascii=False)
