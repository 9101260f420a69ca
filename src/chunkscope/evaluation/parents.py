"""Parent-level judging: one question's answer as a small-to-big bot sends it (`chunkscope.retrieval.parents`).

The chunks are searched as always; the parents of the top k chunks, merged, are what the LLM reads. A parent takes
its best child's rank, so at parent level:

- hit@k: a parent of one of the top k chunks overlaps the answer region; MRR: 1 / the rank of the first such;
  recall@k and nDCG@k count distinct parents (the ideal: every parent of a chunk overlapping the region);
- the passage metrics measure the parents' text (what the bot sends), overlapping parents counted once;
  precision-Ω is that of the parents of the chunks touching the passage.

A parent holds its child, so a question its chunk answers its parent answers too: parent-level misses are a subset
of chunk-level ones. A hit the chunk level missed is *carried* (said in the detail, with the chunk that found it).
A miss keeps the chunk level's reason (the cause is where the answer's own chunk ranked), except one:
``outside-parent``: a chunk of the same page was kept within k but its parent stops short of the passage (a bigger
parent would have carried it); it replaces ``below-k`` and ``split``, whose "ranked lower" it explains further.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from chunkscope.evaluation.metrics import query_metrics
from chunkscope.evaluation.passages import Measure, char_measure, precision_omega
from chunkscope.evaluation.passages import score as passage_score
from chunkscope.evaluation.regions import Region, overlaps

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.loader import Document
    from chunkscope.evaluation.verdicts import QueryResult
    from chunkscope.retrieval.parents import ParentHit, ParentResolver
    from chunkscope.retrieval.store import Hit

#: The reason only a parent-level miss can have (the chunk-level `chunkscope.evaluation.verdicts.REASONS` apply too).
PARENT_REASONS = ("outside-parent",)
#: How a carried hit's detail begins (`chunkscope.evaluation.evaluate.EvalResult.carried` counts them).
CARRIED = "carried by its"
#: The chunk-level reasons ``outside-parent`` replaces: both only say the answer's chunk ranked lower.
_REPLACED = ("below-k", "split")


def parent_metrics(parents: Sequence["ParentHit"], relevant: Sequence[bool], passage: tuple[str, int, int],
                   relevant_parents: Sequence[tuple[str, int, int]], ks: Sequence[int],
                   measure: Measure = char_measure) -> dict[str, float]:
    """Every metric ``eval`` reports, for merged parents (``relevant[i]``: parent i overlaps the region)."""
    ks = sorted(set(ks))
    # A parent keeps its best child's rank, so ranks skip where children merged: the ranked list has a gap there.
    ranks = {p.rank for p, r in zip(parents, relevant) if r and p.kept}
    out = query_metrics([rank in ranks for rank in range(1, max(ks) + 1)], len(set(relevant_parents)), ks)
    scores = {k: passage_score(passage, [(p.path, p.start, p.end) for p in parents if p.kept and p.rank <= k],
                               measure) for k in ks}
    for name in ("recall", "precision", "iou"):
        for k in ks:
            out[f"passage_{name}@{k}"] = getattr(scores[k], name)
    out["precision_omega"] = precision_omega(passage, relevant_parents, measure)
    return out


def _lines(p: "Hit") -> str:
    return f"{p.path}:{p.start_line}-{p.end_line}" if p.end_line != p.start_line else f"{p.path}:{p.start_line}"


def judge_parents(child: "QueryResult", hits: Sequence["Hit"], resolver: "ParentResolver", region: Region,
                  doc: "Document", relevant_chunks: Sequence["Chunk"], ks: Sequence[int], miss_k: int = 5,
                  measure: Measure = char_measure) -> "QueryResult":
    """The parent-level verdict of one question, from the chunk hits its chunk-level verdict (``child``) judged.

    The result is a `QueryResult` like any other (``eval`` and ``--json`` show it beside the chunk's): rank and
    score of the first parent overlapping the region, its reason and detail, the parent-level metrics, and the top
    parents with their children's ranks.
    """
    parents = resolver.merge(hits)
    rel = [p.path == region.path and overlaps(doc.text, p.start, p.end, region) for p in parents]
    passage = (region.path, *(child.passage or region.passage_span(doc.text)))
    relevant_parents = [(c.path, *resolver.span(c.path, c.start, c.end)) for c in relevant_chunks]
    metrics = parent_metrics(parents, rel, passage, relevant_parents, ks, measure)
    first = next((p for p, r in zip(parents, rel) if r), None)
    rank = first.rank if first is not None else None
    score = first.score if first is not None else None
    hit = any(r and p.kept and p.rank <= miss_k for p, r in zip(parents, rel))
    kind = resolver.spec.label
    reason: str | None = None
    if hit:
        assert first is not None
        found = next(p for p, r in zip(parents, rel) if r and p.kept)
        detail = f"rank {found.rank}"
        if child.reason is not None:
            c = found.child
            detail = (f"{CARRIED} {kind}: the chunk at {c.path}:{c.start_line} ranked {c.rank}; "
                      f"its {kind} {_lines(found)} reaches the passage")
        rank, score = found.rank, found.score
    else:
        reason, detail = child.reason, child.detail
        near = next((p for p in parents if p.kept and p.rank <= miss_k and p.path == region.path), None)
        if near is not None and child.reason in _REPLACED:
            reason = "outside-parent"
            c = near.child
            detail = (f"the chunk at {c.path}:{c.start_line} ranked {c.rank}, but its {kind} {_lines(near)} stops "
                      f"short of the passage; {child.detail}")
    top: list[dict[str, Any]] = []
    for p, r in zip(parents, rel):
        if p.rank > max(ks):
            break
        top.append({"rank": p.rank, "score": round(p.score, 6), "kept": p.kept, "relevant": r, "path": p.path,
                    "start": p.start, "end": p.end, "start_line": p.start_line, "end_line": p.end_line,
                    "citation": p.citation, "children": [c.rank for c in p.children]})
    return replace(child, hit=hit, rank=rank, score=score, reason=reason, detail=detail, metrics=metrics, top=top,
                   relevant_chunks=len(set(relevant_parents)))
