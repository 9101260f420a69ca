"""split-fence, split-table, split-list, split-admonition: a chunk boundary inside a block a reader needs whole."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, ClassVar

from chunkscope.chunking.strategies.code_cuts import (
    boundary_lines,
    code_lines,
    fence_margin,
    needed_cuts,
)
from chunkscope.document.structure import trim
from chunkscope.lint.findings import ERROR, WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.structure import Block
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding


class SplitRule(Rule):
    """A boundary inside a block of one of ``kinds``: one finding per cut line, at the first content after it."""

    #: The block kinds (`structure.KINDS`) this rule keeps whole.
    kinds: ClassVar[tuple[str, ...]]

    def check(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        seen: set[int] = set()  # nested blocks cut by the same boundary are reported once
        for b in ctx.st.blocks:
            if b.kind not in self.kinds:
                continue
            bs, be = ctx.trimmed(b.start, b.end)
            cut = ctx.cut_inside(bs, be)
            if cut is None:
                continue
            boundary, pos = cut
            c = ctx.chunks[pos]
            at = ctx.first_content(boundary, be)
            line = ctx.lines.line_of(at)
            if line in seen:
                continue
            f = self.report(ctx, b, bs, be, c, at)
            if f is None:
                continue
            seen.add(line)
            out.append(f)
        return out

    @abstractmethod
    def report(self, ctx: LintContext, b: Block, bs: int, be: int, c: Chunk, at: int) -> Finding | None:
        """The finding for block ``b`` (trimmed to ``[bs, be)``), which chunk ``c`` ends inside, before ``at``;
        None when this cut is allowed. Each kind of block (fence, table, list, admonition) says its own."""


def _size_note(ctx: LintContext, c: Chunk, bs: int, be: int) -> str:
    cap = ctx.budget(c)
    if cap is None:
        return ""
    n = ctx.counter.count(bs, be)
    return f" (the block alone is {ctx.units(n)}, over the limit of {cap})" if n > cap else ""


class SplitFence(SplitRule):
    id = "split-fence"
    severity = ERROR
    summary = "a chunk boundary falls inside a fenced code block"
    hint = "shorten the code block below the limit, or split it into several blocks with prose between them"
    kinds = ("fence", "code")

    def report(self, ctx: LintContext, b: Block, bs: int, be: int, c: Chunk, at: int) -> Finding | None:
        over = self._over_the_limit(ctx, b, bs, be, c)
        if over is not None:
            return over
        what = f"the {b.language} code block" if b.language else "the code block"
        msg = (f"chunk {c.index} ends inside {what} at lines {b.start_line}-{b.end_line}; the rest continues in the "
               f"next chunk" + _size_note(ctx, c, bs, be))
        return ctx.finding(self, at, msg, c.index)

    def _over_the_limit(self, ctx: LintContext, b: Block, bs: int, be: int, c: Chunk) -> Finding | None:
        """split-fence for a code block over the limit, which seed 000 asks to split "by function/class".

        Cut only where the rule allows (`code_cuts.needed_cuts`: between top-level definitions, between the
        methods of a class that is itself over the limit; at a definition's first line, or its decorator or
        comment), the block is reported as a warning that names every cut; one cut inside a body, or inside a
        class that fits whole, makes it an error, reported at that cut. None for a block that fits (any cut of it
        is an error, reported as such). A severity set in the configuration applies to both.
        """
        cap = ctx.budget(c)
        n = ctx.counter.count(bs, be)
        if cap is None or n <= cap:
            return None
        cuts = _fence_cuts(ctx, bs, be)
        if not cuts:
            return None
        line_start = ctx.lines.line_starts
        code = code_lines(ctx.text, line_start, bs, be, fence_margin(line_start, b.start))
        # A cut one level in (between methods) is what the seed asks only when the class around it is over the
        # limit too: the same recursion as the strategy's, counted in the limit's tokenizer.
        allowed = needed_cuts(code, be, lambda s, e: ctx.counter.count(*trim(ctx.text, s, e)) <= cap)
        line_of = ctx.lines.line_of
        mid = [cut for cut in cuts if line_start[line_of(cut[0]) - 1] not in allowed]
        what = f"the {b.language} code block" if b.language else "the code block"
        size = f"the block alone is {ctx.units(n)}, over the limit of {cap}"
        if mid:
            at, ci, how = mid[0]
            where = (", inside a definition that fits in one chunk"
                     if line_start[line_of(at) - 1] in boundary_lines(code) else
                     ", not at a definition boundary")
            # Functions and classes are what a program has; markup and data (XML, JSON, YAML, …) have none.
            advice = ("split it into smaller blocks with prose between them" if _is_data(b.language) else
                      "cut it between functions or classes instead")
            if _is_data(b.language):
                where = ""
            msg = (f"chunk {ci} {how} inside {what} at lines {b.start_line}-{b.end_line} at line "
                   f"{line_of(at)}{where} ({size}; {advice})")
            return ctx.finding(self, at, msg, ci)
        at, ci, how = cuts[0]
        where_lines = sorted({line_of(cut[0]) for cut in cuts})
        before = f"line {where_lines[0]}" if len(where_lines) == 1 else f"lines {', '.join(map(str, where_lines))}"
        msg = (f"chunk {ci} {how} inside {what} at lines {b.start_line}-{b.end_line}, between definitions: {size}, "
               f"and is split before {before}")
        f = ctx.finding(self, at, msg, ci)
        if self.id not in ctx.settings.severity:
            f.severity = WARNING  # what the seed prescribes: still shown, so the author knows it was split
        return f


#: Code block languages that hold markup or data, not definitions: no "between functions" to cut at.
DATA_LANGUAGES = frozenset({"xml", "html", "xhtml", "svg", "json", "jsonc", "json5", "jsonl", "yaml", "yml", "toml",
                            "ini", "csv", "tsv", "text", "txt", "plaintext", "plain", "markdown", "md", "mdx",
                            "log", "diff", "patch", "output", "console", "properties", "env", "dotenv", "graphql",
                            "sql", "protobuf", "proto", "mermaid", "dot"})


def _is_data(language: str | None) -> bool:
    """Whether a code block in ``language`` is markup or data rather than a program (see `DATA_LANGUAGES`)."""
    return (language or "").strip().lower() in DATA_LANGUAGES


def _fence_cuts(ctx: LintContext, bs: int, be: int) -> list[tuple[int, int, str]]:
    """Every place a chunk starts or ends inside ``[bs, be)`` with code on both sides: (the first character
    after the cut, the index of the chunk cut there, "ends" or "starts"), in order. Where one chunk ends and the
    next starts at the same place, the chunk that ends is named; with overlap, a chunk that starts inside the
    block starts earlier than the one before it ends, and is named as what it is."""
    text = ctx.text
    out: dict[int, tuple[int, str]] = {}
    prev: Chunk | None = None
    for c in ctx.chunks:
        if bs < c.start < be and text[bs:c.start].strip() and prev is not None:
            out.setdefault(c.start, (c.index, "starts"))
        if bs < c.end < be and text[c.end:be].strip():
            out.setdefault(ctx.first_content(c.end, be), (c.index, "ends"))
        prev = c
    return [(at, ci, how) for at, (ci, how) in sorted(out.items())]


class SplitTable(SplitRule):
    id = "split-table"
    severity = ERROR
    summary = "a chunk boundary falls inside a table (the continuation loses the header row)"
    hint = "split the table into smaller tables, each with its own header row"
    kinds = ("table",)

    def report(self, ctx: LintContext, b: Block, bs: int, be: int, c: Chunk, at: int) -> Finding | None:
        msg = (f"chunk {c.index} ends inside the table at lines {b.start_line}-{b.end_line}: the rows from line "
               f"{ctx.lines.line_of(at)} on lose the header row" + _size_note(ctx, c, bs, be))
        return ctx.finding(self, at, msg, c.index)


class SplitList(SplitRule):
    id = "split-list"
    severity = WARNING
    summary = "a chunk boundary falls inside a list that would fit in one chunk"
    hint = "move the list so it starts a section, or shorten the text before it"
    kinds = ("list",)

    def report(self, ctx: LintContext, b: Block, bs: int, be: int, c: Chunk, at: int) -> Finding | None:
        cap = ctx.budget(c)
        n = ctx.counter.count(bs, be)
        if cap is not None and n > cap:
            return None  # a list longer than a chunk has to be split; the seed allows it at item boundaries
        fits = f" although it fits in one chunk ({ctx.units(n)}"
        msg = (f"chunk {c.index} ends inside the list at lines {b.start_line}-{b.end_line},{fits}"
               + (f", limit {cap})" if cap else ")"))
        return ctx.finding(self, at, msg, c.index)


class SplitAdmonition(SplitRule):
    id = "split-admonition"
    severity = WARNING
    summary = "a chunk boundary falls inside a ::: admonition"
    hint = "shorten the admonition, or move it so it does not straddle a chunk boundary"
    kinds = ("admonition",)

    def report(self, ctx: LintContext, b: Block, bs: int, be: int, c: Chunk, at: int) -> Finding | None:
        kind = b.info.split(None, 1)[0] if b.info else ""
        msg = f"chunk {c.index} ends inside the :::{kind} admonition at lines {b.start_line}-{b.end_line}"
        return ctx.finding(self, at, msg, c.index)
