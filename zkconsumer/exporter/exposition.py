"""The /metrics body rendered once per refresh and kept gzip-compressed: served compressed, or inflated part by part, never copied whole.

At 1,000 groups of 100 partitions the exposition is 54 MB of text; kept as it is, the exporter held
it twice while a refresh replaced it (and a scrape made a third copy to append its own families).
Compressed at level 1 it is a tenth of that. Prometheus asks for gzip; any other client gets the
text inflated as it is written.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

GZIP = 31  # zlib's wbits for a gzip header and trailer
S = TypeVar("S")  # a group's state (view.GroupState): compared by identity


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


class GroupLines(Generic[S]):
    """Each group's lines (`render(state)`: a part per family) kept while its state is the same
    object: a refresh between ticks samples one group and publishes every other group's state as
    it was, so only that group's lines are rendered again (at 1,000 groups of 100 partitions every
    group's took 1.5 s; the compression of the whole, 0.2 s, is still done each time).

    Costs the text itself (54 MB at that size) beside its compressed copy. One thread (the
    refresh thread) calls `exposition`.

    Example::

        lines = GroupLines(families.group_parts)
        rendered = lines.exposition(state.groups, families.render_parts)
    """

    def __init__(self, render: Callable[[S], tuple[str, ...]]) -> None:
        self._render = render
        self._kept: dict[str, tuple[S, tuple[str, ...]]] = {}
        self.rendered = 0  # groups rendered so far (tests count them)

    def exposition(
        self, groups: Mapping[str, S], join: Callable[[Sequence[tuple[str, ...]]], Iterable[bytes]]
    ) -> Exposition:
        """The exposition of these groups (by name), rendering only those whose state changed."""
        kept: dict[str, tuple[S, tuple[str, ...]]] = {}
        for name, state in sorted(groups.items()):
            known = self._kept.get(name)
            if known is None or known[0] is not state:
                known = (state, self._render(state))
                self.rendered += 1
            kept[name] = known
        self._kept = kept
        return Exposition(join([parts for _state, parts in kept.values()]))
