"""split-equation: a ``$$`` block cut off from the sentence that leads into it or explains it after."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from chunkscope.lint.findings import WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding

#: The end of a sentence inside a paragraph: terminal punctuation (and closing quotes) before whitespace. An
#: abbreviation ("e.g. x") also matches, which only makes split-equation more lenient, never wrong.
_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]*\s+")


class SplitEquation(Rule):
    id = "split-equation"
    severity = WARNING
    summary = "a $$ math block is cut off from the sentence that leads into it or follows it (its explanation)"
    hint = "keep the equation and its explanation together: shorten the text around them or add a subheading"

    def check(self, ctx: LintContext) -> list[Finding]:
        """A boundary falls between a $$ block and the paragraph right before or after it (or inside the block),
        and no overlapping chunk holds both sides."""
        out: list[Finding] = []
        blocks = ctx.st.blocks
        for i, m in enumerate(blocks):
            if m.kind != "math":
                continue
            ms, me = ctx.trimmed(m.start, m.end)
            for step in (-1, 1):
                j = i + step
                # The neighbour at the same depth, skipping comments and (going back) the previous sibling's
                # children.
                while 0 <= j < len(blocks) and (blocks[j].depth > m.depth or ctx.is_comment(blocks[j])):
                    j += step
                if not (0 <= j < len(blocks)) or blocks[j].depth != m.depth or blocks[j].kind != "paragraph":
                    continue
                p = blocks[j]
                ps, pe = ctx.trimmed(p.start, p.end)
                # What must share a chunk with the equation is the sentence next to it: the one that leads into
                # it, or the "where x is ..." after it. A sentence splitter cutting elsewhere in the paragraph
                # leaves the explanation with its equation.
                if step < 0:
                    lo, hi = _last_sentence_start(ctx.text, ps, pe), me
                    part = "sentence that leads into it"
                else:
                    lo, hi = ms, _first_sentence_end(ctx.text, ps, pe)
                    part = "sentence that follows it"
                cut = ctx.cut_inside(lo, hi)
                if cut is None:
                    continue
                out.append(ctx.finding(
                    self, ms,
                    f"the equation at lines {m.start_line}-{m.end_line} is not in one chunk with the {part} "
                    f"(line {ctx.lines.line_of(lo if step < 0 else ps)})", ctx.chunks[cut[1]].index))
                break  # one finding per equation
        return out


def _last_sentence_start(text: str, ps: int, pe: int) -> int:
    last = None
    for last in _SENTENCE_END.finditer(text, ps, pe):
        pass
    return last.end() if last is not None else ps


def _first_sentence_end(text: str, ps: int, pe: int) -> int:
    m = _SENTENCE_END.search(text, ps, pe)
    return m.start() + 1 if m is not None else pe
