"""Marking chunks with lint's findings: new chunks whose ``warnings`` name the rules that found something.

This is a step of its own, after linting, and it returns new data: the chunks a caller passed in stay as they
were. What shows a chunk's warnings (``chunkscope chunk``'s table and JSONL, the app's chunk table, a stored
point's payload) reads the marked copies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from chunkscope.chunking.model import ChunkedDoc
from chunkscope.lint.registry import RULES

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.lint.findings import Finding, LintReport

def with_warnings(chunks: Sequence[Chunk], findings: Iterable[Finding]) -> list[Chunk]:
    """The chunks, each with the rule ids of the findings about it added to its warnings.

    A rule id is added once, after the strategy's own warnings, in registry order. A chunk that gains a warning
    is a copy; the others are returned as they are, and none of the given chunks is changed.
    """
    by_index: dict[int, set[str]] = {}
    for f in findings:
        if f.chunk_index is not None:
            by_index.setdefault(f.chunk_index, set()).add(f.rule)
    order = {rid: i for i, rid in enumerate(RULES)}
    out: list[Chunk] = []
    for c in chunks:
        rules = by_index.get(c.index)
        new = sorted((r for r in rules if r not in c.warnings), key=lambda r: (order.get(r, len(order)), r)) \
            if rules else []
        out.append(replace(c, warnings=[*c.warnings, *new]) if new else c)
    return out


def annotate_results(results: Sequence[ChunkedDoc], report: LintReport) -> list[ChunkedDoc]:
    """``results`` with every document's chunks marked by the report's findings (`with_warnings`)."""
    out: list[ChunkedDoc] = []
    for r in results:
        found = report.findings_by_doc.get(r.doc.path)
        out.append(ChunkedDoc(r.doc, with_warnings(r.chunks, found), r.error) if found else r)
    return out
