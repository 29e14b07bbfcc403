"""Read and write Java ``.properties`` text exactly as ``java.util.Properties`` does."""

from __future__ import annotations

import re
from collections.abc import Mapping

# Java's Properties only treats these three as blanks; "\v" and Unicode spaces are content.
_BLANKS = " \t\f"
_NATURAL_LINE_END = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text with the rules of ``Properties.load`` (Java 8).

    * A line whose first non-blank character is ``#`` or ``!`` is a comment (a
      trailing backslash does not continue a comment).
    * An odd number of trailing backslashes joins the next line, whose leading
      blanks are dropped; a blank continuation line ends the entry.
    * The key ends at the first unescaped ``=``, ``:`` or blank; blanks around one
      ``=``/``:`` separator are skipped. Trailing blanks stay in the value.
    * Escapes: ``\\t \\n \\r \\f \\uXXXX``; any other escaped character stands
      for itself. A malformed ``\\u`` raises ValueError.
    * A repeated key keeps its last value.
    """
    lines = _NATURAL_LINE_END.split(text)
    result: dict[str, str] = {}
    index = 0
    while index < len(lines):
        logical = lines[index].lstrip(_BLANKS)
        index += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if index == len(lines):
                break  # Java drops a trailing backslash at end of input
            logical += lines[index].lstrip(_BLANKS)
            index += 1
        key, value = _split_entry(logical)
        result[key] = value
    return result


def dump_properties(props: Mapping[str, str]) -> str:
    """Render string pairs so that :func:`parse_properties` (and Java) read them back unchanged."""
    lines = [f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}" for key, value in props.items()]
    return "".join(line + "\n" for line in lines)


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_entry(line: str) -> tuple[str, str]:
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for pos, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = pos, pos + 1, True
            break
        if not escaped and char in _BLANKS:
            key_end, value_start = pos, pos + 1
            break
        escaped = char == "\\" and not escaped
    # Skip blanks, and at most one separator if the key ended on a blank.
    while value_start < len(line):
        char = line[value_start]
        if char not in _BLANKS:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return _unescape(line[:key_end]), _unescape(line[value_start:])


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    pos = 0
    while pos < len(raw):
        char = raw[pos]
        pos += 1
        if char != "\\" or pos == len(raw):
            out.append(char)
            continue
        char = raw[pos]
        pos += 1
        if char == "u":
            digits = raw[pos : pos + 4]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                bad = "\\u" + digits
                raise ValueError(f"malformed \\uxxxx escape {bad!r} in {raw!r}")
            out.append(chr(int(digits, 16)))
            pos += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(char, char))
    # \uD83D\uDE00 is how Java spells one astral character: join UTF-16 surrogate pairs.
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for pos, char in enumerate(text):
        if char == " " and (is_key or pos == 0):
            out.append("\\ ")  # a value keeps inner spaces; only a leading one would be eaten
        elif char in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(char)])
        elif char in "\\=:#!":
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:  # non-ASCII and controls as \uXXXX, split into UTF-16 units like Java
            units = char.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04X}" for i in range(0, len(units), 2))
    return "".join(out)
