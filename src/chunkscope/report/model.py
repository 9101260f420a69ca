"""What the report shows, gathered from the core's results: per-file chunks and findings, file and tree figures."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk, ChunkedDoc
    from chunkscope.document.loader import DocsTree, Document
    from chunkscope.lint.findings import Finding, LintReport


@dataclass
class FileView:
    """One document with its chunks (as the strategy made them) and its lint findings."""

    doc: "Document"
    chunks: list["Chunk"]
    findings: list["Finding"]
    #: Why the strategy could not chunk the document (then it has no chunks), None when it could.
    error: str | None = None

    @property
    def token_counts(self) -> list[int]:
        return [c.tokens for c in self.chunks]

    def over_limit(self, limit: int | None) -> int:
        return sum(1 for c in self.chunks if limit is not None and c.tokens > limit)

    @property
    def rules(self) -> list[str]:
        """The rule ids found in this file, sorted."""
        return sorted({f.rule for f in self.findings})


@dataclass
class ReportData:
    """Everything one page shows: the tree's files, the strategy's label and limits, the lint totals."""

    root: str
    label: str
    tokenizer: str
    limit: int | None
    minimum: int | None
    files: list[FileView]
    by_rule: dict[str, int]
    errors: int
    warnings: int
    #: Files that could not be read (``path: code: message``), shown in the tree summary.
    problems: list[str] = field(default_factory=list)

    @property
    def chunk_count(self) -> int:
        return sum(len(f.chunks) for f in self.files)

    @property
    def token_counts(self) -> list[int]:
        return [n for f in self.files for n in f.token_counts]

    @property
    def severities(self) -> dict[str, str]:
        """Each rule's severity as its findings carry it (the first one seen wins; a rule has one severity)."""
        out: dict[str, str] = {}
        for f in self.files:
            for x in f.findings:
                out.setdefault(x.rule, x.severity)
        return out


def median(counts: list[int]) -> int:
    """The median token count, rounded; 0 without chunks."""
    return round(statistics.median(counts)) if counts else 0


def build_report(tree: "DocsTree", results: "list[ChunkedDoc]", lint: "LintReport", *, label: str,
                 tokenizer: str, limit: int | None, minimum: int | None) -> ReportData:
    """Pair each chunked document with the findings lint made for it (by the tree's path, as lint keys them)."""
    files = [FileView(r.doc, list(r.chunks), sorted(lint.findings_by_doc.get(r.doc.path, []),
                                                     key=lambda f: (f.line, f.column, f.rule)), r.error)
             for r in results]
    by_rule = dict(Counter(f.rule for f in lint.findings))
    return ReportData(str(tree.root), label, tokenizer, limit, minimum, files, dict(sorted(by_rule.items())),
                      lint.errors, lint.warnings, [str(p) for p in tree.problems])
