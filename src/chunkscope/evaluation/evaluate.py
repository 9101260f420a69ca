"""Retrieval evaluation: which strategy finds the expected passage for a set of questions, and why not.

A queries file (JSONL, or a YAML list) holds ``{"query": "...", "expect": {"path": "...", "heading"?: "...",
"anchor"?: "...", "text"?: "..."}}``. The expectation becomes a *region* of one file: the heading's section (to
the next heading of the same or a higher level), the anchor's section, the verbatim passage, or the whole file.
A retrieved chunk is relevant when it lies in that file and shares a non-space character with the region.

Metrics (binary relevance, averaged over queries): hit@k, MRR over the top max(ks), recall@k (share of the
chunks overlapping the region that were retrieved within k) and nDCG@k. Hits under the score threshold count
as not retrieved, as in the pipelines the seeds describe.

Passage-level metrics (`chunkscope.evaluation.passages`, after Chroma's 2024 report) measure text, not chunks. The *passage*
is the region's body: a section without its heading line, the verbatim text, or the file's body, trimmed. For the
kept chunks of the top k: ``passage_recall@k`` (share of the passage they hold), ``passage_precision@k`` (share of
their text that is passage; overlapping chunks counted once), ``passage_iou@k``, and ``precision_omega`` (the
precision of exactly the chunks touching the passage: the ceiling the chunking sets). Counted in characters or in
the embedding model's word pieces (`PASSAGE_UNITS`).

Every miss gets one reason. ``absent``: no chunk overlaps the region. When some chunk holds the region whole
(every non-space character of it; overlap neighbours that merely touch it do not count), the verdict is that of
the best-ranked such chunk, with its rank and score: ``truncated`` (the model never read the region in it: the
region lies past its truncation point), ``threshold`` (ranked within k, scored under the threshold),
``shadowed`` (ranked lower while a near-duplicate of it elsewhere in the tree took a place within k: cosine
>= `DUPLICATE_COSINE` between the two chunks' vectors, or the same text) or ``below-k`` (ranked lower, with the
rank found searching deeper; no rank when it is not in the deep search either). When no single chunk holds it,
the first that applies: ``truncated`` (past the truncation point of every chunk holding a part), ``threshold`` (a
part ranked within k under the threshold) or ``split`` (the region spans several chunks, none ranked within k;
the rank is the best of its parts).

Every miss also names the chunk it was judged on (`QueryResult.expected`: the best-ranked chunk holding the
passage, or a part of it) and the chunks that outranked it (`QueryResult.outranked_by`), each with rank, score
and ``path:line``.

A `Baseline` keeps each strategy's metrics from one run, to report later runs' changes against them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from chunkscope.retrieval.neighbours import TWIN_COSINE
from chunkscope.evaluation.passages import Located, Measure, char_measure, precision_omega, section_body
from chunkscope.evaluation.passages import score as passage_score
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn
from chunkscope.document.structure import trim

if TYPE_CHECKING:
    from chunkscope.chunking.chunk import Chunk, Strategy
    from chunkscope.document.loader import DocsTree, Document
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Hit, IndexReport, Store

DEFAULT_KS = (1, 3, 5, 10)
#: How deep to search when a query missed, to say at which rank the expected chunk was.
DEFAULT_DEPTH = 100
REASONS = ("absent", "truncated", "threshold", "shadowed", "split", "below-k")
#: Two chunks this alike (cosine of their vectors) are near-duplicates: a question finds either as well (lint's
#: near-twins, one threshold).
DUPLICATE_COSINE = TWIN_COSINE
#: What passage-level metrics count: characters, or the embedding model's word pieces (its tokenizer over the
#: same spans, without [CLS]/[SEP]).
PASSAGE_UNITS = ("chars", "tokens")
_EXPECT_KEYS = ("path", "heading", "anchor", "text")
#: "3.2 ", "Chapter 3: ", "Section 1.4 - " before a heading's words.
_NUMBER_PREFIX = re.compile(r"^\s*(?:appendix\s+[a-z]|(?:(?:chapter|section|part)\s+)?\d+(?:\.\d+)*)\.?(?:\s*[:\-–—]\s*|\s+)", re.I)



class QueriesError(Exception):
    """The queries file cannot be used; names file:line and the problem."""


# --- queries --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    path: str
    heading: str | None = None
    anchor: str | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def describe(self) -> str:
        if self.text is not None:
            short = self.text if len(self.text) <= 40 else self.text[:37] + "…"
            return f"{self.path} “{short}”"
        if self.anchor is not None:
            return f"{self.path}#{self.anchor}"
        if self.heading is not None:
            return f"{self.path} › {self.heading}"
        return self.path


@dataclass(frozen=True)
class QueryCase:
    query: str
    expect: Expect
    source: str = ""
    line: int = 0
    id: str | None = None

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def _case(obj: Any, source: str, line: int) -> QueryCase:
    where = f"{source}:{line}"
    if not isinstance(obj, dict):
        raise QueriesError(f"{where}: expected an object with \"query\" and \"expect\", got {type(obj).__name__}")
    q = obj.get("query")
    if not isinstance(q, str) or not q.strip():
        raise QueriesError(f"{where}: \"query\" is missing or not a non-empty string")
    exp = obj.get("expect")
    if isinstance(exp, str):
        exp = {"path": exp}
    if not isinstance(exp, dict):
        raise QueriesError(f"{where}: \"expect\" is missing or not an object like {{\"path\": \"intro.md\"}}")
    unknown = sorted(set(exp) - set(_EXPECT_KEYS))
    if unknown:
        raise QueriesError(f"{where}: unknown key {unknown[0]!r} in \"expect\" (allowed: {', '.join(_EXPECT_KEYS)})")
    for k in _EXPECT_KEYS:
        v = exp.get(k)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise QueriesError(f"{where}: \"expect.{k}\" must be a non-empty string")
    if not exp.get("path"):
        raise QueriesError(f"{where}: \"expect.path\" is missing")
    anchor = exp.get("anchor")
    ident = obj.get("id")
    return QueryCase(
        query=q.strip(),
        expect=Expect(path=exp["path"].strip(), heading=exp.get("heading"), text=exp.get("text"),
                      anchor=anchor.strip().lstrip("#") if anchor else None),
        source=source,
        line=line,
        id=str(ident) if ident is not None else None,
    )


def load_queries(path: str | Path) -> list[QueryCase]:
    """Read a queries file: JSONL (one object a line; blank and ``#`` lines skipped) or a YAML list.

    Raises:
        QueriesError: the file is missing, empty, or a line is malformed (message names file:line).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QueriesError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QueriesError(f"{path}: cannot read ({exc})") from None
    name = str(path)
    if p.suffix.lower() in (".yaml", ".yml"):
        cases = _load_yaml(text, name)
    else:
        cases = []
        for n, raw in enumerate(text.splitlines(), 1):
            s = raw.strip()
            if not s or s.startswith("#") or s.startswith("//"):
                continue
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as exc:
                raise QueriesError(f"{name}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            cases.append(_case(obj, name, n))
    if not cases:
        raise QueriesError(f"{name}: no queries in the file")
    return cases


def _load_yaml(text: str, name: str) -> list[QueryCase]:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise QueriesError(f"{name}:{line}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if root is None:
        return []
    if isinstance(root, yaml.MappingNode) and isinstance(data, dict) and isinstance(data.get("queries"), list):
        # {"queries": [...]}: take the list and its node
        for k, v in root.value:
            if k.value == "queries":
                root = v
        data = data["queries"]
    if not isinstance(root, yaml.SequenceNode) or not isinstance(data, list):
        raise QueriesError(f"{name}:{root.start_mark.line + 1}: expected a list of queries")
    return [_case(obj, name, node.start_mark.line + 1) for node, obj in zip(root.value, data)]


# --- regions --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    """Where the answer to a query is: ``[start, end)`` of one document.

    ``passage`` is the span passage-level metrics measure: the section's body without its heading line, the
    verbatim text, the file's body. None: the region itself, trimmed.
    """

    path: str
    start: int
    end: int
    label: str = ""
    passage: tuple[int, int] | None = None

    def passage_span(self, text: str) -> tuple[int, int]:
        """The passage as ``[start, end)`` of ``text`` (the region's document)."""
        return self.passage if self.passage is not None else trim(text, self.start, self.end)


def _heading_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def resolve_region(tree: "DocsTree", case: QueryCase) -> Region:
    """Turn an expectation into a region of a document; an expectation that names nothing raises."""
    from chunkscope.document.structure import slugify

    exp = case.expect
    path = exp.path.removeprefix("./")
    doc = tree.get(path)
    if doc is None:
        raise QueriesError(f"{case.where}: expected file {exp.path!r} is not in the docs tree")
    st = doc.structure
    start, end, label = doc.body_start, len(doc.text), path
    passage = trim(doc.text, start, end)
    if exp.anchor is not None:
        h = next((h for h in st.headings if h.anchor == exp.anchor), None)
        if h is None:
            raise QueriesError(f"{case.where}: no heading with anchor #{exp.anchor} in {path}")
        start, end, label = h.start, st.section_end(h), f"{path}#{h.anchor}"
        passage = section_body(doc.text, h.end, end, h.start)
    elif exp.heading is not None:
        want = _heading_key(exp.heading)
        h = next((h for h in st.headings if _heading_key(h.text) == want), None)
        if h is None:  # "Forward Kinematics" for "## 3.2 Forward Kinematics" or "Chapter 3: …", or a slug
            def bare(t: str) -> str:
                return _heading_key(_NUMBER_PREFIX.sub("", t, count=1))

            h = next((h for h in st.headings if bare(h.text) == bare(exp.heading) or h.anchor == slugify(exp.heading)), None)
        if h is None:
            raise QueriesError(f"{case.where}: no heading {exp.heading!r} in {path}")
        start, end, label = h.start, st.section_end(h), f"{path} › {h.text}"
        passage = section_body(doc.text, h.end, end, h.start)
    if exp.text is not None:
        found = _find_text(doc.text, exp.text, start, end)
        if found is None:
            raise QueriesError(f"{case.where}: expected text {_short(exp.text)!r} not found in {label}")
        start, end = found
        passage = trim(doc.text, *found)
        label = f"{label} “{_short(exp.text)}”"
    return Region(path, start, end, label, passage)


def _short(text: str, n: int = 40) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _find_text(text: str, needle: str, lo: int, hi: int) -> tuple[int, int] | None:
    """Verbatim first; then the same words with any whitespace between them (a passage copied across a wrap)."""
    i = text.find(needle, lo, hi)
    if i != -1:
        return i, i + len(needle)
    words = needle.split()
    if not words:
        return None
    m = re.compile(r"\s+".join(map(re.escape, words))).search(text, lo, hi)
    return (m.start(), m.end()) if m else None


def overlaps(text: str, a: int, b: int, region: Region) -> bool:
    """Whether ``[a, b)`` shares a non-space character with the region."""
    lo, hi = max(a, region.start), min(b, region.end)
    return lo < hi and not text[lo:hi].isspace()


# --- metrics --------------------------------------------------------------------------------------------------


def query_metrics(relevant: Sequence[bool], n_relevant: int, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """Metrics of one ranked list: ``relevant[i]`` says whether rank i+1 was a relevant, kept hit.

    ``n_relevant`` is the number of relevant chunks that exist (the ideal ranking, for recall and nDCG).
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
        out[f"ndcg@{k}"] = dcg / ideal if ideal else 0.0
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


# --- the chunks around a miss ---------------------------------------------------------------------------------


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

    @property
    def where(self) -> str:
        return f"{self.path}:{self.start_line}"

    @classmethod
    def of_hit(cls, hit: "Hit") -> "RankedChunk":
        return cls(hit.path, hit.start, hit.end, hit.start_line, hit.end_line, hit.rank, hit.score, hit.kept)

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
        }


@dataclass
class EvalResult:
    strategy_label: str
    metrics: dict[str, float]
    per_query: list[QueryResult]
    strategy: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    chunks: int = 0
    threshold: float | None = None
    ks: tuple[int, ...] = DEFAULT_KS
    miss_k: int = 5
    index: "IndexReport | None" = None
    passage_unit: str = "chars"  # what passage-level metrics counted (one of PASSAGE_UNITS)

    @property
    def reasons(self) -> dict[str, int]:
        counts = {r: 0 for r in REASONS}
        for q in self.per_query:
            if q.reason:
                counts[q.reason] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy_label": self.strategy_label,
            "strategy": self.strategy,
            "params": self.params,
            "chunks": self.chunks,
            "threshold": self.threshold,
            "ks": list(self.ks),
            "miss_k": self.miss_k,
            "passage_unit": self.passage_unit,
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "reasons": self.reasons,
            "index": self.index.to_dict() if self.index is not None else None,
            "per_query": [q.to_dict() for q in self.per_query],
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


def _holders(doc: "Document", region: Region, relevant: Sequence["Chunk"]) -> list["Chunk"]:
    """The chunks holding every non-space character of the region; the one chunk overlapping it when the rest of
    it is in no chunk."""
    lo, hi = trim(doc.text, region.start, region.end)
    whole = [c for c in relevant if c.start <= lo and hi <= c.end]
    return whole or (list(relevant) if len(relevant) == 1 else [])


def _truncated_detail(tokenizer: Any, chunk: "Chunk") -> str:
    return (f"the model reads {tokenizer.max_seq_length} word pieces of the chunk at line {chunk.start_line}; "
            f"the expected passage comes later")


def _threshold_detail(rank: int | None, score: float, threshold: float | None) -> str:
    return f"rank {rank}, score {score:.3f} < threshold {threshold}"


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
        out.append(RankedChunk(h.path, h.start, h.end, h.start_line, h.end_line, h.rank, h.score, h.kept, sim, dup))
    return out, (best.rank - 1 if best is not None else None)


def _ranked_words(expected: RankedChunk, depth: int) -> str:
    if expected.rank is not None and expected.score is not None:
        return f"rank {expected.rank}, score {expected.score:.3f}"
    known = f" (score {expected.score:.3f})" if expected.score is not None else ""
    return f"not in the top {depth}{known}"


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
    twin = next((o for o in outranked if o.duplicate), None)
    if twin is not None:
        # The answer was found, as a copy elsewhere: better ranking cannot help, removing the copy would.
        return verdict("shadowed", f"{ranked}; {_twin_words(twin)}")
    return verdict("below-k", ranked)


def judge(case: QueryCase, region: Region, doc: "Document", hits: Sequence["Hit"], relevant_chunks: Sequence["Chunk"],
          ks: Sequence[int] = DEFAULT_KS, miss_k: int = 5, threshold: float | None = None,
          tokenizer: Any = None, depth: int = DEFAULT_DEPTH, *, index: "ChunkIndex | None" = None,
          query_vector: Any = None, measure: Measure = char_measure) -> QueryResult:
    """Score one query's ranked hits (searched ``depth`` deep) against its region, and explain a miss.

    ``index`` (the tree's chunks and their vectors) lets a miss tell near-duplicates by their vectors and give
    the score of a chunk not in the search (with ``query_vector``); without it only identical texts count as
    duplicates. ``measure`` counts passage-level metrics (characters by default).
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
    elif holders := _holders(doc, region, relevant_chunks):
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
        else:
            reason = "split"
            where = f"best rank {rank} of its parts" if rank is not None else f"none in the top {depth}"
            detail = f"the region spans {len(relevant_chunks)} chunks and none holds it whole; {where}"
        v = _Verdict(reason, detail, rank, score, expected, False, outranked, count)
    top = []
    for h, r in zip(hits[:maxk], rel):
        top.append({"rank": h.rank, "score": round(h.score, 6), "kept": h.kept, "relevant": r, "path": h.path,
                    "start_line": h.start_line, "end_line": h.end_line, "citation": h.citation})
    if v is None:
        return QueryResult(case.query, case.expect, region, case.line, hit, rank, score, len(relevant_chunks), None,
                           detail, metrics, top, case.id, passage=passage)
    return QueryResult(case.query, case.expect, region, case.line, hit, v.rank, v.score, len(relevant_chunks),
                       v.reason, v.detail, metrics, top, case.id, v.expected, v.whole, v.outranked_by,
                       v.outranked_count, passage)


# --- the whole evaluation -------------------------------------------------------------------------------------


def evaluate(tree: "DocsTree", strategies: Sequence[tuple[str, "Strategy"]], queries: Sequence[QueryCase],
             ks: Sequence[int] = DEFAULT_KS, threshold: float | None = None, embedder: "Embedder | None" = None,
             store_factory: Callable[[str, "Strategy"], "Store"] | None = None, on_progress: ProgressFn | None = None,
             *, miss_k: int = 5, depth: int = DEFAULT_DEPTH, cancel: CancelToken | None = None,
             site_url: str | None = None, regions: Sequence[Region] | None = None,
             passage_unit: str = "chars", search_mode: str = "dense") -> list[EvalResult]:
    """Index the tree with each strategy and score every query; one `EvalResult` per strategy, in order.

    ``search_mode`` is how questions are matched (`chunkscope.retrieval.search_modes`): dense, keyword or hybrid.

    Args:
        strategies: (label, configured strategy) pairs; the label names the column in reports.
        queries: from `load_queries`; every expectation is resolved first, so a bad one fails before indexing.
        ks: cut-offs for hit@k, recall@k and nDCG@k (MRR looks at the top max(ks)).
        threshold: score under which a hit counts as not retrieved (None: no threshold).
        store_factory: ``(label, strategy) -> Store``; the caller owns what it returns. Default: one local store
            for the tree, opened here and closed at the end.
        on_progress: `Progress` reports: `Phase.INDEX` (points written) then `Phase.EVALUATE` (questions asked),
            labelled with the strategy's label.
        cancel: checked between batches and questions; cancelling raises `Cancelled`.
        miss_k: the rank a query must reach to count as a hit in the per-query verdicts (the seeds' top-5).
        depth: how deep to search to find the rank of a missed answer.
        regions: the answer region of each query, already resolved (one per query, in order); the label-free
            probe (`chunkscope.evaluation.tuning`) makes its own. Default: `resolve_region` of each query's expectation.
        passage_unit: what passage-level metrics count, one of `PASSAGE_UNITS`.
    """
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Store

    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise ValueError("ks must be positive integers")
    if passage_unit not in PASSAGE_UNITS:
        raise ValueError(f"passage unit {passage_unit!r}: expected one of {', '.join(PASSAGE_UNITS)}")
    if regions is None:
        regions = [resolve_region(tree, q) for q in queries]
    elif len(regions) != len(queries):
        raise ValueError(f"{len(regions)} regions for {len(queries)} queries")
    embedder = embedder or Embedder()
    own_store: Store | None = None
    results: list[EvalResult] = []
    try:
        qvecs = embedder.embed([q.query for q in queries], cancel=cancel).vectors
        tokenizer = embedder.tokenizer
        for label, strategy in strategies:
            if store_factory is not None:
                store = store_factory(label, strategy)
            else:
                if own_store is None:
                    own_store = Store(tree.root)
                store = own_store
            retriever = Retriever(tree, strategy, embedder, store, site_url, search_mode=search_mode)
            report = retriever.ensure_indexed(on_progress, cancel, label=label)
            if report.cancelled:
                raise Cancelled(f"evaluation stopped while indexing {label}")
            results.append(score_retriever(retriever, label, queries, regions, qvecs, ks=ks, threshold=threshold,
                                           miss_k=miss_k, depth=depth, tokenizer=tokenizer, on_progress=on_progress,
                                           cancel=cancel, report=report, passage_unit=passage_unit))
    finally:
        if own_store is not None:
            own_store.close()
    return results


def score_retriever(retriever: "Retriever", label: str, queries: Sequence[QueryCase], regions: Sequence[Region],
                    qvecs: Any, *, ks: Sequence[int] = DEFAULT_KS, threshold: float | None = None, miss_k: int = 5,
                    depth: int = DEFAULT_DEPTH, tokenizer: Any = None, on_progress: ProgressFn | None = None,
                    cancel: CancelToken | None = None, report: "IndexReport | None" = None,
                    passage_unit: str = "chars") -> EvalResult:
    """Score queries against a retriever whose collection is already indexed (`evaluate` does one per strategy).

    ``qvecs`` holds one query vector per query; ``regions`` one resolved region per query. Progress is reported
    as `Phase.EVALUATE` reports labelled ``label``. Raises `Cancelled` when ``cancel`` is cancelled.
    ``passage_unit`` is what passage-level metrics count (`PASSAGE_UNITS`; tokens are ``tokenizer``'s, else the
    retriever's embedder's).
    """

    ks = tuple(sorted(set(int(k) for k in ks)))
    tree = retriever.tree
    by_path: dict[str, list["Chunk"]] = {}
    for c in retriever.chunks:
        by_path.setdefault(c.path, []).append(c)
    embedder = retriever.embedder
    measure = passage_measure(passage_unit, tree,
                              (tokenizer or embedder.tokenizer) if passage_unit == "tokens" else None)
    # Every chunk was embedded when the collection was written: its vector is an embedding-cache lookup.
    index = ChunkIndex(retriever.chunks, lambda texts: embedder.embed(texts).vectors)
    per_query: list[QueryResult] = []
    asked = Progress(Phase.EVALUATE, 0, len(queries), unit="questions", label=label)
    for i, (case, region, vec) in enumerate(zip(queries, regions, qvecs)):
        if cancel is not None and cancel.cancelled:
            raise Cancelled(f"evaluation stopped at query {i + 1} of {len(queries)} ({label})")
        doc = tree.get(region.path)
        if doc is None:
            raise QueriesError(f"{case.where}: expected file {region.path!r} is not in the docs tree")
        relevant = [c for c in by_path.get(region.path, []) if overlaps(doc.text, c.start, c.end, region)]
        # Search as deep as the metrics look first; only a miss whose judged chunk is not there needs the deep
        # search (for its rank). judge() gives the same verdict either way: everything it reads beyond the top
        # max(ks) is the rank of that chunk. Local mode copies every returned payload, so a deep search costs
        # ~10x a shallow one.
        shallow = max(max(ks), miss_k)
        hits = retriever.search(vec, k=shallow, threshold=threshold, text=case.query)
        if depth > shallow and _needs_depth(hits, doc, region, relevant, miss_k):
            hits = retriever.search(vec, k=depth, threshold=threshold, text=case.query)
        per_query.append(judge(case, region, doc, hits, relevant, ks, miss_k, threshold, tokenizer, depth,
                               index=index, query_vector=vec, measure=measure))
        if on_progress is not None:
            on_progress(asked.advanced(i + 1))
    strategy = retriever.strategy
    return EvalResult(
        strategy_label=label,
        metrics=mean_metrics(q.metrics for q in per_query),
        per_query=per_query,
        strategy=strategy.name,
        params=dict(strategy.params),
        chunks=len(retriever.chunks),
        threshold=threshold,
        ks=ks,
        miss_k=miss_k,
        index=report,
        passage_unit=passage_unit,
    )


def _needs_depth(hits: Sequence["Hit"], doc: "Document", region: Region, relevant: Sequence["Chunk"],
                 miss_k: int) -> bool:
    """Whether a shallow search leaves a miss's rank unknown: no relevant chunk kept within ``miss_k``, and the
    chunk the miss is judged on (a chunk holding the region whole, else any relevant one) not in ``hits``."""
    if any(h.kept and h.path == region.path and overlaps(doc.text, h.start, h.end, region) for h in hits[:miss_k]):
        return False
    wanted = {(c.start, c.end) for c in (_holders(doc, region, relevant) or relevant)}
    return not any(h.path == region.path and (h.start, h.end) in wanted for h in hits)


# --- baselines ------------------------------------------------------------------------------------------------

#: The version of the baseline file this chunkscope writes and reads.
BASELINE_VERSION = 1


class BaselineError(Exception):
    """A baseline file cannot be read or written; one line naming the file and the problem."""


@dataclass(frozen=True)
class MetricChange:
    """One metric of one strategy, then and now (None: absent on that side). Every metric here is better
    higher, so a change is a regression when it drops by more than the tolerance."""

    strategy: str
    metric: str
    before: float | None
    after: float | None
    regression: bool = False

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return round(self.after - self.before, 6)


@dataclass
class BaselineComparison:
    """A run's metrics against a baseline's, strategy by strategy (matched by label)."""

    baseline: "Baseline"
    tolerance: float
    changes: list[MetricChange]
    queries: int  # questions in this run
    missing: list[str] = field(default_factory=list)  # strategies of the baseline this run did not score
    new: list[str] = field(default_factory=list)  # strategies this run scored that the baseline has not

    @property
    def regressions(self) -> list[MetricChange]:
        return [c for c in self.changes if c.regression]

    def change(self, strategy: str, metric: str) -> MetricChange | None:
        return next((c for c in self.changes if c.strategy == strategy and c.metric == metric), None)

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.source, "tolerance": self.tolerance,
                "queries": {"baseline": self.baseline.queries, "now": self.queries},
                "changes": [{"strategy": c.strategy, "metric": c.metric, "before": c.before, "after": c.after,
                             "delta": c.delta, "regression": c.regression} for c in self.changes],
                "regressions": len(self.regressions), "missing": self.missing, "new": self.new}


@dataclass
class Baseline:
    """Each strategy's metrics from one evaluation, kept to measure later runs against (a CI gate for docs
    changes). Values are stored rounded to 6 decimals, and compared as stored."""

    strategies: dict[str, dict[str, float]]  # label → metric → value
    queries: int
    passage_unit: str = "chars"
    ks: tuple[int, ...] = DEFAULT_KS
    source: str = ""  # the file it was read from

    @classmethod
    def of(cls, results: Sequence[EvalResult]) -> "Baseline":
        if not results:
            raise ValueError("a baseline needs at least one strategy's results")
        return cls({r.strategy_label: {k: round(v, 6) for k, v in r.metrics.items()} for r in results},
                   len(results[0].per_query), results[0].passage_unit, tuple(results[0].ks))

    def to_dict(self) -> dict[str, Any]:
        return {"chunkscope_baseline": BASELINE_VERSION, "queries": self.queries, "passage_unit": self.passage_unit,
                "ks": list(self.ks), "strategies": self.strategies}

    def save(self, path: str | Path) -> None:
        """Write the baseline as JSON (a file to commit beside the docs)."""
        try:
            Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise BaselineError(f"{path}: cannot write the baseline ({exc.strerror or exc})") from None

    @classmethod
    def load(cls, path: str | Path) -> "Baseline":
        """Read a baseline file; anything but one this chunkscope wrote raises `BaselineError`."""
        name = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BaselineError(f"{name}: no such baseline file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BaselineError(f"{name}: cannot read the baseline ({getattr(exc, 'strerror', None) or exc})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{name}: not a baseline file (invalid JSON at line {exc.lineno}: {exc.msg})") from None
        if not isinstance(data, dict) or "chunkscope_baseline" not in data:
            raise BaselineError(f"{name}: not a baseline file (no \"chunkscope_baseline\" version)")
        version = data["chunkscope_baseline"]
        if version != BASELINE_VERSION:
            raise BaselineError(f"{name}: baseline version {version!r}; this chunkscope reads version "
                                f"{BASELINE_VERSION}")
        strategies = data.get("strategies")
        if not isinstance(strategies, dict) or not strategies:
            raise BaselineError(f"{name}: the baseline holds no strategy's metrics")
        clean: dict[str, dict[str, float]] = {}
        for label, metrics in strategies.items():
            if not isinstance(metrics, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in metrics.values()):
                raise BaselineError(f"{name}: strategy {label!r} does not map metric names to numbers")
            clean[str(label)] = {str(k): float(v) for k, v in metrics.items()}
        queries, unit, ks = data.get("queries"), data.get("passage_unit", "chars"), data.get("ks", list(DEFAULT_KS))
        if not isinstance(queries, int) or unit not in PASSAGE_UNITS or not isinstance(ks, list):
            raise BaselineError(f"{name}: malformed baseline (queries, passage_unit or ks)")
        return cls(clean, queries, unit, tuple(int(k) for k in ks), name)

    def check_unit(self, unit: str) -> None:
        """Passage metrics counted in other units are not comparable: refuse before any work is done."""
        if unit != self.passage_unit:
            raise BaselineError(f"{self.source}: the baseline counted passages in {self.passage_unit}, this run "
                                f"counts them in {unit}; compare runs that count alike")

    def compare(self, results: Sequence[EvalResult], tolerance: float = 0.0) -> BaselineComparison:
        """Each metric both sides have, per strategy; a drop of more than ``tolerance`` (in the metric's own
        unit: 0.02 is two points of a 0-1 score) is a regression."""
        if tolerance < 0:
            raise ValueError(f"tolerance must not be negative, got {tolerance}")
        changes: list[MetricChange] = []
        for r in results:
            then = self.strategies.get(r.strategy_label)
            if then is None:
                continue
            now = {k: round(v, 6) for k, v in r.metrics.items()}
            for metric in [*now, *(m for m in then if m not in now)]:
                before, after = then.get(metric), now.get(metric)
                drop = round(before - after, 6) if before is not None and after is not None else 0.0
                changes.append(MetricChange(r.strategy_label, metric, before, after, drop > tolerance))
        labels = {r.strategy_label for r in results}
        return BaselineComparison(
            self, tolerance, changes, len(results[0].per_query) if results else 0,
            missing=[s for s in self.strategies if s not in labels],
            new=[r.strategy_label for r in results if r.strategy_label not in self.strategies])
