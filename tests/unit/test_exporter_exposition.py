"""The /metrics body kept compressed: served gzipped to who asks, inflated to who does not, the same text either way."""

from __future__ import annotations

import gzip
import http.client

from hypothesis import given
from hypothesis import strategies as st

from zkconsumer.exporter.exposition import Exposition
from zkconsumer.exporter.server import HttpServer


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
    rendered = Exposition(iter(lines))
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
