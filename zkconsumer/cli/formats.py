"""Pure text formats of the CLI: export files, partition lists, datetimes, reset targets, printed messages."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE, Message

from zkconsumer.zookeeper import znodes
from zkconsumer.zookeeper.znodes import ZkDataError


class InputError(ValueError):
    """User-supplied text (a file line, an option value) that cannot be used; the message says where."""


@dataclass(frozen=True, order=True)
class OffsetEntry:
    group: str
    topic: str
    partition: int
    offset: int

    def export_line(self) -> str:
        """ExportZkOffsets' line: /consumers/G/offsets/T/p:<offset> (paths relative to the chroot)."""
        return f"{znodes.offset_path(self.group, self.topic, self.partition)}:{self.offset}"

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "offset": self.offset}


# ---------------------------------------------------------------- export / import files


def parse_export_lines(text: str) -> list[OffsetEntry]:
    """ImportZkOffsets' reader: one `path:offset` per line, stopping at the first empty line.

    Unlike the original, each line is validated (a canonical offset path, a 64-bit decimal offset)
    and surrounding blanks or a trailing CR are ignored, so a bad file fails before anything is written.
    """
    entries: list[OffsetEntry] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            break
        path, colon, value = line.strip().rpartition(":")
        if not colon:
            raise InputError(
                f"line {number}: expected /consumers/<group>/offsets/<topic>/<partition>:<offset>, got {line[:80]!r}"
            )
        try:
            group, topic, partition = znodes.parse_offset_path(path.strip())
        except ZkDataError as exc:
            raise InputError(f"line {number}: {exc.reason} ({path[:80]!r})") from None
        entries.append(OffsetEntry(group, topic, partition, _offset(value.strip(), f"line {number}")))
    return entries


def _offset(text: str, where: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]{1,19}", text) or not -(2**63) <= int(text) < 2**63:
        raise InputError(f"{where}: offset {text[:40]!r} is not a 64-bit decimal integer")
    return int(text)


def format_export(entries: Iterable[OffsetEntry]) -> str:
    return "".join(entry.export_line() + "\n" for entry in sorted(entries))


def export_json(entries: Iterable[OffsetEntry]) -> str:
    """{"version": 1, "offsets": [{"group", "topic", "partition", "offset"}, ...]}."""
    return json.dumps({"version": 1, "offsets": [e.as_dict() for e in sorted(entries)]}, indent=1) + "\n"


def parse_export_json(text: str) -> list[OffsetEntry]:
    """The --json export format (a bare list of entries is accepted too)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}") from None
    items = doc.get("offsets") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InputError('expected {"offsets": [{"group", "topic", "partition", "offset"}, ...]}')
    entries = []
    for index, item in enumerate(items):
        where = f"offsets[{index}]"
        if not isinstance(item, dict) or not {"group", "topic", "partition", "offset"} <= item.keys():
            raise InputError(f"{where}: needs group, topic, partition and offset")
        group, topic, partition, offset = (item[k] for k in ("group", "topic", "partition", "offset"))
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (partition, offset)):
            raise InputError(f"{where}: partition and offset must be integers")
        try:
            znodes.offset_path(group, topic, partition)
            znodes.encode_offset(offset)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{where}: {exc}") from None
        entries.append(OffsetEntry(group, topic, partition, offset))
    return entries


# ---------------------------------------------------------------- option values


def parse_partitions(text: str) -> list[int]:
    """ "0,3,5-7" -> [0, 3, 5, 6, 7]."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if not match:
            raise InputError(f"bad partition list {text!r}: use numbers and ranges like 0,3,5-7")
        low, high = int(match[1]), int(match[2] or match[1])
        if high < low or high - low > 100_000:
            raise InputError(f"bad partition range {part!r}")
        out.update(range(low, high + 1))
    return sorted(out)


def parse_datetime(text: str, *, now: dt.datetime | None = None) -> int:
    """ISO 8601 ("2024-05-01T12:00:00Z", "2024-05-01 12:00", "2024-05-01") -> epoch ms; no zone = local time."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"bad datetime {text!r}: use ISO 8601 such as 2024-05-01T12:00:00Z") from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # local time, like kafka-consumer-groups' --to-datetime without zone
    return int(parsed.timestamp() * 1000)


def parse_key_value(text: str, what: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise InputError(f"bad {what} {text!r}: expected key=value")
    return key.strip(), value


# ---------------------------------------------------------------- reset targets


@dataclass(frozen=True)
class Target:
    """What --to-*/--shift-by asked for: kind is earliest|latest|offset|datetime|shift."""

    kind: str
    value: int = 0


def reset_offset(
    target: Target, current: int | None, log_start: int, log_end: int, time_offset: int | None = None
) -> tuple[int | None, str]:
    """The new offset for one partition, clamped to [log_start, log_end], and a note explaining it.

    None means "leave this partition alone" (the note says why). `time_offset` is the broker's answer
    for a datetime target (-1 or None: no message that late, so the log end).
    """
    if target.kind == "earliest":
        wanted = log_start
    elif target.kind == "latest":
        wanted = log_end
    elif target.kind == "offset":
        wanted = target.value
    elif target.kind == "datetime":
        wanted = log_end if time_offset is None or time_offset < 0 else time_offset
    elif target.kind == "shift":
        if current is None or current < 0:
            return None, "no committed offset to shift from"
        wanted = current + target.value
    else:
        raise ValueError(f"unknown reset target {target.kind!r}")
    if wanted < log_start:
        return log_start, f"clamped to the log start ({wanted} < {log_start})"
    if wanted > log_end:
        return log_end, f"clamped to the log end ({wanted} > {log_end})"
    return wanted, ""


# ---------------------------------------------------------------- printed messages


@dataclass(frozen=True)
class PrintOptions:
    """DefaultMessageFormatter's print.* properties."""

    print_key: bool = False
    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> PrintOptions:
        known = {"print.key", "print.timestamp", "print.partition", "print.offset", "key.separator", "line.separator"}
        unknown = sorted(set(props) - known)
        if unknown:
            raise InputError(f"unknown --property {unknown[0]!r}; known: {', '.join(sorted(known))}")

        def flag(name: str) -> bool:
            value = props.get(name, "false").strip().lower()
            if value not in ("true", "false"):
                raise InputError(f"--property {name}={props[name]!r}: expected true or false")
            return value == "true"

        return cls(
            flag("print.key"),
            flag("print.timestamp"),
            flag("print.partition"),
            flag("print.offset"),
            _unescape(props.get("key.separator", "\t")).encode(),
            _unescape(props.get("line.separator", "\n")).encode(),
        )


def _unescape(text: str) -> str:
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def create_time(msg: Message) -> int | None:
    """The record's timestamp in ms, or None when it has none."""
    kind, stamp = msg.timestamp()
    return None if kind == TIMESTAMP_NOT_AVAILABLE or stamp < 0 else stamp


def format_message(msg: Message, options: PrintOptions) -> bytes:
    """One record as the old console consumer printed it: [CreateTime|LogAppendTime:ts sep][Partition:p sep][Offset:o sep]
    [key sep]value line-separator; null key/value print as "null"."""
    parts: list[bytes] = []
    if options.print_timestamp:
        stamp = create_time(msg)
        kind = "LogAppendTime" if msg.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME else "CreateTime"
        parts.append(b"NO_TIMESTAMP" if stamp is None else f"{kind}:{stamp}".encode())
    if options.print_partition:
        parts.append(f"Partition:{msg.partition()}".encode())
    if options.print_offset:
        parts.append(f"Offset:{msg.offset()}".encode())
    key, value = msg.key(), msg.value()
    if options.print_key:
        parts.append(b"null" if key is None else bytes(key))
    parts.append(b"null" if value is None else bytes(value))
    return options.key_separator.join(parts) + options.line_separator


def _text_or_base64(data: bytes | None, name: str) -> dict[str, Any]:
    if data is None:
        return {name: None}
    try:
        return {name: bytes(data).decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_base64": base64.b64encode(bytes(data)).decode("ascii")}


def message_json(msg: Message) -> str:
    """One JSON line per record; key/value as text when UTF-8, else as key_base64/value_base64."""
    doc: dict[str, Any] = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": create_time(msg),
    }
    doc.update(_text_or_base64(msg.key(), "key"))
    doc.update(_text_or_base64(msg.value(), "value"))
    return json.dumps(doc, ensure_ascii=False)
