"""A tree's figures for a configured strategy (``stats`` and ``compare``): the core's chunk-size statistics joined
with the storage the embedder's vectors and the store's payloads would take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chunkscope.chunking.stats import TreeStats, tree_stats
from chunkscope.retrieval.payload import storage_estimate

if TYPE_CHECKING:
    from chunkscope.chunking.model import ChunkedDoc
    from chunkscope.config.reader import ResolvedStrategy
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.spec import EmbedderSpec


def embed_dim(spec: EmbedderSpec) -> int:
    """The embedder's vector size without running it (no torch, no request): an endpoint's known size, a local
    model's from its files; 384 (MiniLM's) when nothing says, for another server's model the first request
    would tell."""
    from chunkscope.embedding.model_info import model_dimension
    from chunkscope.paths import TokenizerError

    if spec.known_dim:
        return spec.known_dim
    try:
        folder = spec.model_dir
    except TokenizerError:
        return 384
    return (model_dimension(folder) if folder is not None else None) or 384


def tree_stats_of(tree: DocsTree, resolved: ResolvedStrategy, results: Sequence[ChunkedDoc], dim: int,
                  embed_model: str | EmbedderSpec | None = None) -> TreeStats:
    """`tree_stats` with the storage of ``dim``-dimensional vectors (word pieces counted in ``embed_model``'s)."""
    storage = storage_estimate((c for r in results for c in r.chunks), dim, embed_model)
    return tree_stats(tree, resolved, results, dim, storage)
