"""How ``eval`` and ``probe`` show a miss: the chunk that holds the answer (rank, score, ``path:line``) and the
chunks ranked above it, wrapped between items so that no ``path:line`` is ever broken."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chunkscope.safe_text import visible
from chunkscope.cli.table_layout import wrap_items

if TYPE_CHECKING:
    from rich.console import Console

    from chunkscope.evaluation.verdicts import QueryResult, RankedChunk


def chunk_words(c: RankedChunk) -> str:
    """``#3 0.612 path:line``; an unranked chunk by its score alone (when known)."""
    where = visible(c.where, oneline=True)
    if c.rank is not None:
        return f"#{c.rank} {c.score:.3f} {where}"
    return f"unranked {c.score:.3f} {where}" if c.score is not None else f"unranked {where}"


def print_miss_chunks(con: Console, q: QueryResult, indent: int = 4) -> None:
    """A miss's expected chunk (rank, score, path:line) and the chunks that outranked it, each on wrapped lines
    that never cut a ``path:line``."""
    from rich.text import Text

    pad = " " * indent
    if q.expected is not None:
        holds = "(holds the passage)" if q.expected_whole else "(holds part of the passage)"
        for line in wrap_items(f"{pad}expected  ", [chunk_words(q.expected), holds], con.width, sep=" "):
            con.print(Text(line, style="dim"), soft_wrap=True)  # an item wider than the line stays whole
    if not q.outranked_by:
        return
    items = []
    for o in q.outranked_by:
        word = chunk_words(o)
        if o.duplicate:
            alike = f"cosine {o.similarity:.3f}" if o.similarity is not None else "same text"
            word += f" (near-duplicate, {alike})"
        items.append(word)
    more = (q.outranked_count - len(q.outranked_by)) if q.outranked_count is not None else None
    if more:
        items.append(f"and {more} more")
    elif more is None:
        items.append("and every other chunk searched")
    for line in wrap_items(f"{pad}above it  ", items, con.width):
        con.print(Text(line, style="dim"), soft_wrap=True)
