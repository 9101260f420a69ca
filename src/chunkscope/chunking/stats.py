"""A strategy's figures over a tree: chunk counts, the distribution of their sizes, chunks over or under the
strategy's limits, the documents it could not chunk, and the storage their vectors would take."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from chunkscope.chunking.model import ChunkedDoc
    from chunkscope.config.reader import ResolvedStrategy
    from chunkscope.document.loader import DocsTree


class StorageFigures(Protocol):
    """What a collection of the chunks would take (`retrieval.payload.StorageEstimate` is one)."""

    @property
    def vector_bytes(self) -> int: ...

    @property
    def payload_bytes(self) -> int: ...

    @property
    def total_bytes(self) -> int: ...


@dataclass
class TreeStats:
    """Figures for one strategy over a tree."""

    label: str
    files: int
    chunks: int
    tokenizer: str
    counts: list[int]
    limit: int | None
    over_limit: int
    under_min: int
    dim: int
    storage: StorageFigures
    errors: int  # documents the strategy could not chunk
    problems: int = 0  # files of the tree that could not be loaded as they are (`DocsTree.problems`)

    @property
    def vector_bytes(self) -> int:
        return self.storage.vector_bytes

    @property
    def payload_bytes(self) -> int:
        return self.storage.payload_bytes

    def percentile(self, q: float) -> int:
        """The chunk size at quantile ``q`` (0-1; the nearest rank), 0 without chunks."""
        if not self.counts:
            return 0
        s = sorted(self.counts)
        idx = min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))
        return s[idx]

    def median(self) -> float:
        """The median chunk size, 0 without chunks."""
        return statistics.median(self.counts) if self.counts else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.label,
            "files": self.files,
            "chunks": self.chunks,
            "tokenizer": self.tokenizer,
            "tokens": {
                "min": min(self.counts, default=0),
                "median": self.median(),
                "p95": self.percentile(0.95),
                "max": max(self.counts, default=0),
                "total": sum(self.counts),
            },
            "limit": self.limit,
            "over_limit": self.over_limit,
            "under_min": self.under_min,
            "storage": {
                "vectors": self.chunks,
                "dim": self.dim,
                "vector_bytes": self.vector_bytes,
                "payload_bytes": self.payload_bytes,
                "total_bytes": self.storage.total_bytes,
            },
            # As `chunkscope lint` counts them: a file that could not be loaded is an error too.
            "errors": self.problems + self.errors,
            "load_problems": self.problems,
            "not_chunked": self.errors,
        }


def tree_stats(tree: DocsTree, resolved: ResolvedStrategy, results: Sequence[ChunkedDoc], dim: int,
               storage: StorageFigures) -> TreeStats:
    """The figures of ``results`` (``resolved`` run over ``tree``), with the storage of ``dim``-dimensional
    vectors the caller estimated."""
    lim = resolved.strategy.limits()
    counts: list[int] = []
    over = under = 0
    for r in results:
        n = len(r.chunks)
        for c in r.chunks:
            counts.append(c.tokens)
            if lim.max is not None and c.tokens > lim.max:
                over += 1
            if lim.min is not None and c.tokens < lim.min and not (lim.last_may_be_short and c.index == n - 1):
                under += 1
    return TreeStats(resolved.label, len(results), len(counts), lim.tokenizer, counts, lim.max, over, under, dim,
                     storage, sum(1 for r in results if r.error), len(tree.problems))


def histogram_lines(counts: Sequence[int], limit: int | None, width: int = 40, bins: int = 12
                    ) -> list[tuple[str, str, int, bool]]:
    """Rows of a text histogram: (range label, bar, count, over the limit).

    Bins are (lo, hi] ranges; when there is a limit the bin width divides it, so the limit is a bin edge and
    every bin past it holds only over-limit chunks.
    """
    if not counts:
        return []
    top = max(max(counts), limit or 0, 1)
    if limit:
        per_limit = max(1, round(bins * limit / top))
        step = -(-limit // per_limit)
    else:
        step = -(-top // bins)
    nbins = max(1, -(-top // step))
    hist = [0] * nbins
    for c in counts:
        hist[min(max(c - 1, 0) // step, nbins - 1)] += 1
    peak = max(hist) or 1
    rows = []
    for i, h in enumerate(hist):
        lo, hi = i * step + 1, (i + 1) * step
        bar = "█" * max(1 if h else 0, round(h / peak * width))
        rows.append((f"{lo:>6}–{hi:<6}", bar, h, limit is not None and lo > limit))
    return rows
