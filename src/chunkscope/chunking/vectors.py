"""Sentence vectors for strategies that cut by meaning (`semantic`): the provider protocol and the default one.

Chunking sits below embedding, so a strategy never embeds by itself: it asks a `SentenceVectors` provider. The
place that builds strategies with an embedder (`chunkscope.config.reader.resolve_strategy`, above the embedding
layer) hands the configured embedder's provider to every strategy that `uses_sentence_vectors`; a strategy nobody
gave one (``chunk_text(text, strategy="semantic")``) asks `chunkscope.chunking.registry.default_sentence_vectors`,
which loads the default model's provider by name as it loads a built-in strategy, so no import reaches up a layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


class SentenceVectors(Protocol):
    """What a strategy asks of an embedder: one unit-length row per text, and whose vectors they are."""

    @property
    def identity(self) -> str:
        """The model's identity: vectors of two identities are never compared (a per-document memo's key)."""
        ...

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Unit-length float32 vectors, one row per text, in order (a cache serves the texts seen before)."""
        ...


@runtime_checkable
class UsesSentenceVectors(Protocol):
    """A strategy that reads sentence vectors; whoever builds it with an embedder gives it that embedder's."""

    def use_vectors(self, vectors: SentenceVectors) -> None: ...
