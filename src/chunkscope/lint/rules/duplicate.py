"""duplicate: two chunks with the same text, in one document or across the documents of a run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from chunkscope.document.structure import first_content
from chunkscope.lint.findings import WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk, ChunkedDoc
    from chunkscope.document.loader import Document
    from chunkscope.lint.context import LintContext, LintRun
    from chunkscope.lint.findings import Finding


class DuplicateIndex:
    """First occurrence of every chunk text (hash lookups), across the documents of one run."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[str, int, int]] = {}

    def earlier(self, doc: Document, c: Chunk) -> tuple[str, int, int] | None:
        """(path, line, index) of the first chunk with ``c``'s text; None when ``c`` is that first (now kept)."""
        key = c.text.strip()
        if not key:
            return None
        prev = self.first.get(key)
        if prev is None:
            self.first[key] = (doc.path, doc.line_of(first_content(doc.text, c.start, c.end)), c.index)
        return prev


class Duplicate(Rule):
    id = "duplicate"
    severity = WARNING
    summary = "two chunks have the same text"
    hint = "remove the repeated text, or reword one copy so each chunk says something of its own"

    def check(self, ctx: LintContext) -> list[Finding]:
        index = ctx.run.shared(self.id, DuplicateIndex)
        out: list[Finding] = []
        for c in ctx.chunks:
            prev = index.earlier(ctx.doc, c)
            if prev is not None:
                path, line, idx = prev
                out.append(ctx.chunk_finding(
                    self, c, f"chunk {c.index} has the same text as chunk {idx} at {ctx.run.display(path)}:{line}"))
        return out


def remember_pages(run: LintRun, results: Iterable[ChunkedDoc]) -> None:
    """Record chunks lint does not report on as first occurrences (the pages before a file linted on its own),
    so `duplicate` names the same earlier chunk a run over the whole tree names."""
    index = run.shared(Duplicate.id, DuplicateIndex)
    for r in results:
        for c in r.chunks:
            index.earlier(r.doc, c)
