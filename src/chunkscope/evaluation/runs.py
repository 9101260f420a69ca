"""Running one configuration: chunk the tree, embed what is new, write its collection and score the questions.

The probe, the sweep and tune all measure a configuration this way. Each distinct chunk text is embedded once:
identical texts of other configurations come from the embedding cache, and a configuration's new texts are
embedded in one length-sorted pass before its collection is written (uniform batches waste no padding).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from chunkscope.evaluation.evaluate import EvalResult, score_retriever
from chunkscope.evaluation.queries import QueryCase
from chunkscope.evaluation.regions import Region
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.parents import ParentSpec
    from chunkscope.retrieval.rerankers.base import Reranker
    from chunkscope.retrieval.store import Store


@dataclass
class ConfigRun:
    """What measuring one configuration gave: its evaluation, its chunks and what was embedded."""

    result: EvalResult
    chunks: list["Chunk"]
    texts: int  # distinct embedded texts of this configuration
    embedded: int  # of those, run through the model now
    cached: int  # of those, found in the embedding cache
    collection: str
    seconds: float


def run_config(tree: "DocsTree", label: str, strategy: Strategy, embedder: "Embedder", store: "Store",
               cases: Sequence[QueryCase], regions: Sequence[Region], qvecs: Any, *, ks: Sequence[int], miss_k: int,
               threshold: float | None, depth: int, site_url: str | None,
               step: ProgressFn, cancel: CancelToken | None, search_mode: str = "dense",
               reranker: "Reranker | None" = None, parent: "ParentSpec | None" = None) -> ConfigRun:
    """Chunk, embed what is new (length-sorted), write the collection, and score the queries. Raises Cancelled.

    ``step`` gets this configuration's own reports; the caller places them within the whole job. With a
    ``parent``, the result carries its parent-level result (`chunkscope.evaluation.evaluate.score_retriever`)."""
    from chunkscope.embedding.embedder import text_sha
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.tokens import prepare

    t0 = time.perf_counter()
    step(Progress(Phase.CHUNK, 0, 1, unit="configuration", label=label))
    try:
        prepare(tree.documents, strategy.length_tokenizer)  # whole-document encodings on all cores, kept per doc
    except Exception:  # noqa: BLE001 - only a speed-up; chunking reports a bad tokenizer itself
        pass
    retriever = Retriever(tree, strategy, embedder, store, site_url, search_mode=search_mode, reranker=reranker)
    chunks = retriever.chunks
    todo = [c for c in chunks if c.embed_tokens is None]
    for c, n in zip(todo, embedder.count_tokens([c.embed_text for c in todo])):
        c.embed_tokens = n
    # Distinct texts, longest first: consecutive model batches then hold texts of one length, as one big encode
    # call would (the sync below embeds in chunk order, 64 at a time: short and long texts mixed, padded).
    distinct: dict[str, "Chunk"] = {}
    for c in chunks:
        distinct.setdefault(text_sha(c.embed_text), c)
    ordered = sorted(distinct.values(), key=lambda c: (-(c.embed_tokens or 0), -len(c.embed_text)))
    stats = None
    if getattr(embedder, "cache", None) is not None:  # without a cache the sync below embeds (once per point)
        stats = embedder.embed([c.embed_text for c in ordered], on_progress=step, cancel=cancel,
                               token_counts=[c.embed_tokens for c in ordered], label=label).stats
    report = retriever.ensure_indexed(step, cancel, label=label)
    if report.cancelled:
        raise Cancelled(f"stopped while indexing {label}")
    embedded, cached = (stats.misses, stats.hits) if stats is not None else (report.embedded, report.cached)
    result = score_retriever(retriever, label, cases, regions, qvecs, ks=ks, threshold=threshold, miss_k=miss_k,
                             depth=depth, tokenizer=model_tokenizer(embedder), cancel=cancel, report=report,
                             on_progress=step, parent=parent)
    return ConfigRun(result, chunks, len(distinct), embedded, cached, retriever.collection, time.perf_counter() - t0)


def model_tokenizer(embedder: "Embedder") -> Any:
    """The model's word-piece tokenizer for truncation verdicts; None when the model folder has none."""
    try:
        return embedder.tokenizer
    except Exception:  # noqa: BLE001 - a model without tokenizer.json: the verdict is simply not given
        return None


def query_vectors(embedder: "Embedder", cases: Sequence[QueryCase], cancel: CancelToken | None) -> Any:
    """One vector per question, embedded in one batch (cached: runs repeat the same questions)."""
    return embedder.embed([c.query for c in cases], cancel=cancel, label="questions").vectors
