"""uncovered: body text that no chunk holds, so retrieval can never find it (a custom chunker that drops text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chunkscope.lint.findings import ERROR
from chunkscope.lint.rule import Rule
from chunkscope.safe_text import snippet

if TYPE_CHECKING:
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding


class Uncovered(Rule):
    id = "uncovered"
    severity = ERROR
    summary = "text of the page (after the front matter) that no chunk holds"
    hint = "the strategy dropped this text: nothing can retrieve it; make the chunker cover the whole page"

    def check(self, ctx: LintContext) -> list[Finding]:
        text, start = ctx.text, ctx.doc.body_start
        out: list[Finding] = []
        # The chunks come in order of their starts; a gap is body text before the next chunk's start that no
        # chunk so far reached, and the text after the chunk that reaches furthest.
        reached = start
        # (start, end, the chunk after the gap, or the last chunk for the text after it: the one a view marks)
        gaps: list[tuple[int, int, int | None, str]] = []
        for c in ctx.chunks:
            if c.start > reached:
                gaps.append((reached, c.start, c.index, f"before chunk {c.index}"))
            reached = max(reached, c.end)
        if reached < len(text):
            last_chunk = ctx.chunks[-1].index if ctx.chunks else None
            gaps.append((reached, len(text), last_chunk, "after the last chunk" if ctx.chunks else "in the page"))
        for lo, hi, marked, where in gaps:
            first, last = ctx.trimmed(ctx.first_content(lo, hi), hi)
            if first == last or text[first].isspace():
                continue  # only blank lines and spaces between chunks
            out.append(ctx.finding(
                self, first,
                f"{last - first} characters {where} are in no chunk: {snippet(text[first:last], 60)}",
                marked))
        return out
