"""Read and write Java ``.properties`` text as ``java.util.Properties`` does, through javaproperties."""

from __future__ import annotations

from collections.abc import Mapping

import javaproperties

# javaproperties (MIT, pure Python, no dependencies) follows Properties.load/store: the blanks " \t\f",
# "#"/"!" comments, "=", ":" or blank separators, odd trailing backslashes joining the next line (its
# leading blanks dropped), \t \n \r \f and \uXXXX escapes (UTF-16 surrogate pairs joined), any other
# escaped character standing for itself, the last of a repeated key winning.
# tests/unit/test_properties_java.py checks it against Java's own Properties.load.


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text with the rules of ``Properties.load``; a malformed ``\\uXXXX`` raises
    ValueError (Java: IllegalArgumentException)."""
    try:
        return dict(javaproperties.loads(text))
    except javaproperties.InvalidUEscapeError as exc:
        raise ValueError(f"malformed \\uxxxx escape {exc.escape!r} in .properties text") from None


def dump_properties(props: Mapping[str, str]) -> str:
    """Render string pairs so that :func:`parse_properties` (and Java) read them back unchanged:
    non-ASCII as ``\\uXXXX``, no timestamp comment."""
    return javaproperties.dumps(props, timestamp=None, ensure_ascii=True)
