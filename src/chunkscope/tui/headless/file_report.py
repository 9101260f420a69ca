"""Per-file figures of one strategy's cut of a tree, worst first: what the app's files view lists.

For each file: its chunks, how many are over the strategy's limit (as ``chunkscope stats`` counts them), its lint
errors and warnings (from a `lint.LintReport`'s findings), and the share of its text the embedding model never
reads (past the model's ``max_seq_length`` in every chunk that holds it, as the source view shades it). Plain
dataclasses and functions over the core's own results: nothing here is recomputed differently from lint or
stats, and nothing imports a view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from chunkscope.chunking.reading import embed_cuts, unread_chars

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk, ChunkedDoc
    from chunkscope.embedding.spec import EmbedderSpec
    from chunkscope.lint import Finding

ERROR = "error"


@dataclass(frozen=True)
class FileSummary:
    """One file's figures under one strategy (one row of the files view)."""

    path: str
    #: The file's place in the tree's reading order (ties are broken by it).
    order: int
    chunks: int
    #: Chunks over the strategy's token limit (0 when the strategy has none).
    over_limit: int
    errors: int
    warnings: int
    #: Characters of the document inside some chunk.
    chars: int
    #: Of those, characters no chunk's embedding reads; None when the embedder's tokenizer was not available.
    unread_chars: int | None
    #: The file's findings in the order the lint pane lists them: errors first, then by line.
    findings: tuple["Finding", ...] = ()
    #: Why the strategy could not chunk the file (it then has no chunks and no findings).
    failed: str | None = None

    @property
    def unread_share(self) -> float:
        """The share (0..1) of the chunked text the embedding model never reads; 0 when unknown."""
        if not self.unread_chars or not self.chars:
            return 0.0
        return self.unread_chars / self.chars

    @property
    def first_finding(self) -> "Finding | None":
        """Where an author starts: the file's first error, else its first warning."""
        return self.findings[0] if self.findings else None

    @property
    def blocking(self) -> int:
        """Errors, counting a file the strategy could not chunk as one (as ``chunkscope lint`` does)."""
        return self.errors + (1 if self.failed else 0)


def finding_order(f: "Finding") -> tuple[bool, int, int]:
    """Sort key of one file's findings: errors first, then by line and column (the lint pane's order)."""
    return (f.severity != ERROR, f.line, f.column)


#: Sort keys of the files view, each worst first; ties fall back to the next figures, then to reading order.
#: "worst" is by errors (a file the strategy could not chunk counts as one), then warnings, over limit, unread.
SORTS: dict[str, Callable[[FileSummary], tuple]] = {
    "worst": lambda s: (-s.blocking, -s.warnings, -s.over_limit, -s.unread_share, s.order),
    "warnings": lambda s: (-s.warnings, -s.blocking, -s.over_limit, -s.unread_share, s.order),
    "over limit": lambda s: (-s.over_limit, -s.blocking, -s.warnings, -s.unread_share, s.order),
    "unread": lambda s: (-s.unread_share, -s.blocking, -s.warnings, -s.over_limit, s.order),
    "chunks": lambda s: (-s.chunks, -s.blocking, -s.warnings, s.order),
    "path": lambda s: (s.path,),
}


def sort_files(rows: Iterable[FileSummary], by: str = "worst", *, reverse: bool = False) -> list[FileSummary]:
    """The rows sorted worst first by one figure (``SORTS``); ``reverse`` puts the best first instead."""
    return sorted(rows, key=SORTS[by], reverse=reverse)


def group_by_file(findings: Iterable["Finding"], order: Mapping[str, int] | None = None
                  ) -> list[tuple[str, list["Finding"]]]:
    """Findings per file, the file with the most errors (then warnings) first, each file's in `finding_order`.

    Args:
        findings: findings of any files.
        order: each path's place in reading order, for ties (files not in it come last, by path).
    """
    by_path: dict[str, list["Finding"]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    far = 1 << 30

    def worst(item: tuple[str, list["Finding"]]) -> tuple[int, int, int, str]:
        path, fs = item
        errors = sum(1 for f in fs if f.severity == ERROR)
        return (-errors, -(len(fs) - errors), (order or {}).get(path, far), path)

    return [(p, sorted(fs, key=finding_order)) for p, fs in sorted(by_path.items(), key=worst)]


def file_summaries(results: Sequence["ChunkedDoc"], limit: int | None, findings: Iterable["Finding"] = (),
                   model: "str | EmbedderSpec | None" = None, *, should_stop: Callable[[], bool] | None = None
                   ) -> list[FileSummary] | None:
    """One `FileSummary` per document, in reading order (sort them with `sort_files`).

    Args:
        results: every document's chunks (or error) under one strategy, in reading order.
        limit: the strategy's token limit (``strategy.limits().max``); chunks above it are over the limit.
        findings: the lint report's findings for these documents (their paths as the documents'); others are
            ignored.
        model: the embedding model whose reading length decides the unread text; None leaves it unknown.
        should_stop: polled between documents; when it returns True the answer is None.

    Raises:
        TokenizerError: the model's tokenizer cannot be loaded (call again with ``model=None``).
    """
    by_path: dict[str, list["Finding"]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    out: list[FileSummary] = []
    for order, r in enumerate(results):
        if should_stop is not None and should_stop():
            return None
        path = r.doc.path
        fs = tuple(sorted(by_path.get(path, ()), key=finding_order)) if not r.error else ()
        errors = sum(1 for f in fs if f.severity == ERROR)
        chunks = r.chunks if not r.error else []
        cuts = embed_cuts(chunks, model) if model is not None and chunks else {}
        chars, unread = unread_chars(chunks, cuts)
        over = sum(1 for c in chunks if limit is not None and c.tokens > limit)
        out.append(FileSummary(path, order, len(chunks), over, errors, len(fs) - errors, chars,
                               unread if model is not None else None, fs, r.error))
    return out


@dataclass(frozen=True)
class TreeTotals:
    """The whole tree's figures, summed over its files' rows."""

    files: int
    chunks: int
    over_limit: int
    errors: int
    warnings: int
    #: Files the strategy could not chunk.
    failed: int
    #: Files with at least one error (or that could not be chunked).
    files_with_errors: int
    #: The share of the tree's chunked text the embedding model never reads; None when unknown.
    unread_share: float | None


def tree_totals(rows: Sequence[FileSummary]) -> TreeTotals:
    """Sum the rows of `file_summaries` (the files view's title line)."""
    chars = sum(r.chars for r in rows)
    known = any(r.unread_chars is not None for r in rows)
    unread = sum(r.unread_chars or 0 for r in rows)
    return TreeTotals(len(rows), sum(r.chunks for r in rows), sum(r.over_limit for r in rows),
                      sum(r.errors for r in rows), sum(r.warnings for r in rows), sum(1 for r in rows if r.failed),
                      sum(1 for r in rows if r.blocking), (unread / chars if chars else 0.0) if known else None)
