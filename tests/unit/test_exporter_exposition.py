"""The /metrics body kept compressed: served gzipped to who asks, inflated to who does not, the same text either way."""

from __future__ import annotations

import gzip
import http.client

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.exporter.exposition import Exposition
from zkconsumer.exporter.server import HttpServer


def test_group_lines_render_only_changed_groups_and_concatenate_to_one_gzip_stream() -> None:
    from zkconsumer.exporter.exposition import GroupLines

    def render(state: tuple[str, int]) -> tuple[str, ...]:
        return (f'a{{g="{state[0]}"}} {state[1]}\n', f'b{{g="{state[0]}"}} {state[1] * 2}\n')

    lines = GroupLines(render, ("# TYPE a gauge\n", "# TYPE b gauge\n"))
    groups = {"x": ("x", 1), "y": ("y", 2)}
    first = lines.exposition(groups)
    groups["y"] = ("y", 3)  # a new state object for y only
    second = lines.exposition(groups)
    assert lines.rendered == 3
    want = '# TYPE a gauge\na{g="x"} 1\na{g="y"} 3\n# TYPE b gauge\nb{g="x"} 2\nb{g="y"} 6\n'
    assert gzip.decompress(b"".join(second.gzipped(b"# end\n"))).decode() == want + "# end\n"
    assert b"".join(second.text(b"")).decode() == want
    assert b"# TYPE a" in b"".join(first.text(b""))


@given(st.lists(st.binary(max_size=3000), max_size=6), st.binary(max_size=200))
def test_both_encodings_carry_the_parts_then_the_tail(parts: list[bytes], tail: bytes) -> None:
    rendered = Exposition(iter(parts))
    text = b"".join(parts) + tail
    assert rendered.length == len(text) - len(tail)
    assert gzip.decompress(b"".join(rendered.gzipped(tail))) == text
    assert b"".join(rendered.text(tail)) == text
    assert (
        gzip.decompress(b"".join(rendered.gzipped(b"other"))) == b"".join(parts) + b"other"
    )  # the stored part is untouched


def test_the_server_negotiates_the_encoding() -> None:
    lines = [f'zkconsumer_partition_lag{{group="g",topic="t",partition="{p}"}} {p}.0\n'.encode() for p in range(5000)]
    # a segment per 100 lines, as a group's lines of one family are (each is compressed on its own)
    rendered = Exposition(b"".join(lines[at : at + 100]) for at in range(0, len(lines), 100))
    assert rendered.compressed_bytes * 5 < rendered.length
    server = HttpServer("127.0.0.1", 0, lambda path: (200, "text/plain", rendered.with_tail(b"# end\n")))
    server.start()
    try:
        for accept, encoding in (("gzip", "gzip"), ("", None), ("identity", None)):
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            connection.request("GET", "/metrics", headers={"Accept-Encoding": accept} if accept else {})
            answer = connection.getresponse()
            body = answer.read()
            assert answer.getheader("Content-Encoding") == encoding
            assert int(answer.getheader("Content-Length") or -1) == len(body)
            assert (gzip.decompress(body) if encoding else body) == b"".join(lines) + b"# end\n"
            connection.close()
    finally:
        assert server.stop(10)
