"""dangling-heading: a chunk that ends with a heading whose section starts in the next chunk."""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

from chunkscope.lint.findings import WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding

#: Blocks that hold content themselves (not containers): "the chunk's last block" is one of these.
_LEAF_KINDS = frozenset({"heading", "paragraph", "fence", "code", "table", "math", "html", "jsx", "mdx_esm", "hr"})


class DanglingHeading(Rule):
    id = "dangling-heading"
    severity = WARNING
    summary = "a chunk ends with a heading whose content is in the next chunk"
    hint = "shorten the text before this heading, so that the heading and the text under it land in one chunk"

    def check(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        leaves = [b for b in ctx.st.blocks if b.kind in _LEAF_KINDS and not ctx.is_comment(b)]
        leaf_starts = [b.start for b in leaves]
        chunks = ctx.chunks
        n = len(chunks)
        for pos, c in enumerate(chunks):
            if pos == n - 1 or chunks[pos + 1].end <= c.end:
                continue  # nothing of the document comes after this chunk
            i = bisect_right(leaf_starts, c.end - 1) - 1
            if i < 0:
                continue
            b = leaves[i]
            if b.kind == "heading" and b.start >= c.start and ctx.trimmed(b.start, b.end)[1] <= c.end:
                out.append(ctx.finding(
                    self, b.start,
                    f"chunk {c.index} ends with the heading {b.text!r}; its content starts in chunk {c.index + 1}",
                    c.index))
        return out
