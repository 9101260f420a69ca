"""Sentence vectors for the `semantic` strategy (`chunkscope.chunking.vectors.SentenceVectors`) from an `Embedder`.

The embedder is made on the first text a strategy asks about, never when the strategy is built: listing or
validating a `semantic` preset costs nothing and needs no retrieval extra, and a missing extra is one line
(`MissingExtra`) when chunking starts. Every text goes through the embedding cache, so cutting the same
document again, with any bounds, embeds nothing new.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Sequence

from chunkscope.chunking.vectors import UsesSentenceVectors

if TYPE_CHECKING:
    import numpy as np

    from chunkscope.chunking.strategy import Strategy
    from chunkscope.embedding.embedder import Embedder, EmbedStats


class EmbedderVectors:
    """`SentenceVectors` from an embedder made on first use by ``make`` (or the one given)."""

    def __init__(self, make: "Callable[[], Embedder] | Embedder") -> None:
        self._make = make
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def embedder(self) -> "Embedder":
        """The embedder, made now if it was not yet (raises `MissingExtra` without the retrieval extra)."""
        with self._lock:
            if self._embedder is None:
                from chunkscope.embedding.embedder import Embedder

                self._embedder = self._make if isinstance(self._make, Embedder) else self._make()
            return self._embedder

    @property
    def identity(self) -> str:
        return self.embedder.model_id

    @property
    def stats(self) -> "EmbedStats":
        """Every call's statistics added up: what the cache served (hits) and what the model ran (misses)."""
        return self.embedder.total_stats

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        return self.embedder.embed(texts).vectors


def default_sentence_vectors() -> EmbedderVectors:
    """The default model's sentence vectors (what `chunkscope.chunking.registry.default_sentence_vectors` loads)."""
    from chunkscope.embedding.embedder import Embedder

    return EmbedderVectors(Embedder)


def supply_vectors(strategy: "Strategy", make: "Callable[[], Embedder]") -> None:
    """Give a strategy that embeds as it chunks (`UsesSentenceVectors`: ``semantic``) the embedder ``make`` makes
    on first use; any other strategy is left as it is. What the views call where they resolve a strategy with the
    user's embedder (``[embedder]``, ``--embedder``): a strategy nobody gives one embeds with the default model."""
    if isinstance(strategy, UsesSentenceVectors):
        strategy.use_vectors(EmbedderVectors(make))
