"""parse_properties and dump_properties against Java's own Properties.load, run in one small JVM.

Hypothesis makes .properties texts full of what is easy to get wrong (blanks, separators, comments,
escapes, \\uXXXX, line continuations, every kind of line end); one `java PropsLoad.java` process
(Java's source launcher, no build) loads each with java.util.Properties and answers with the entries
as UTF-16 code units in hex, or with the IllegalArgumentException of a malformed \\uXXXX. The JVM is
about 40 MB and starts once for the module.

Where they differ (javaproperties 0.8.2 and the hand-written reader before it alike): a logical line
that begins with a continuation, i.e. a line of blanks and one backslash. Java 17 then reads an
empty key (``\\`` at the end of the input gives ``{"": ""}``) and takes a ``#`` or ``!`` right
after the continuation for a comment; we read nothing and a key. No real configuration file has
such a line; test_where_we_differ_from_java pins it and the generated texts leave it out.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from zkconsumer.config.properties import dump_properties, parse_properties

JAVA_SOURCE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class PropsLoad {
    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) b.append(String.format("%04x", (int) c));
        return b.toString();
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "US-ASCII");
        for (String line; (line = in.readLine()) != null; ) {
            String text = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
            Properties p = new Properties();
            try {
                p.load(new StringReader(text));
            } catch (IllegalArgumentException e) {
                out.println("ERR " + e.getMessage());
                continue;
            }
            StringBuilder b = new StringBuilder("OK");
            for (String k : p.stringPropertyNames()) b.append(' ').append(hex(k)).append(':').append(hex(p.getProperty(k)));
            out.println(b);
        }
    }
}
"""


class JavaProperties:
    """A running `java PropsLoad.java`: load(text) -> the entries Java reads, or ValueError."""

    def __init__(self, folder: Path) -> None:
        java = shutil.which("java")
        assert java, "java is not on the PATH (scripts/setup-env.sh installs Java 17)"
        source = folder / "PropsLoad.java"
        source.write_text(JAVA_SOURCE)
        self.process = subprocess.Popen(
            [java, "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", str(source)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def load(self, text: str) -> dict[str, str]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(base64.b64encode(text.encode()).decode() + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().rstrip("\n")
        assert answer, f"PropsLoad.java died (exit {self.process.poll()})"
        if answer.startswith("ERR "):
            raise ValueError(answer[4:])
        entries = {}
        for pair in answer.split(" ")[1:]:
            key, value = (_from_hex(part) for part in pair.split(":"))
            entries[key] = value
        return entries

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _from_hex(units: str) -> str:
    raw = bytes.fromhex(units)  # UTF-16 code units, big-endian: surrogate pairs join on decoding
    return raw.decode("utf-16-be", "surrogatepass")


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaProperties]:
    jvm = JavaProperties(tmp_path_factory.mktemp("props-java"))
    yield jvm
    jvm.close()


# A line of blanks and an odd run of backslashes, then a line end or the end: where we differ.
_STARTS_WITH_CONTINUATION = re.compile(r"(^|[\r\n])[ \t\f]*(\\\\)*\\([\r\n]|$)")


def _same_as_java(java: JavaProperties, text: str) -> None:
    try:
        expected = java.load(text)
    except ValueError:
        with pytest.raises(ValueError, match="uxxxx"):
            parse_properties(text)
        return
    assert parse_properties(text) == expected, f"text {text!r}"


# Texts: lines of pieces that matter to the grammar, joined by every line end Java knows.
_PIECES = st.sampled_from(
    [" ", "\t", "\f", "=", ":", "#", "!", "\\", "\\\\", "\\ ", "\\=", "\\:", "\\#", "\\t", "\\n", "\\r", "\\f"]
    + ["\\q", "\\u0041", "\\u00e9", "\\uD83D\\uDE00", "\\u12", "\\uXYZW", "\\u", "\\\r\n", "\\\n", "\\\r"]
    + ["a", "key", "b.c", "v", "1", "é", "\u2028", "\v", "\x00", "\U0001f600", "\x7f"]
)
_LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def properties_texts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.lists(_PIECES, max_size=8).map("".join), max_size=6))
    text = ""
    for line in lines:
        text += line + draw(_LINE_ENDS)
    if draw(st.booleans()) and text:
        text = text[:-1]  # no line end after the last line
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(properties_texts())
def test_parse_reads_what_java_reads(java: JavaProperties, text: str) -> None:
    assume(not _STARTS_WITH_CONTINUATION.search(text))
    _same_as_java(java, text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_parse_of_any_text_reads_what_java_reads(java: JavaProperties, text: str) -> None:
    assume(not _STARTS_WITH_CONTINUATION.search(text))
    _same_as_java(java, text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=12), max_size=5))
def test_java_reads_back_what_dump_writes(java: JavaProperties, props: dict[str, str]) -> None:
    assert java.load(dump_properties(props)) == props


@pytest.mark.parametrize(
    "text",
    [
        "a=b\\\n\nc=d",  # a blank continuation line ends the entry
        "#a=b\\\nc=d",  # a comment never continues
        "a=b\\\n#c",  # a continuation line is never a comment
        "a=b\\",  # a trailing backslash at the end of the input
        "a=b\\\r\n  c",
        "a=\\uD83D\\uDE00",
        "a=\\u12",
        "\\#a=b",
        "a \t = \t b",
        "a = = b",
    ],
)
def test_the_known_edges_read_as_in_java(java: JavaProperties, text: str) -> None:
    _same_as_java(java, text)


@pytest.mark.parametrize(
    ("text", "ours", "javas"),
    [
        ("\\", {}, {"": ""}),
        ("\\\n", {}, {"": ""}),
        ("  \\\n!a=b", {"!a": "b"}, {}),
        ("\\\r\n#a=b\nc=d", {"#a": "b", "c": "d"}, {"c": "d"}),
    ],
)
def test_where_we_differ_from_java(
    java: JavaProperties, text: str, ours: dict[str, str], javas: dict[str, str]
) -> None:
    assert _STARTS_WITH_CONTINUATION.search(text)
    assert (parse_properties(text), java.load(text)) == (ours, javas)
