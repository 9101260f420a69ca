"""chunkscope: see exactly how documentation is cut into chunks for retrieval, and what the chunks retrieve.

The public API is resolved lazily so ``import chunkscope`` (and ``chunkscope --help``) stays instant:
``chunk_text``, ``load_docs``, ``get_strategy``, ``list_strategies``, ``Chunk``, ``Document``, ``DocsTree``,
``Problem``, ``UnknownStrategy``. ``chunk_text(markdown, "recursive", chunk_size=384)`` is the one-call start.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_docs": "chunkscope.document.loader",
    "Document": "chunkscope.document.loader",
    "DocsTree": "chunkscope.document.loader",
    "Problem": "chunkscope.document.loader",
    "DocsError": "chunkscope.document.loader",
    "chunk_text": "chunkscope.chunking.drivers",
    "get_strategy": "chunkscope.chunking.registry",
    "list_strategies": "chunkscope.chunking.registry",
    "strategy_names": "chunkscope.chunking.registry",
    "Chunk": "chunkscope.chunking.model",
    "Strategy": "chunkscope.chunking.strategy",
    "ParamError": "chunkscope.chunking.params",
    "UnknownStrategy": "chunkscope.chunking.registry",
    "StrategyPluginError": "chunkscope.chunking.registry",
    "get_tokenizer": "chunkscope.tokens",
}

__all__ = [*_EXPORTS, "__version__"]

if TYPE_CHECKING:
    from chunkscope.chunking.drivers import chunk_text
    from chunkscope.chunking.model import Chunk
    from chunkscope.chunking.params import ParamError
    from chunkscope.chunking.registry import (
        StrategyPluginError,
        UnknownStrategy,
        get_strategy,
        list_strategies,
        strategy_names,
    )
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import DocsError, DocsTree, Document, Problem, load_docs
    from chunkscope.tokens import get_tokenizer


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'chunkscope' has no attribute {name!r}")
    value = getattr(import_module(mod), name)
    globals()[name] = value
    return value
