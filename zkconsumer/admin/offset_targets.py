"""Reset targets (kafka-consumer-groups' --to-*, --shift-by, --by-duration) and the log-range check of new offsets."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from zkconsumer.errors import AdminUsageError, InputError


@dataclass(frozen=True)
class Target:
    """What --to-*/--shift-by/--by-duration asked for: kind is earliest|latest|offset|datetime|shift|current.

    A --by-duration is a datetime target (its moment is computed when the option is read)."""

    kind: str
    value: int = 0


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


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """An ISO-8601 duration as Java's Duration.parse takes it (PnDTnHnMn.nS: days, hours, minutes,
    seconds; kafka-consumer-groups --by-duration) -> milliseconds."""
    match = _DURATION.fullmatch(text.strip())
    if not match or (match[3] is not None and match[3].upper() == "T") or not any(match[i] for i in (2, 4, 5, 6)):
        raise InputError(
            f"bad duration {text!r}: use ISO 8601 such as PT1H, P1DT12H or PT30M (days, hours, minutes, seconds)"
        )
    sign = -1 if match[1] == "-" else 1
    days, hours, minutes, seconds = (int(match[i] or 0) for i in (2, 4, 5, 6))
    fraction = int((match[7] or "").ljust(3, "0")[:3] or 0)
    millis = ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000
    millis += -fraction if match[6] and match[6].startswith("-") else fraction
    return sign * millis


def reset_offset(
    target: Target, current: int | None, log_start: int, log_end: int, time_offset: int | None = None
) -> tuple[int | None, str]:
    """The offset a target asks for on one partition (not clamped: see range_problem), and a note.

    None means "leave this partition alone" (the note says why). `time_offset` is the broker's answer
    for a datetime target (-1 or None: no message that late, so the log end)."""
    has_current = current is not None and current >= 0
    if target.kind == "earliest":
        return log_start, ""
    if target.kind == "latest":
        return log_end, ""
    if target.kind == "offset":
        return target.value, ""
    if target.kind == "datetime":
        if time_offset is None or time_offset < 0:
            return log_end, "no message that late: the log end"
        return time_offset, ""
    if target.kind == "shift":
        if not has_current:
            return None, "no committed offset to shift from"
        assert current is not None
        return current + target.value, ""
    if target.kind == "current":
        if not has_current:
            return log_end, "no committed offset: the log end, as kafka-consumer-groups --to-current"
        return current, ""
    raise AdminUsageError(f"unknown reset target {target.kind!r}")


def range_problem(offset: int, log_start: int, log_end: int) -> str | None:
    """Why `offset` cannot be a partition's committed offset (None: it lies in [log start, log end])."""
    valid = f"the log holds [{log_start}, {log_end}]"
    if offset < 0:
        return f"offset {offset} is negative; {valid}"
    if offset > log_end:
        return f"offset {offset} is beyond the log end; {valid}"
    if offset < log_start:
        return f"offset {offset} is before the log start (deleted messages); {valid}"
    return None


def clamp(offset: int, log_start: int, log_end: int) -> tuple[int, str]:
    """`offset` moved into [log start, log end], and the note saying so ("" if it was inside)."""
    if offset < log_start:
        return log_start, f"clamped from {offset} to the log start {log_start}"
    if offset > log_end:
        return log_end, f"clamped from {offset} to the log end {log_end}"
    return offset, ""
