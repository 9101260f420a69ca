"""Where a jump lands: a query hit, a lint finding or a probe miss named as a chunk, a line or an offset, and the
chunk of a (possibly re-cut) file it means."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chunkscope.chunking.model import Chunk


@dataclass(frozen=True)
class Jump:
    """Where to go once a file's chunks are shown: a chunk by its index, else a line, else an offset."""

    path: str
    offset: int
    line: int | None = None
    chunk_index: int | None = None
    #: A query hit's end: ``(offset, end)`` is the hit's span, which tells whether ``chunk_index`` still names the
    #: same chunk (a re-cut since the search renumbers the chunks).
    end: int | None = None


def jump_index(chunks: Sequence[Chunk], jump: Jump) -> int | None:
    """The chunk a jump names. By its index whenever that chunk is the one meant: with overlap, the chunk holding
    a hit's start offset is the previous chunk, so an offset search picks the neighbour. Offsets and lines only
    for a jump with no index, or one whose chunks were re-cut since."""
    span = (jump.offset, jump.end) if jump.end is not None else None
    by_index = {c.index: c for c in chunks}
    c = by_index.get(jump.chunk_index) if jump.chunk_index is not None else None
    if c is not None and (span is None or (c.start, c.end) == span):
        return c.index
    if span is not None:
        same = next((c.index for c in chunks if (c.start, c.end) == span), None)
        if same is not None:
            return same
        shared = [(min(c.end, span[1]) - max(c.start, span[0]), -c.index) for c in chunks]
        if shared and max(shared)[0] > 0:  # re-cut: the chunk holding most of the hit's text
            return -max(shared)[1]
    index = next((c.index for c in chunks if c.start <= jump.offset < c.end), None)
    if index is None and jump.line is not None:
        index = next((c.index for c in chunks if c.start_line <= jump.line <= c.end_line), None)
    if index is None and chunks:
        index = min(chunks, key=lambda c: abs(c.start - jump.offset)).index
    return index
