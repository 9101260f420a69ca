"""Judging one question: whether it was answered within k, and when not, the one reason why.

Every miss gets one reason. ``absent``: no chunk overlaps the region. When some chunk holds the region whole
(every non-space character of it; overlap neighbours that merely touch it do not count), the verdict is that of
the best-ranked such chunk, with its rank and score: ``truncated`` (the model never read the region in it: the
region lies past its truncation point), ``threshold`` (ranked within k, scored under the threshold),
``shadowed`` (ranked lower while a near-duplicate of it elsewhere in the tree took a place within k: cosine
>= `DUPLICATE_COSINE` between the two chunks' vectors, or the same text) or ``below-k`` (ranked lower, with the
rank found searching deeper; no rank when it is not in the deep search either). With a reranker
(`chunkscope.retrieval.rerank`), ``reranked-out`` comes before ``shadowed``: the search ranked it within k and the
reranker pushed it below k; the detail names both ranks. When no single chunk holds it,
the first that applies: ``truncated`` (past the truncation point of every chunk holding a part), ``threshold`` (a
part ranked within k under the threshold) or ``split`` (the region spans several chunks, none ranked within k;
the rank is the best of its parts).

Every miss also names the chunk it was judged on (`QueryResult.expected`: the best-ranked chunk holding the
passage, or a part of it) and the chunks that outranked it (`QueryResult.outranked_by`), each with rank, score
and ``path:line``. `judge` is the one judging function: ``eval``, ``probe``, ``tune`` and the app's expectation
all call it, and `verdict_words` is how every one of them says a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from chunkscope.document.structure import trim
from chunkscope.evaluation.metrics import DEFAULT_KS, passage_metrics, query_metrics
from chunkscope.evaluation.passages import Measure, char_measure
from chunkscope.evaluation.queries import Expect, QueryCase
from chunkscope.evaluation.regions import Region, overlaps
from chunkscope.retrieval.neighbours import TWIN_COSINE
from chunkscope.retrieval.rerankers.base import RerankedHit

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.loader import Document
    from chunkscope.retrieval.store import Hit

#: How deep to search when a query missed, to say at which rank the expected chunk was.
DEFAULT_DEPTH = 100
REASONS = ("absent", "truncated", "threshold", "reranked-out", "shadowed", "split", "below-k")
#: Two chunks this alike (cosine of their vectors) are near-duplicates: a question finds either as well (lint's
#: near-twins, one threshold).
DUPLICATE_COSINE = TWIN_COSINE


@dataclass(frozen=True)
class RankedChunk:
    """A chunk as one question ranked it: where it is, its rank (None: not in the search) and its score."""

    path: str
    start: int
    end: int
    start_line: int
    end_line: int
    rank: int | None
    score: float | None
    kept: bool = True
    #: Cosine between this chunk's vector and the expected chunk's (chunks that outranked it; None: unknown).
    similarity: float | None = None
    #: A near-duplicate of the expected chunk: cosine >= DUPLICATE_COSINE, or the same text.
    duplicate: bool = False
    #: With a reranker, the search's rank and score (``rank`` and ``score`` are then the reranker's).
    search_rank: int | None = None
    search_score: float | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.start_line}"

    @classmethod
    def of_hit(cls, hit: "Hit", similarity: float | None = None, duplicate: bool = False) -> "RankedChunk":
        search = (hit.search_rank, hit.search_score) if isinstance(hit, RerankedHit) else (None, None)
        return cls(hit.path, hit.start, hit.end, hit.start_line, hit.end_line, hit.rank, hit.score, hit.kept,
                   similarity, duplicate, *search)

    @classmethod
    def of_chunk(cls, chunk: "Chunk", score: float | None = None) -> "RankedChunk":
        return cls(chunk.path, chunk.start, chunk.end, chunk.start_line, chunk.end_line, None, score)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"rank": self.rank, "score": None if self.score is None else round(self.score, 6),
                             "path": self.path, "line": self.start_line, "end_line": self.end_line,
                             "start": self.start, "end": self.end, "kept": self.kept}
        if self.similarity is not None:
            d["similarity"] = round(self.similarity, 6)
        if self.duplicate:
            d["duplicate"] = True
        if self.search_rank is not None and self.search_score is not None:
            d.update(search_rank=self.search_rank, search_score=round(self.search_score, 6))
        return d


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na and nb else 0.0


class ChunkIndex:
    """A tree's chunks found by their span, and their vectors on demand: what a miss's explanation needs.

    ``embed`` maps texts to vectors (the embedder, whose cache holds every indexed chunk's vector, so this costs
    a lookup); without it similarities and the scores of unranked chunks are unknown. Vectors are kept once read.
    """

    def __init__(self, chunks: Iterable["Chunk"], embed: Callable[[list[str]], Any] | None = None) -> None:
        self._by_span = {(c.path, c.start, c.end): c for c in chunks}
        self._embed = embed
        self._vectors: dict[tuple[str, int, int], Any] = {}

    def chunk(self, path: str, start: int, end: int) -> "Chunk | None":
        return self._by_span.get((path, start, end))

    def vectors(self, chunks: Sequence["Chunk"]) -> list[Any] | None:
        """One vector per chunk (of the text the model read), or None without ``embed``."""
        if self._embed is None:
            return None
        keys = [(c.path, c.start, c.end) for c in chunks]
        missing = {k: c for k, c in zip(keys, chunks) if k not in self._vectors}
        if missing:
            for k, v in zip(missing, self._embed([c.embed_text for c in missing.values()])):
                self._vectors[k] = v
        return [self._vectors[k] for k in keys]

    def score(self, chunk: "Chunk", query_vector: Any) -> float | None:
        """The search score (cosine) the chunk has for the query, ranked or not."""
        vecs = self.vectors([chunk]) if query_vector is not None else None
        return _cosine(vecs[0], query_vector) if vecs else None

    def similarities(self, chunk: "Chunk", hits: Sequence["Hit"]) -> list[float | None]:
        """Cosine between ``chunk``'s vector and each hit's chunk's (None where unknown)."""
        found = [self.chunk(h.path, h.start, h.end) for h in hits]
        known = [c for c in found if c is not None]
        vecs = self.vectors([chunk, *known]) if known else None
        if vecs is None:
            return [None] * len(hits)
        sims = iter(_cosine(vecs[0], v) for v in vecs[1:])
        return [next(sims) if c is not None else None for c in found]


# --- results --------------------------------------------------------------------------------------------------


@dataclass
class QueryResult:
    query: str
    expect: Expect
    region: Region
    line: int
    hit: bool  # a relevant chunk was kept within miss_k
    rank: int | None  # first relevant rank in the deep search (ignoring the threshold); None: not in it
    score: float | None  # that hit's score
    relevant_chunks: int  # chunks overlapping the region
    reason: str | None  # None for a hit, else one of REASONS
    detail: str
    metrics: dict[str, float]
    top: list[dict[str, Any]] = field(default_factory=list)  # the top max(ks) hits, with "relevant"
    id: str | None = None
    #: A miss's chunk: the best-ranked chunk holding the passage (``expected_whole``), else the best-ranked
    #: holding part of it; None for a hit or when no chunk overlaps the passage.
    expected: RankedChunk | None = None
    expected_whole: bool = False
    #: The chunks ranked above ``expected`` that took the places within k (at most k of them).
    outranked_by: list[RankedChunk] = field(default_factory=list)
    #: How many chunks ranked above ``expected``; None when it was not in the search (more than were searched).
    outranked_count: int | None = None
    passage: tuple[int, int] | None = None  # the span passage-level metrics measured
    #: The region is a section's body and the chunks holding its heading line hold none of it (`heading_cut_off`).
    cut_off: bool = False

    @property
    def words(self) -> str:
        """The verdict as every view says it (`verdict_words`)."""
        return verdict_words(self.reason, self.rank, self.score, cut_off=self.cut_off)

    def miss_dict(self) -> dict[str, Any]:
        """The chunk a miss was judged on and what outranked it (empty for a hit)."""
        if self.reason is None:
            return {}
        expected = None if self.expected is None else {**self.expected.to_dict(), "whole": self.expected_whole}
        return {"expected": expected,
                "outranked_by": [o.to_dict() for o in self.outranked_by], "outranked_count": self.outranked_count}

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "id": self.id,
            "line": self.line,
            "expect": self.expect.to_dict(),
            "region": {"path": self.region.path, "start": self.region.start, "end": self.region.end},
            "passage": None if self.passage is None else {"start": self.passage[0], "end": self.passage[1]},
            "hit": self.hit,
            "rank": self.rank,
            "score": None if self.score is None else round(self.score, 6),
            "relevant_chunks": self.relevant_chunks,
            "reason": self.reason,
            "detail": self.detail,
            **self.miss_dict(),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "top": self.top,
            **({"cut_off": self.cut_off} if self.region.heading is not None else {}),
        }


# --- judging one query ----------------------------------------------------------------------------------------


def _unread(chunks: Sequence["Chunk"], doc: "Document", region: Region, tokenizer: Any) -> bool:
    """True when the model read no part of the region in any chunk holding it (it lies past truncation)."""
    if tokenizer is None or not chunks:
        return False
    for c in chunks:
        if c.embed_text_override is not None:
            return False  # the embedded text is not a slice: offsets do not map, assume it was read
        cut = c.start + tokenizer.truncation_offset(c.text)
        lo, hi = max(c.start, region.start), min(c.end, region.end, cut)
        if lo < hi and not doc.text[lo:hi].isspace():
            return False
    return True


def holders_of(doc: "Document", region: Region, relevant: Sequence["Chunk"]) -> list["Chunk"]:
    """The chunks holding every non-space character of the region; the one chunk overlapping it when the rest of
    it is in no chunk."""
    lo, hi = trim(doc.text, region.start, region.end)
    whole = [c for c in relevant if c.start <= lo and hi <= c.end]
    return whole or (list(relevant) if len(relevant) == 1 else [])


def _truncated_detail(tokenizer: Any, chunk: "Chunk") -> str:
    return (f"the model reads {tokenizer.max_seq_length} word pieces of the chunk at line {chunk.start_line}; "
            f"the expected passage comes later")


def _threshold_detail(rank: int | None, score: float | None, threshold: float | None) -> str:
    scored = f"score {score:.3f}" if score is not None else "no score"
    return f"rank {rank}, {scored} < threshold {threshold}"


@dataclass
class _Verdict:
    """A miss's reason and the chunks it was judged on."""

    reason: str
    detail: str
    rank: int | None
    score: float | None
    expected: RankedChunk | None = None
    whole: bool = False
    outranked_by: list[RankedChunk] = field(default_factory=list)
    outranked_count: int | None = None


def _judged(hits: Sequence["Hit"], path: str, candidates: Sequence["Chunk"], index: "ChunkIndex | None",
            query_vector: Any) -> tuple["Chunk", "Hit | None", RankedChunk]:
    """The best-ranked of ``candidates`` (the first when none is in ``hits``), its hit, and how it ranked; an
    unranked chunk's score is read from its vector when ``index`` has them."""
    spans = {(c.start, c.end): c for c in candidates}
    best = next((h for h in hits if h.path == path and (h.start, h.end) in spans), None)
    if best is not None:
        return spans[(best.start, best.end)], best, RankedChunk.of_hit(best)
    chunk = candidates[0]
    score = index.score(chunk, query_vector) if index is not None else None
    return chunk, None, RankedChunk.of_chunk(chunk, score)


def _above(hits: Sequence["Hit"], chunk: "Chunk", best: "Hit | None", miss_k: int,
           index: "ChunkIndex | None") -> tuple[list[RankedChunk], int | None]:
    """The chunks ranked above ``chunk`` within ``miss_k`` (the places it needed), each marked when it is a
    near-duplicate of it elsewhere in the tree; and how many ranked above it (None: it was not in the search)."""
    above = list(hits[: best.rank - 1]) if best is not None else list(hits)
    listed = above[:miss_k]
    sims = index.similarities(chunk, listed) if index is not None else [None] * len(listed)
    out = []
    for h, sim in zip(listed, sims):
        elsewhere = h.path != chunk.path or h.end <= chunk.start or chunk.end <= h.start
        dup = elsewhere and (_same_text(h.text, chunk.text) or (sim is not None and sim >= DUPLICATE_COSINE))
        out.append(RankedChunk.of_hit(h, sim, dup))
    return out, (best.rank - 1 if best is not None else None)


def _ranked_words(expected: RankedChunk, depth: int) -> str:
    if expected.rank is not None and expected.score is not None:
        return f"rank {expected.rank}, score {expected.score:.3f}" + _search_words(expected)
    known = f" (score {expected.score:.3f})" if expected.score is not None else ""
    return f"not in the top {depth}{known}"


def _search_words(expected: RankedChunk) -> str:
    """How the search ranked a chunk the reranker moved: `` (search rank 3, score 0.612)``; empty otherwise."""
    if expected.search_rank is None or expected.search_score is None or expected.search_rank == expected.rank:
        return ""
    return f" (search rank {expected.search_rank}, score {expected.search_score:.3f})"


def _pushed_out(hit: "Hit | None", miss_k: int) -> bool:
    """The search ranked ``hit`` within ``miss_k`` and kept it; the reranker put it below."""
    return isinstance(hit, RerankedHit) and hit.kept and hit.search_rank <= miss_k < hit.rank


def _reranked_out_words(hit: "Hit") -> str:
    assert isinstance(hit, RerankedHit)
    return (f"search rank {hit.search_rank} (score {hit.search_score:.3f}), reranked to rank {hit.rank} "
            f"(score {hit.score:.3f})")


def _twin_words(twin: RankedChunk) -> str:
    sim = twin.similarity
    alike = f"cosine {sim:.3f}" if sim is not None and sim >= DUPLICATE_COSINE else "same text"
    return f"a near-duplicate at {twin.where} ranked {twin.rank} ({alike})"


def _holder_verdict(region: Region, doc: "Document", hits: Sequence["Hit"], holders: Sequence["Chunk"],
                    miss_k: int, threshold: float | None, tokenizer: Any, depth: int,
                    index: "ChunkIndex | None", query_vector: Any) -> _Verdict:
    """A miss judged on the best-ranked chunk holding the region whole."""
    chunk, best, expected = _judged(hits, region.path, holders, index, query_vector)
    outranked, count = _above(hits, chunk, best, miss_k, index)
    rank, score = (best.rank, best.score) if best is not None else (None, None)
    ranked = _ranked_words(expected, depth)

    def verdict(reason: str, detail: str) -> _Verdict:
        return _Verdict(reason, detail, rank, score, expected, True, outranked, count)

    if _unread([chunk], doc, region, tokenizer):
        # Before "threshold": when the model never read the passage, where its chunk ranked is happenstance.
        return verdict("truncated", f"{_truncated_detail(tokenizer, chunk)} ({ranked})")
    if best is not None and best in hits[:miss_k]:
        return verdict("threshold", _threshold_detail(rank, score, threshold))
    if best is not None and _pushed_out(best, miss_k):
        # The search found it within k; the bot's reranker is what put it out of reach.
        return verdict("reranked-out", _reranked_out_words(best))
    twin = next((o for o in outranked if o.duplicate), None)
    if twin is not None:
        # The answer was found, as a copy elsewhere: better ranking cannot help, removing the copy would.
        return verdict("shadowed", f"{ranked}; {_twin_words(twin)}")
    return verdict("below-k", ranked)


def judge(case: QueryCase, region: Region, doc: "Document", hits: Sequence["Hit"], relevant_chunks: Sequence["Chunk"],
          ks: Sequence[int] = DEFAULT_KS, miss_k: int = 5, threshold: float | None = None,
          tokenizer: Any = None, depth: int = DEFAULT_DEPTH, *, index: "ChunkIndex | None" = None,
          query_vector: Any = None, measure: Measure = char_measure, cut_off: bool = False) -> QueryResult:
    """Score one query's ranked hits (searched ``depth`` deep) against its region, and explain a miss.

    ``index`` (the tree's chunks and their vectors) lets a miss tell near-duplicates by their vectors and give
    the score of a chunk not in the search (with ``query_vector``); without it only identical texts count as
    duplicates. ``measure`` counts passage-level metrics (characters by default). ``cut_off``: the region's
    heading is cut off from it (`heading_cut_off`), which a miss is then said to be.
    """
    maxk = max(ks)
    rel = [h.path == region.path and overlaps(doc.text, h.start, h.end, region) for h in hits]
    kept_rel = [r and h.kept for r, h in zip(rel, hits)]
    metrics = query_metrics(kept_rel[:maxk], len(relevant_chunks), ks)
    passage = region.passage_span(doc.text)
    metrics.update(passage_metrics(hits, (region.path, *passage), relevant_chunks, ks, measure))
    first = next((i for i, r in enumerate(rel) if r), None)
    rank = hits[first].rank if first is not None else None
    score = hits[first].score if first is not None else None
    hit = any(kept_rel[:miss_k])
    v: _Verdict | None = None
    detail = ""
    if hit:
        detail = f"rank {rank}"
    elif not relevant_chunks:
        v = _Verdict("absent", f"no chunk overlaps {region.label}", rank, score)
    elif holders := holders_of(doc, region, relevant_chunks):
        # One chunk holds the whole passage: whatever its overlap neighbours did, the verdict is that chunk's.
        v = _holder_verdict(region, doc, hits, holders, miss_k, threshold, tokenizer, depth, index, query_vector)
    else:
        # No chunk holds it whole: judged on the best-ranked part.
        chunk, best, expected = _judged(hits, region.path, relevant_chunks, index, query_vector)
        outranked, count = _above(hits, chunk, best, miss_k, index)
        if _unread(relevant_chunks, doc, region, tokenizer):
            # Before "threshold": when the model never read the passage, where its chunk ranked is happenstance.
            reason, detail = "truncated", _truncated_detail(tokenizer, relevant_chunks[0])
        elif any(rel[:miss_k]):
            reason, detail = "threshold", _threshold_detail(rank, score, threshold)
        elif best is not None and _pushed_out(best, miss_k):
            reason, detail = "reranked-out", _reranked_out_words(best)
        else:
            reason = "split"
            where = f"best rank {rank} of its parts" if rank is not None else f"none in the top {depth}"
            detail = f"the region spans {len(relevant_chunks)} chunks and none holds it whole; {where}"
        v = _Verdict(reason, detail, rank, score, expected, False, outranked, count)
    top = []
    for h, r in zip(hits[:maxk], rel):
        top.append({"rank": h.rank, "score": round(h.score, 6), "kept": h.kept, "relevant": r, "path": h.path,
                    "start_line": h.start_line, "end_line": h.end_line, "citation": h.citation})
        if isinstance(h, RerankedHit):
            top[-1].update(search_rank=h.search_rank, search_score=round(h.search_score, 6))
    if v is None:
        return QueryResult(case.query, case.expect, region, case.line, hit, rank, score, len(relevant_chunks), None,
                           detail, metrics, top, case.id, passage=passage, cut_off=cut_off)
    return QueryResult(case.query, case.expect, region, case.line, hit, v.rank, v.score, len(relevant_chunks),
                       v.reason, v.detail, metrics, top, case.id, v.expected, v.whole, v.outranked_by,
                       v.outranked_count, passage, cut_off)


#: How a miss is said when its region's heading line sits in chunks that hold none of the region's text.
CUT_OFF = "heading cut off"


def heading_cut_off(text: str, chunks: Sequence["Chunk"], region: Region) -> bool:
    """Whether the chunks holding the region's heading line (``region.heading``) hold none of the region: the
    heading is orphaned from its body. False for a region without a heading, or a heading in no chunk."""
    if region.heading is None:
        return False
    holders = [c for c in chunks if c.path == region.path and c.start <= region.heading < c.end]
    return bool(holders) and not any(overlaps(text, c.start, c.end, region) for c in holders)


def verdict_words(reason: str | None, rank: int | None, score: float | None = None, *, cut_off: bool = False) -> str:
    """A verdict as ``eval``, ``probe`` and the app all say it: the reason (``found`` for a hit, `CUT_OFF` for a
    miss whose heading is cut off from its body), the rank and the score where known:
    ``truncated, rank 66, score 0.412``."""
    words = ["found" if reason is None else CUT_OFF if cut_off else reason]
    if rank is not None:
        words.append(f"rank {rank}")
    if score is not None:
        words.append(f"score {score:.3f}")
    return ", ".join(words)
