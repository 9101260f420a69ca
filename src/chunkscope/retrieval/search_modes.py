"""How a question is matched against the chunks: by meaning, by words, or both fused.

- ``dense``: cosine similarity of the embedder's vectors (what most chatbots do).
- ``keyword``: BM25 over the chunks' words, scored by Qdrant from sparse vectors with its IDF modifier.
- ``hybrid``: both rankings, fused by reciprocal rank fusion (Qdrant's formula, k = 2; equal scores by point id),
  each ranked `engine.FUSION_DEPTH` deep whatever k up to it: one fused ranking, of which every list is the start.

Scores differ in kind between modes (cosine, BM25, fused rank); ranks and miss reasons hold for all three.
"""

from __future__ import annotations

SEARCH_MODES = ("dense", "keyword", "hybrid")
DEFAULT_SEARCH_MODE = "dense"
#: Dimensions of a sweep or an eval grid that are the retrieval pipeline's, not a strategy's parameters: how
#: questions are matched, the embedding model, and what a hit returns (small-to-big, `retrieval.parents`).
PIPELINE_KEYS = ("search", "embedder", "parent")


class SearchModeError(ValueError):
    """A search mode that does not exist; one line naming the ones that do."""


def check_search_mode(mode: str) -> str:
    if mode not in SEARCH_MODES:
        raise SearchModeError(f"unknown search mode {mode!r} (choose one of {', '.join(SEARCH_MODES)})")
    return mode


def passes_threshold(score: float, threshold: float | None, mode: str) -> bool:
    """Whether a hit is kept (sent on to the model): the threshold is a cosine score, so it judges ``dense``
    hits only; BM25 scores and fused ranks are on other scales and always pass."""
    return threshold is None or mode != "dense" or score >= threshold
