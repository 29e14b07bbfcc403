"""The /metrics body rendered once per refresh and kept gzip-compressed: served compressed, or inflated part by part, never copied whole.

At 1,000 groups of 100 partitions the exposition is 54 MB of text; kept as it is, the exporter held
it twice while a refresh replaced it (and a scrape made a third copy to append its own families).
Compressed at level 1 it is a tenth of that. Prometheus asks for gzip; any other client gets the
text inflated as it is written.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

GZIP = 31  # zlib's wbits for a gzip header and trailer


class Exposition:
    """`parts` (the view's families) compressed into one gzip stream left open, so that each scrape
    can end it with its own families (a copy of the compressor: the stored part is never touched).

    Example::

        rendered = Exposition(families.render_view(state))
        body = rendered.with_tail(health_bytes)      # a server.Negotiated body
    """

    def __init__(self, parts: Iterable[bytes] = ()) -> None:
        compressor = zlib.compressobj(1, zlib.DEFLATED, GZIP)
        chunks, length = [], 0
        for part in parts:
            length += len(part)
            if out := compressor.compress(part):
                chunks.append(out)
        self._chunks = tuple(chunks)
        self._open = compressor
        self.length = length  # of the text

    @property
    def compressed_bytes(self) -> int:
        return sum(len(chunk) for chunk in self._chunks)

    def with_tail(self, tail: bytes) -> ScrapeBody:
        return ScrapeBody(self, tail)

    def gzipped(self, tail: bytes) -> tuple[bytes, ...]:
        """The gzip stream of the parts and then `tail`."""
        rest = self._open.copy()
        return (*self._chunks, rest.compress(tail) + rest.flush())

    def text(self, tail: bytes) -> Iterator[bytes]:
        """The parts' text, inflated a chunk at a time, then `tail`."""
        inflate = zlib.decompressobj(GZIP)
        for chunk in (*self._chunks, self._open.copy().flush()):
            if out := inflate.decompress(chunk):
                yield out
        yield tail


@dataclass(frozen=True)
class ScrapeBody:
    """One scrape's body: the rendered view and the families rendered for this scrape."""

    exposition: Exposition
    tail: bytes

    def negotiate(self, gzip: bool) -> tuple[str | None, int, Iterable[bytes]]:
        """(Content-Encoding, Content-Length, chunks) for a request that accepts gzip or not."""
        if gzip:
            chunks = self.exposition.gzipped(self.tail)
            return "gzip", sum(len(chunk) for chunk in chunks), chunks
        return None, self.exposition.length + len(self.tail), self.exposition.text(self.tail)
