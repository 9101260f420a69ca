"""oversize and undersize: a chunk's size against the strategy's limits (or the configured thresholds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chunkscope.lint.findings import ERROR, WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding


class Oversize(Rule):
    id = "oversize"
    severity = ERROR
    summary = "a chunk is over the strategy's token limit (or the configured budget)"
    hint = "split the section with a subheading, or move a long code block or table into its own section"
    threshold = "maximum tokens per chunk, in the strategy's tokenizer"

    def check(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        for c in ctx.chunks:
            if not c.text.strip():
                continue
            cap = ctx.budget(c)
            if cap is None:
                continue
            n = ctx.tokens_of(c)
            if n > cap:
                out.append(ctx.chunk_finding(
                    self, c, f"chunk {c.index} is {ctx.units(n)}, over the limit of {cap} by {n - cap}"))
        return out


class Undersize(Rule):
    id = "undersize"
    severity = WARNING
    summary = "a chunk is under the strategy's minimum size"
    hint = "merge the short section into its neighbour, or give it enough text to stand on its own"
    threshold = "minimum tokens per chunk, in the strategy's tokenizer"

    def check(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        minimum = ctx.settings.thresholds.get(self.id, ctx.limits.min)
        if minimum is None:
            return out
        last = len(ctx.chunks) - 1
        for pos, c in enumerate(ctx.chunks):
            if not c.text.strip():
                continue
            if pos == last and ctx.limits.last_may_be_short:
                continue  # the strategy says the tail of a document may be short
            n = ctx.tokens_of(c)
            if n < minimum:
                out.append(ctx.chunk_finding(
                    self, c, f"chunk {c.index} is {ctx.units(n)}, under the minimum of {minimum}"))
        return out
