"""JSON as Kafka's Scala code reads and writes it (Jackson and CoreUtils quirks)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from zkconsumer.errors import ZkDataError

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class _TooBig:
    """Integer literal too long to be an Int or Long anyway (Jackson: BigIntegerNode)."""


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Jackson rejects NaN and Infinity by default


_DECODER = json.JSONDecoder(
    parse_constant=_no_constants, parse_int=lambda text: int(text) if len(text) <= 40 else _TooBig()
)


def _utf8(data: bytes, path: str) -> str:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ZkDataError(path, f"expected bytes, got {type(data).__name__}")
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ZkDataError(path, f"data is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _parse_json(text: str) -> Any:
    """ObjectMapper.readTree: leading JSON whitespace skipped, anything after the first value ignored."""
    start = len(text) - len(text.lstrip(" \t\n\r"))
    if start == len(text):
        raise ValueError("no JSON value")  # readTree gives null, which every caller treats as a failure
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    # Jackson's root-level checks: "1x" and "truex" are parse errors ("1 x" and "true{" are not).
    after = text[end : end + 1]
    if after and (
        (type(value) in (int, float, _TooBig) and after not in " \t\n\r")
        or ((value is None or isinstance(value, bool)) and re.match(r"[\w$\x00-\x08\x0e-\x1b\x7f-\x9f]", after))
    ):
        raise ValueError(f"unexpected {after!r} after a root-level value")
    return value


def _parse_json_lenient(text: str) -> Any | None:
    """Json.parseFull from 1.0.1: on failure retry with every backslash doubled (KAFKA-6319); else None."""
    for candidate in (text, text.replace("\\", "\\\\")):
        try:
            return _parse_json(candidate)
        except ValueError:
            continue
    return None


def _is_int32(value: Any) -> TypeGuard[int]:  # DecodeJson.DecodeInt is JsonNode.isInt; JSON true is no int
    return type(value) is int and _INT32[0] <= value <= _INT32[1]


def _show(value: Any) -> str:
    return "a huge integer" if isinstance(value, _TooBig) else json.dumps(value)[:80]


def _int_field(doc: Mapping[str, Any], key: str, path: str) -> int:
    value = doc.get(key)
    if not _is_int32(value):
        found = _show(doc[key]) if key in doc else "nothing"
        raise ZkDataError(path, f"field {key!r} must be a 32-bit JSON integer, got {found}")
    return value


def _check_int(value: Any, what: str, bounds: tuple[int, int] = _INT32) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{what} must be an int in [{bounds[0]}, {bounds[1]}], got {value!r}")
    return value


def _number(value: int, what: str = "partition") -> str:
    return str(_check_int(value, what))  # partitions are any Int a topic znode lists, even negative


def _parse_java_integer(text: str, bounds: tuple[int, int]) -> int | None:
    # Long.parseLong / Integer.parseInt: one optional sign, then Unicode decimal digits, nothing else.
    if not re.fullmatch(r"[+-]?\d+", text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


_JACKSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_CORE_ESCAPES = {**_JACKSON_ESCAPES, "/": "\\/"}


def _jackson_quote(text: str) -> str:
    """A JSON string as Jackson 2.9 writes it: only '"', '\\' and C0 controls escaped, hex in upper case."""
    return '"' + re.sub(r'["\\\x00-\x1f]', lambda m: _JACKSON_ESCAPES.get(m[0]) or f"\\u{ord(m[0]):04X}", text) + '"'


def _raw_quote(text: str) -> str:
    return f'"{text}"'  # Json.encode before 1.0.1 inserted strings without any escaping


def coreutils_json_escape(text: str) -> str:
    """CoreUtils.JSONEscapeString: escapes '"', '\\', '/', C0, DEL and C1 controls; hex in lower case."""
    return re.sub(r'["\\/\x00-\x1f\x7f-\x9f]', lambda m: _CORE_ESCAPES.get(m[0]) or f"\\u{ord(m[0]):04x}", text)


def _to_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"cannot encode the lone surrogate at index {exc.start}") from None
