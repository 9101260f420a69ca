"""Retrieval metrics of a ranked list: hit@k, MRR, recall@k, nDCG@k, and the passage-level ones.

Binary relevance, averaged over queries: hit@k, MRR over the top max(ks), recall@k (share of the chunks
overlapping the region that were retrieved within k) and nDCG@k. Hits under the score threshold count as not
retrieved, as in the pipelines the seeds describe.

Passage-level metrics (`chunkscope.evaluation.passages`, after Chroma's 2024 report) measure text, not chunks. The
*passage* is the region's body: a section without its heading line, the verbatim text, or the file's body,
trimmed. For the kept chunks of the top k: ``passage_recall@k`` (share of the passage they hold),
``passage_precision@k`` (share of their text that is passage; overlapping chunks counted once), ``passage_iou@k``,
and ``precision_omega`` (the precision of exactly the chunks touching the passage: the ceiling the chunking
sets). Counted in characters or in the embedding model's word pieces (`PASSAGE_UNITS`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from chunkscope.evaluation.passages import Located, Measure, char_measure, precision_omega
from chunkscope.evaluation.passages import score as passage_score

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.loader import DocsTree
    from chunkscope.retrieval.store import Hit

DEFAULT_KS = (1, 3, 5, 10)
#: What passage-level metrics count: characters, or the embedding model's word pieces (its tokenizer over the
#: same spans, without [CLS]/[SEP]).
PASSAGE_UNITS = ("chars", "tokens")


def query_metrics(relevant: Sequence[bool], n_relevant: int, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """Metrics of one ranked list: ``relevant[i]`` says whether rank i+1 was a relevant, kept hit.

    ``n_relevant`` is the number of relevant chunks that exist (the ideal ranking, for recall and nDCG). Recall and
    nDCG stop at 1: a parent (`chunkscope.evaluation.parents`) can hold the answer when its chunk does not, so more
    can be found than the ideal counts.
    """
    ks = sorted(set(ks))
    out: dict[str, float] = {}
    first = next((i + 1 for i, r in enumerate(relevant[: max(ks)]) if r), None)
    for k in ks:
        out[f"hit@{k}"] = 1.0 if first is not None and first <= k else 0.0
    out["mrr"] = 1.0 / first if first is not None else 0.0
    for k in ks:
        found = sum(1 for r in relevant[:k] if r)
        out[f"recall@{k}"] = min(1.0, found / n_relevant) if n_relevant else 0.0
    for k in ks:
        dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(relevant[:k]) if r)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(n_relevant, k)))
        out[f"ndcg@{k}"] = min(1.0, dcg / ideal) if ideal else 0.0
    return out


def mean_metrics(per_query: Iterable[Mapping[str, float]]) -> dict[str, float]:
    rows = list(per_query)
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}


def passage_metrics(hits: Sequence["Hit"], passage: Located, chunks: Sequence["Chunk"],
                    ks: Sequence[int] = DEFAULT_KS, measure: Measure = char_measure) -> dict[str, float]:
    """Passage-level metrics of one ranked list (see `chunkscope.evaluation.passages`).

    ``hits[:k]`` kept by the threshold are the retrieved chunks at k; ``chunks`` are the document's chunks that
    may touch the passage (for precision-Ω).
    """
    ks = sorted(set(ks))
    scores = {k: passage_score(passage, [(h.path, h.start, h.end) for h in hits[:k] if h.kept], measure) for k in ks}
    out: dict[str, float] = {}
    for name in ("recall", "precision", "iou"):
        for k in ks:
            out[f"passage_{name}@{k}"] = getattr(scores[k], name)
    out["precision_omega"] = precision_omega(passage, [(c.path, c.start, c.end) for c in chunks], measure)
    return out


def passage_measure(unit: str, tree: "DocsTree | None" = None, tokenizer: Any = None) -> Measure:
    """How passage-level metrics count: ``"chars"``, or ``"tokens"`` of ``tokenizer`` (the embedding model's
    word pieces) over each span of ``tree``'s documents, without the model's [CLS]/[SEP]."""
    if unit == "chars":
        return char_measure
    if unit != "tokens":
        raise ValueError(f"passage unit {unit!r}: expected one of {', '.join(PASSAGE_UNITS)}")
    if tree is None or tokenizer is None:
        raise ValueError("counting passages in tokens needs the docs tree and the model's tokenizer")
    specials = tokenizer.count("")  # [CLS] and [SEP], which every encoding adds once

    def tokens(path: str, start: int, end: int) -> int:
        doc = tree.get(path)
        if doc is None or end <= start:
            return 0
        return max(0, tokenizer.counter(doc).count(start, end) - specials)

    return tokens
