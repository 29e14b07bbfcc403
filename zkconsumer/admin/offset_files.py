"""Offset files, pure: ExportZkOffsets lines, JSON and kafka-consumer-groups' CSV, parsed and written."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from zkconsumer.errors import InputError, ZkDataError
from zkconsumer.zookeeper import znodes

FILE_FORMATS = ("lines", "json", "csv")


@dataclass(frozen=True, order=True)
class OffsetEntry:
    """One offset of an import or export file; `source` says where in the input it came from."""

    group: str
    topic: str
    partition: int
    offset: int
    source: str = field(default="", compare=False)

    def export_line(self) -> str:
        """ExportZkOffsets' line: /consumers/G/offsets/T/p:<offset> (paths relative to the chroot)."""
        return f"{znodes.offset_path(self.group, self.topic, self.partition)}:{self.offset}"

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "offset": self.offset}


# ---------------------------------------------------------------- bytes in


def decode_input(data: bytes, name: str) -> str:
    """An input file's text: UTF-8 (a leading BOM dropped); InputError naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line}); "
            "offset files are UTF-8 text"
        ) from None


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
        hint = ""
        if line.lstrip()[:1] in ("{", "["):
            hint = " (it looks like JSON: pass --format json)"
        elif line.count(",") >= 2 and not line.lstrip().startswith("/"):
            hint = " (it looks like CSV: pass --format csv)"
        if not colon or hint:
            raise InputError(
                f"line {number}: expected /consumers/<group>/offsets/<topic>/<partition>:<offset>, "
                f"got {line[:80]!r}{hint}"
            )
        try:
            group, topic, partition = znodes.parse_offset_path(path.strip())
        except ZkDataError as exc:
            raise InputError(f"line {number}: {exc.reason} ({path[:80]!r})") from None
        where = f"line {number}"
        entries.append(OffsetEntry(group, topic, partition, _offset(value.strip(), where), where))
    return entries


def _offset(text: str, where: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]{1,19}", text) or not -(2**63) <= int(text) < 2**63:
        raise InputError(f"{where}: offset {text[:40]!r} is not a 64-bit decimal integer")
    return int(text)


def format_export(entries: Iterable[OffsetEntry]) -> str:
    return "".join(entry.export_line() + "\n" for entry in sorted(entries))


def export_json(entries: Iterable[OffsetEntry]) -> str:
    """{"version": 1, "offsets": [{"group", "topic", "partition", "offset"}, ...]} on one line."""
    return json.dumps({"version": 1, "offsets": [e.as_dict() for e in sorted(entries)]}) + "\n"


def parse_export_json(text: str) -> list[OffsetEntry]:
    """The JSON export format (a bare list of entries is accepted too)."""
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
        entries.append(OffsetEntry(group, topic, partition, offset, where))
    return entries


def format_csv(entries: Iterable[OffsetEntry], *, with_group: bool) -> str:
    """kafka-consumer-groups --export: `topic,partition,offset` lines for one group, with a leading
    group column for several; no header."""
    return "".join(
        (f"{e.group}," if with_group else "") + f"{e.topic},{e.partition},{e.offset}\n" for e in sorted(entries)
    )


def parse_csv(text: str, group: str | None) -> list[OffsetEntry]:
    """kafka-consumer-groups' reset CSV: `topic,partition,offset` (the group from `group`) or
    `group,topic,partition,offset` lines; blank lines and a header line are skipped."""
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        cells = [cell.strip() for cell in line.split(",")]
        where = f"line {number}"
        if not line.strip() or cells in (["topic", "partition", "offset"], ["group", "topic", "partition", "offset"]):
            continue
        if len(cells) == 3:
            if group is None:
                raise InputError(f"{where}: topic,partition,offset names no group: pass --group")
            row_group, (topic, partition, offset) = group, cells
        elif len(cells) == 4:
            row_group, topic, partition, offset = cells
        else:
            raise InputError(
                f"{where}: expected topic,partition,offset or group,topic,partition,offset, got {line[:80]!r}"
            )
        if not re.fullmatch(r"[0-9]{1,10}", partition):
            raise InputError(f"{where}: partition {partition[:40]!r} is not a number")
        try:
            znodes.offset_path(row_group, topic, int(partition))
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
        entries.append(OffsetEntry(row_group, topic, int(partition), _offset(offset, where), where))
    return entries


def parse_offsets_file(text: str, fmt: str, group: str | None) -> list[OffsetEntry]:
    """An import file in `fmt` (lines, json or csv); `group`: a 3-column CSV's group."""
    if fmt == "json":
        return parse_export_json(text)
    if fmt == "csv":
        return parse_csv(text, group)
    return parse_export_lines(text)


# ---------------------------------------------------------------- option values
