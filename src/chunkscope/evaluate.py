"""Retrieval evaluation: which strategy finds the expected passage for a set of questions, and why not.

A queries file (JSONL, or a YAML list) holds ``{"query": "...", "expect": {"path": "...", "heading"?: "...",
"anchor"?: "...", "text"?: "..."}}``. The expectation becomes a *region* of one file: the heading's section (to
the next heading of the same or a higher level), the anchor's section, the verbatim passage, or the whole file.
A retrieved chunk is relevant when it lies in that file and shares a non-space character with the region.

Metrics (binary relevance, averaged over queries): hit@k, MRR over the top max(ks), recall@k (share of the
chunks overlapping the region that were retrieved within k) and nDCG@k. Hits under the score threshold count
as not retrieved, as in the pipelines the seeds describe.

Every miss gets one reason. ``absent``: no chunk overlaps the region. When some chunk holds the region whole
(every non-space character of it; overlap neighbours that merely touch it do not count), the verdict is that of
the best-ranked such chunk, with its rank and score: ``truncated`` (the model never read the region in it: the
region lies past its truncation point), ``threshold`` (ranked within k, scored under the threshold) or ``below-k``
(ranked lower, with the rank found searching deeper; no rank when it is not in the deep search either). When no
single chunk holds it, the first that applies: ``truncated`` (past the truncation point of every chunk holding a
part), ``threshold`` (a part ranked within k under the threshold) or ``split`` (the region spans several chunks,
none ranked within k; the rank is the best of its parts).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from .structure import trim

if TYPE_CHECKING:
    from .chunk import Chunk, Strategy
    from .docs import DocsTree, Document
    from .embed import Embedder
    from .retrieval import Retriever
    from .store import Hit, IndexReport, Store

DEFAULT_KS = (1, 3, 5, 10)
#: How deep to search when a query missed, to say at which rank the expected chunk was.
DEFAULT_DEPTH = 100
REASONS = ("absent", "truncated", "threshold", "split", "below-k")
_EXPECT_KEYS = ("path", "heading", "anchor", "text")
#: "3.2 ", "Chapter 3: ", "Section 1.4 - " before a heading's words.
_NUMBER_PREFIX = re.compile(r"^\s*(?:appendix\s+[a-z]|(?:(?:chapter|section|part)\s+)?\d+(?:\.\d+)*)\.?(?:\s*[:\-–—]\s*|\s+)", re.I)

ProgressFn = Callable[[int, int, dict[str, Any]], None]


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
    """Where the answer to a query is: ``[start, end)`` of one document."""

    path: str
    start: int
    end: int
    label: str = ""


def _heading_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def resolve_region(tree: "DocsTree", case: QueryCase) -> Region:
    """Turn an expectation into a region of a document; an expectation that names nothing raises."""
    from .structure import slugify

    exp = case.expect
    path = exp.path.removeprefix("./")
    doc = tree.get(path)
    if doc is None:
        raise QueriesError(f"{case.where}: expected file {exp.path!r} is not in the docs tree")
    st = doc.structure
    start, end, label = doc.body_start, len(doc.text), path
    if exp.anchor is not None:
        h = next((h for h in st.headings if h.anchor == exp.anchor), None)
        if h is None:
            raise QueriesError(f"{case.where}: no heading with anchor #{exp.anchor} in {path}")
        start, end, label = h.start, st.section_end(h), f"{path}#{h.anchor}"
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
    if exp.text is not None:
        found = _find_text(doc.text, exp.text, start, end)
        if found is None:
            raise QueriesError(f"{case.where}: expected text {_short(exp.text)!r} not found in {label}")
        start, end = found
        label = f"{label} “{_short(exp.text)}”"
    return Region(path, start, end, label)


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "id": self.id,
            "line": self.line,
            "expect": self.expect.to_dict(),
            "region": {"path": self.region.path, "start": self.region.start, "end": self.region.end},
            "hit": self.hit,
            "rank": self.rank,
            "score": None if self.score is None else round(self.score, 6),
            "relevant_chunks": self.relevant_chunks,
            "reason": self.reason,
            "detail": self.detail,
            "metrics": self.metrics,
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


def _holder_verdict(region: Region, doc: "Document", hits: Sequence["Hit"], holders: Sequence["Chunk"],
                    miss_k: int, threshold: float | None, tokenizer: Any, depth: int
                    ) -> tuple[str, str, int | None, float | None]:
    """(reason, detail, rank, score) of a miss, judged on the best-ranked chunk holding the region whole."""
    spans = {(c.start, c.end): c for c in holders}
    best = next((h for h in hits if h.path == region.path and (h.start, h.end) in spans), None)
    chunk = spans[(best.start, best.end)] if best is not None else holders[0]
    rank, score = (best.rank, best.score) if best is not None else (None, None)
    ranked = f"rank {rank}, score {score:.3f}" if best is not None else f"not in the top {depth}"
    if _unread([chunk], doc, region, tokenizer):
        # Before "threshold": when the model never read the passage, where its chunk ranked is happenstance.
        return "truncated", f"{_truncated_detail(tokenizer, chunk)} ({ranked})", rank, score
    if best is not None and best in hits[:miss_k]:
        return "threshold", _threshold_detail(rank, score, threshold), rank, score
    return "below-k", ranked, rank, score


def judge(case: QueryCase, region: Region, doc: "Document", hits: Sequence["Hit"], relevant_chunks: Sequence["Chunk"],
          ks: Sequence[int] = DEFAULT_KS, miss_k: int = 5, threshold: float | None = None,
          tokenizer: Any = None, depth: int = DEFAULT_DEPTH) -> QueryResult:
    """Score one query's ranked hits (searched ``depth`` deep) against its region, and explain a miss."""
    maxk = max(ks)
    rel = [h.path == region.path and overlaps(doc.text, h.start, h.end, region) for h in hits]
    kept_rel = [r and h.kept for r, h in zip(rel, hits)]
    metrics = query_metrics(kept_rel[:maxk], len(relevant_chunks), ks)
    first = next((i for i, r in enumerate(rel) if r), None)
    rank = hits[first].rank if first is not None else None
    score = hits[first].score if first is not None else None
    hit = any(kept_rel[:miss_k])
    reason: str | None = None
    detail = ""
    if hit:
        detail = f"rank {rank}"
    elif not relevant_chunks:
        reason, detail = "absent", f"no chunk overlaps {region.label}"
    elif holders := _holders(doc, region, relevant_chunks):
        # One chunk holds the whole passage: whatever its overlap neighbours did, the verdict is that chunk's.
        reason, detail, rank, score = _holder_verdict(region, doc, hits, holders, miss_k, threshold, tokenizer,
                                                      depth)
    elif _unread(relevant_chunks, doc, region, tokenizer):
        # Before "threshold": when the model never read the passage, where its chunk ranked is happenstance.
        reason, detail = "truncated", _truncated_detail(tokenizer, relevant_chunks[0])
    elif any(rel[:miss_k]):
        reason, detail = "threshold", _threshold_detail(rank, score, threshold)
    else:
        reason = "split"
        where = f"best rank {rank} of its parts" if rank is not None else f"none in the top {depth}"
        detail = f"the region spans {len(relevant_chunks)} chunks and none holds it whole; {where}"
    top = []
    for h, r in zip(hits[:maxk], rel):
        top.append({"rank": h.rank, "score": round(h.score, 6), "kept": h.kept, "relevant": r, "path": h.path,
                    "start_line": h.start_line, "end_line": h.end_line, "citation": h.citation})
    return QueryResult(case.query, case.expect, region, case.line, hit, rank, score, len(relevant_chunks), reason,
                       detail, metrics, top, case.id)


# --- the whole evaluation -------------------------------------------------------------------------------------


def evaluate(tree: "DocsTree", strategies: Sequence[tuple[str, "Strategy"]], queries: Sequence[QueryCase],
             ks: Sequence[int] = DEFAULT_KS, threshold: float | None = None, embedder: "Embedder | None" = None,
             store_factory: Callable[[str, "Strategy"], "Store"] | None = None, on_progress: ProgressFn | None = None,
             *, miss_k: int = 5, depth: int = DEFAULT_DEPTH, should_stop: Any = None,
             site_url: str | None = None, regions: Sequence[Region] | None = None) -> list[EvalResult]:
    """Index the tree with each strategy and score every query; one `EvalResult` per strategy, in order.

    Args:
        strategies: (label, configured strategy) pairs; the label names the column in reports.
        queries: from `load_queries`; every expectation is resolved first, so a bad one fails before indexing.
        ks: cut-offs for hit@k, recall@k and nDCG@k (MRR looks at the top max(ks)).
        threshold: score under which a hit counts as not retrieved (None: no threshold).
        store_factory: ``(label, strategy) -> Store``; the caller owns what it returns. Default: one local store
            for the tree, opened here and closed at the end.
        on_progress: ``on_progress(done, total, stats)``; ``stats["phase"]`` is "index" (done/total are points
            written) or "query" (done/total are queries), ``stats["strategy"]`` the label.
        miss_k: the rank a query must reach to count as a hit in the per-query verdicts (the seeds' top-5).
        depth: how deep to search to find the rank of a missed answer.
        regions: the answer region of each query, already resolved (one per query, in order); the label-free
            probe (`chunkscope.tuning`) makes its own. Default: `resolve_region` of each query's expectation.
    """
    from .embed import Cancelled, Embedder
    from .retrieval import Retriever
    from .store import Store

    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise ValueError("ks must be positive integers")
    if regions is None:
        regions = [resolve_region(tree, q) for q in queries]
    elif len(regions) != len(queries):
        raise ValueError(f"{len(regions)} regions for {len(queries)} queries")
    embedder = embedder or Embedder()
    own_store: Store | None = None
    results: list[EvalResult] = []
    try:
        qvecs = embedder.embed([q.query for q in queries])
        tokenizer = embedder.tokenizer
        for label, strategy in strategies:
            if store_factory is not None:
                store = store_factory(label, strategy)
            else:
                if own_store is None:
                    own_store = Store(tree.root)
                store = own_store
            retriever = Retriever(tree, strategy, embedder, store, site_url)

            def index_progress(done: int, total: int, stats: dict[str, Any], _label: str = label) -> None:
                if on_progress is not None:
                    on_progress(done, total, {**stats, "phase": "index", "strategy": _label})

            report = retriever.ensure_indexed(index_progress, should_stop)
            if report.cancelled:
                raise Cancelled(f"evaluation stopped while indexing {label}")
            results.append(score_retriever(retriever, label, queries, regions, qvecs, ks=ks, threshold=threshold,
                                           miss_k=miss_k, depth=depth, tokenizer=tokenizer, on_progress=on_progress,
                                           should_stop=should_stop, report=report))
    finally:
        if own_store is not None:
            own_store.close()
    return results


def score_retriever(retriever: "Retriever", label: str, queries: Sequence[QueryCase], regions: Sequence[Region],
                    qvecs: Any, *, ks: Sequence[int] = DEFAULT_KS, threshold: float | None = None, miss_k: int = 5,
                    depth: int = DEFAULT_DEPTH, tokenizer: Any = None, on_progress: ProgressFn | None = None,
                    should_stop: Any = None, report: "IndexReport | None" = None) -> EvalResult:
    """Score queries against a retriever whose collection is already indexed (`evaluate` does one per strategy).

    ``qvecs`` holds one query vector per query; ``regions`` one resolved region per query. Progress is reported
    as ``on_progress(done, total, {"phase": "query", "strategy": label})``. Raises `Cancelled` when stopped.
    """
    from .embed import Cancelled, stop_requested

    ks = tuple(sorted(set(int(k) for k in ks)))
    tree = retriever.tree
    by_path: dict[str, list["Chunk"]] = {}
    for c in retriever.chunks:
        by_path.setdefault(c.path, []).append(c)
    per_query: list[QueryResult] = []
    for i, (case, region, vec) in enumerate(zip(queries, regions, qvecs)):
        if stop_requested(should_stop):
            raise Cancelled(f"evaluation stopped at query {i + 1} of {len(queries)} ({label})")
        doc = tree.get(region.path)
        if doc is None:
            raise QueriesError(f"{case.where}: expected file {region.path!r} is not in the docs tree")
        relevant = [c for c in by_path.get(region.path, []) if overlaps(doc.text, c.start, c.end, region)]
        # Search as deep as the metrics look first; only a query with no relevant chunk there needs the deep
        # search (for the rank of its miss). judge() gives the same verdict either way: everything it reads
        # beyond the top max(ks) is the first relevant rank. Local mode copies every returned payload, so a
        # deep search costs ~10x a shallow one.
        shallow = max(max(ks), miss_k)
        hits = retriever.search(vec, k=shallow, threshold=threshold)
        if depth > shallow and not any(h.path == region.path and overlaps(doc.text, h.start, h.end, region) for h in hits):
            hits = retriever.search(vec, k=depth, threshold=threshold)
        per_query.append(judge(case, region, doc, hits, relevant, ks, miss_k, threshold, tokenizer, depth))
        if on_progress is not None:
            on_progress(i + 1, len(queries), {"phase": "query", "strategy": label})
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
    )
