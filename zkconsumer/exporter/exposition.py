"""The /metrics body kept as segments, each with its text and its own deflate stream: a refresh renders and compresses only the groups that changed; a scrape gets them gzipped or as text, never copied whole.

At 1,000 groups of 100 partitions the exposition is 54 MB of text. Compressing it whole again at
every refresh between two ticks (a commit) took 0.2 s on a quiet machine and over a second at
load 17, which made commits wait for the tick. Here each segment (a family's header, or one
group's lines of one family) is compressed once, on its own, ending on a byte boundary (a sync
flush): raw deflate segments made so can be concatenated in any order (what pigz does), so a
body is a gzip header, the segments as they are, the scrape's own tail and the trailer. The
trailer's CRC-32 is computed over the segments' text at each publish (0.06 s at that size).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

RAW = -15  # zlib's wbits for raw deflate (no header, no trailer)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, no time, OS unknown
S = TypeVar("S")  # a group's state (view.GroupState): compared by identity


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of the body: its text and that text as raw deflate ending on a byte boundary."""

    text: bytes
    deflated: bytes


def segment(text: bytes) -> Segment:
    """`text` compressed on its own (level 1: the body is compressed for memory, not the wire)."""
    if not text:
        return Segment(b"", b"")
    compressor = zlib.compressobj(1, zlib.DEFLATED, RAW)
    return Segment(text, compressor.compress(text) + compressor.flush(zlib.Z_SYNC_FLUSH))


class Exposition:
    """The segments of the view's families in order, and their text's CRC-32 and length, so that
    each scrape can end the body with its own families.

    Example::

        rendered = Exposition(families.render_view(state))
        body = rendered.with_tail(health_bytes)      # a server.Negotiated body
    """

    def __init__(self, parts: Iterable[bytes] = (), *, segments: Sequence[Segment] | None = None) -> None:
        self._segments = tuple(segments if segments is not None else (segment(part) for part in parts))
        crc, length = 0, 0
        for piece in self._segments:
            crc = zlib.crc32(piece.text, crc)
            length += len(piece.text)
        self._crc = crc
        self.length = length  # of the text

    @property
    def compressed_bytes(self) -> int:
        return sum(len(piece.deflated) for piece in self._segments)

    def with_tail(self, tail: bytes) -> ScrapeBody:
        return ScrapeBody(self, tail)

    def gzipped(self, tail: bytes) -> tuple[bytes, ...]:
        """The gzip stream of the segments and then `tail`."""
        last = zlib.compressobj(1, zlib.DEFLATED, RAW)
        end = last.compress(tail) + last.flush()  # the final block
        trailer = struct.pack("<II", zlib.crc32(tail, self._crc), (self.length + len(tail)) & 0xFFFFFFFF)
        return (GZIP_HEADER, *(piece.deflated for piece in self._segments if piece.deflated), end + trailer)

    def text(self, tail: bytes) -> Iterator[bytes]:
        """The segments' text, then `tail`."""
        for piece in self._segments:
            if piece.text:
                yield piece.text
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
    """Each group's segments (`render(state)`: its lines of each family, in the order of
    `headers`) kept while its state is the same object: a refresh between ticks samples one group
    and publishes every other group's state as it was, so only that group's lines are rendered
    and compressed again (at 1,000 groups of 100 partitions rendering every group took 1.5 s).

    Costs the text itself (54 MB at that size) beside its compressed copy. One thread (the
    refresh thread) calls `exposition`.

    Example::

        lines = GroupLines(families.group_parts, families.view_headers())
        rendered = lines.exposition(state.groups)
    """

    def __init__(self, render: Callable[[S], tuple[str, ...]], headers: Sequence[str]) -> None:
        self._render = render
        self._headers = tuple(segment(header.encode()) for header in headers)
        self._kept: dict[str, tuple[S, tuple[Segment, ...]]] = {}
        self.rendered = 0  # groups rendered so far (tests count them)

    def exposition(self, groups: Mapping[str, S]) -> Exposition:
        """The exposition of these groups (by name), rendering only those whose state changed."""
        kept: dict[str, tuple[S, tuple[Segment, ...]]] = {}
        for name, state in sorted(groups.items()):
            known = self._kept.get(name)
            if known is None or known[0] is not state:
                known = (state, tuple(segment(part.encode()) for part in self._render(state)))
                self.rendered += 1
            kept[name] = known
        self._kept = kept
        ordered = [pieces for _state, pieces in kept.values()]
        segments: list[Segment] = []
        for number, header in enumerate(self._headers):
            segments.append(header)
            segments.extend(pieces[number] for pieces in ordered)
        return Exposition(segments=segments)
