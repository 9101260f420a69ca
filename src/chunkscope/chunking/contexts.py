"""Generated context for chunks (``embed_prefix = "llm"``, contextual retrieval): the provider protocol.

Chunking sits below the LLM layer, so a strategy never asks a chat model: it asks a `ChunkContexts` provider for
the sentence of context each chunk already has. The place that builds strategies with a configuration
(`chunkscope.config.reader.resolve_strategy`) hands every strategy whose prefix is ``llm`` the provider of the
configured chat model (`chunkscope.llm.contextual.CachedContexts`). Providers only read what was written before
(``chunkscope contexts DOCS`` writes it), so chunking never waits on a model.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class ChunkContexts(Protocol):
    """Sentences of context for a page's chunks, as far as they are known."""

    @property
    def identity(self) -> str:
        """Whose contexts these are (the chat model and its endpoint): contexts of two identities never mix."""
        ...

    def state(self) -> str:
        """A token that changes whenever a context is written: an index made before is stale (its manifest)."""
        ...

    def lookup(self, page: str, chunks: Sequence[str]) -> list[str | None]:
        """The context of each chunk text of ``page`` (the document's whole text), in order; None where none was
        written yet (that chunk is embedded without one)."""
        ...
