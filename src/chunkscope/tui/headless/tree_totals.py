"""One strategy's totals over the whole tree, for compare mode's header: chunks, tokens, mean and largest size,
chunks over the strategy's limit and chunks the embedding model does not read to the end."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.document.loader import Document
from chunkscope.tui.headless.session import TreeResult, chunk_tree


@dataclass(frozen=True)
class TreeTotals:
    """Figures of every chunk of the tree under one strategy (sizes in the strategy's tokenizer)."""

    chunks: int
    tokens: int
    max_tokens: int
    #: The strategy's maximum (None: it has none) and the chunks past it.
    limit: int | None
    over_limit: int
    #: Chunks the embedding model stops reading before their end; None when its tokenizer could not be loaded.
    truncated: int | None
    #: Documents the strategy could not chunk.
    errors: int

    @property
    def mean(self) -> float:
        return self.tokens / self.chunks if self.chunks else 0.0


def tree_totals(docs: Sequence[Document], resolved: ResolvedStrategy, config: Config,
                cancelled: Callable[[], bool] = lambda: False) -> TreeTotals | None:
    """Cut every document with ``resolved`` and sum it up; None when cancelled half-way.

    Truncation is counted as the source view shades it (`embed_cuts`, the configured embedder's window, embed
    prefix included); a tokenizer that cannot be loaded leaves that figure out, never the rest.
    """
    result = chunk_tree(list(docs), resolved, config, cancelled)
    return None if result is None else totals_of(result, config, cancelled)


def totals_of(result: TreeResult, config: Config, cancelled: Callable[[], bool] = lambda: False) -> TreeTotals | None:
    """`tree_totals` of a tree already cut (the explorer's run of the same strategy): nothing is cut again."""
    from chunkscope.chunking.reading import embed_cuts

    counts = result.token_counts()
    limit = result.resolved.strategy.limits().max
    truncated: int | None = 0
    try:
        spec = config.embedder_spec()
        for entry in result.entries.values():
            if cancelled():
                return None
            truncated = (truncated or 0) + len(embed_cuts(entry.chunks, spec))
    except Exception:  # noqa: BLE001 - a missing model folder only loses this figure
        truncated = None
    return TreeTotals(len(counts), sum(counts), max(counts, default=0), limit,
                      sum(1 for c in counts if limit is not None and c > limit), truncated,
                      sum(1 for e in result.entries.values() if e.error))
