"""Adapters that hand chunkscope's chunks to LangChain and LlamaIndex, and the metadata they share.

`chunkscope.integrations.langchain` and `chunkscope.integrations.llama_index` import their framework, so each is
imported only when used (extras ``chunkscope[langchain]`` and ``chunkscope[llama-index]``). This module imports
neither: the command line writes LangChain's JSON form of a Document with it, without LangChain installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.loader import Document

#: The keys `chunk_metadata` adds besides the strategy's own metadata (and ``source`` when the input has none).
LOCATION_KEYS = ("path", "index", "start", "end", "start_line", "end_line", "tokens", "heading_path", "url")


def chunk_metadata(doc: "Document", chunk: "Chunk", site_url: str | None = None,
                   base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The metadata a framework's document or node carries for one chunk.

    Args:
        doc: the document the chunk was cut from.
        chunk: the chunk.
        site_url: the published site's base URL (``url`` is the page route and anchor without it).
        base: the input document's metadata; kept, except where a key below describes the chunk instead.

    Returns:
        ``base``, with ``source`` set to the document's path when absent (LangChain's key for where a text came
        from), then the strategy's metadata, then ``path``, ``index``, ``start``, ``end`` (``doc.text[start:end]``
        is the chunk), ``start_line``, ``end_line``, ``tokens`` (in the strategy's tokenizer), ``heading_path``
        and ``url``.
    """
    from chunkscope.site.urls import chunk_url

    meta = dict(base or {})
    meta.setdefault("source", doc.path)
    meta.update(chunk.metadata)
    meta.update({
        "path": chunk.path,
        "index": chunk.index,
        "start": chunk.start,
        "end": chunk.end,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "tokens": chunk.tokens,
        "heading_path": list(chunk.heading_path),
        "url": chunk_url(site_url, doc, chunk),
    })
    return meta


def langchain_record(doc: "Document", chunk: "Chunk", site_url: str | None = None) -> dict[str, Any]:
    """A chunk as LangChain serialises a Document with ``model_dump()``: ``Document.model_validate`` reads it back.

    That plain form, not ``langchain_core.load.dumpd``'s constructor envelope (``{"lc": 1, "type":
    "constructor", "id": [...], "kwargs": {...}}``): any JSON reader finds ``page_content`` and ``metadata`` at
    the top, and LangChain needs no loader (nor its allow-list of classes) to rebuild it.
    """
    return {"id": None, "metadata": chunk_metadata(doc, chunk, site_url), "page_content": chunk.text,
            "type": "Document"}


def doc_path(metadata: Mapping[str, Any], default: str, docs_root: str | os.PathLike[str] | None) -> str:
    """The path a framework document stands for: its ``source`` (LangChain loaders) or ``file_path``
    (LlamaIndex readers), relative to ``docs_root`` when it lies under it; ``default`` when it names none.

    The path names the chunks and the page route in ``url`` follows it, so a docs root keeps the folders above
    the docs (``/home/me/book/docs/``) out of the URL.
    """
    for key in ("source", "file_path"):
        value = metadata.get(key)
        if isinstance(value, (str, os.PathLike)) and str(value):
            path = PurePath(value)
            if docs_root is not None:
                try:
                    path = path.relative_to(PurePath(docs_root))
                except ValueError:
                    pass  # outside the docs root: the path as given
            return path.as_posix()
    return default


def missing_extra(extra: str, packages: str, exc: ImportError) -> ImportError:
    """The ImportError for an integration whose framework is not installed: what to install, in one line."""
    err = ImportError(f"chunkscope's {extra} integration needs {packages}: pip install 'chunkscope[{extra}]' "
                      f"({exc.name or exc} is not installed)")
    err.name = exc.name
    return err
