"""A LangChain ``TextSplitter`` that cuts with any chunkscope strategy and keeps each chunk's place.

``ChunkscopeTextSplitter("section-sentence", max_tokens=384).split_documents(docs)`` gives LangChain Documents
whose ``page_content`` is exactly ``text[start:end]`` of their source and whose ``metadata`` holds ``start``,
``end``, ``start_line``, ``heading_path``, ``url`` and the strategy's own fields (see `chunk_metadata`).
Needs the ``langchain`` extra: ``pip install 'chunkscope[langchain]'``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from typing import Any

from chunkscope.integrations import chunk_metadata, doc_path, missing_extra

try:
    from langchain_core.documents import Document as LCDocument
    from langchain_text_splitters import TextSplitter
except ImportError as exc:  # one line saying what to install, not a bare "No module named ..."
    raise missing_extra("langchain", "langchain-core and langchain-text-splitters", exc) from exc

from chunkscope.chunking.model import Chunk
from chunkscope.chunking.registry import as_strategy
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import Document

__all__ = ["ChunkscopeTextSplitter"]


class ChunkscopeTextSplitter(TextSplitter):
    """Split texts and Documents with a chunkscope strategy.

    Args:
        strategy: a strategy name (built-in or plugin) or a configured `Strategy`.
        path: the path a text stands for when its metadata names none (``source`` or ``file_path``); it names
            the chunks, and the page route in ``url`` and the chapter numbers follow it.
        docs_root: a ``source`` under this folder is taken relative to it (``docs/intro/setup.md`` with
            ``docs_root="docs"`` is ``intro/setup.md``), as `chunkscope.load_docs` names files.
        site_url: the published site's base URL for ``url`` (without it: the page route and anchor).
        **params: the strategy's parameters (only with a name).
    """

    def __init__(self, strategy: str | Strategy = "recursive", *, path: str = "doc.md",
                 docs_root: str | os.PathLike[str] | None = None, site_url: str | None = None,
                 **params: Any) -> None:
        self.strategy = as_strategy(strategy, params, type(self).__name__)
        # The base class's sizes and whitespace stripping belong to its own merging, which is never used here:
        # the strategy decides every cut, and stripping would break the exact slices.
        super().__init__(strip_whitespace=False)
        self.path = path
        self.docs_root = docs_root
        self.site_url = site_url

    def split_text(self, text: str) -> list[str]:
        """The chunks' texts, each an exact slice of ``text``."""
        return [c.text for c in self._chunks(Document.from_text(text, path=self.path))]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
                         ) -> list[LCDocument]:
        """One LangChain Document per chunk of each text, with the text's metadata and the chunk's own.

        Offsets come from the strategy, never from searching the chunk's text again (a repeated passage would
        be found at its first copy), so ``start`` is right where LangChain's ``add_start_index`` can miss.
        """
        metas: Iterable[dict[Any, Any]] = metadatas if metadatas is not None else [{} for _ in texts]
        out: list[LCDocument] = []
        for text, meta in zip(texts, metas, strict=True):
            doc = Document.from_text(text, path=doc_path(meta, self.path, self.docs_root))
            for c in self._chunks(doc):
                out.append(LCDocument(page_content=c.text,
                                      metadata=chunk_metadata(doc, c, self.site_url, copy.deepcopy(meta))))
        return out

    def _chunks(self, doc: Document) -> list[Chunk]:
        return self.strategy.chunk(doc)
