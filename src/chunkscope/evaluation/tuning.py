"""Tuning without guesswork: a label-free retrieval probe, and a sweep over a strategy's parameters.

**Probe.** Every section heading (levels 2-4 by default) becomes a question: the heading's words, its number
stripped ("3.2 Forward Kinematics" → "Forward Kinematics"). The answer is the section's *body*: from the first
content after the heading line that is not itself a heading line, to the section's end. A chunk that holds only
the heading line (or only headings) is not an answer, so a strategy that cuts a heading off its text shows up as
a miss. Headings with no body, headings that are only numbers, and heading texts that occur more than once in
the tree ("Summary" in every chapter: no label-free way to say which one is meant) are skipped and counted.
The probe ranks only; no score threshold applies (a bare heading scores lower than a user's question would).

**Sweep.** Every combination of a parameter grid is indexed into its own collection (one local store) and
scored on labelled queries or on the probe set. Each distinct chunk text is embedded once: identical texts of
other grid points come from the embedding cache, and each point's new texts are embedded in one length-sorted
pass before its collection is written (uniform batches waste no padding). Invalid combinations (an overlap not
below the size) are recorded as skipped with the strategy's reason. Collections created by the sweep are
dropped at the end unless ``keep``.

Both report `Progress` to ``on_progress``: each step (embedding, indexing, asking) of one configuration, with
the whole job (configurations done of all) as its ``outer``; and both stop between batches when their
`CancelToken` is cancelled, returning the results so far with ``cancelled=True``. Headless: no rich/textual, torch only through the embedder.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

from chunkscope.chunking.chunk import ParamError, Strategy, strategy_class
from chunkscope.evaluation.evaluate import (
    _NUMBER_PREFIX,
    DEFAULT_DEPTH,
    EvalResult,
    Expect,
    QueriesError,
    QueryCase,
    Region,
    overlaps,
    resolve_region,
    score_retriever,
)
from chunkscope.retrieval.payload import storage_estimate
from chunkscope.embedding.spec import EmbedderSpecError
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn
from chunkscope.retrieval.search_modes import PIPELINE_KEYS, SearchModeError, check_search_mode

if TYPE_CHECKING:
    from chunkscope.chunking.chunk import Chunk
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.store import Store

T = TypeVar("T")

DEFAULT_LEVELS = (2, 4)
_METRIC = re.compile(r"^(?:(hit|recall|ndcg|passage_recall|passage_precision|passage_iou)@(\d+)|mrr|precision_omega)$")


# --- the probe set --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeSection:
    """One probe question: a heading, and the body of its section that must be retrieved."""

    path: str
    line: int  # 1-based line of the heading
    level: int
    heading: str  # as written (number included)
    query: str  # the heading's words, number stripped
    anchor: str
    start: int  # the body region [start, end) of the document
    end: int
    heading_start: int  # where the heading line begins

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def region(self) -> Region:
        return Region(self.path, self.start, self.end, f"{self.path} › {self.heading} (body)")

    def case(self) -> QueryCase:
        return QueryCase(self.query, Expect(self.path, heading=self.heading), self.path, self.line,
                         f"{self.path}#{self.anchor}")

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "level": self.level, "heading": self.heading,
                "query": self.query, "anchor": self.anchor, "start": self.start, "end": self.end}


@dataclass
class ProbeSet:
    """The probe questions of a tree, and how many headings were left out and why."""

    sections: list[ProbeSection]
    headings: int  # headings at the probed levels, before skipping and sampling
    skipped: dict[str, int]  # reason → count: "empty", "number-only", "duplicate", "sampled-out"
    levels: tuple[int, int] = DEFAULT_LEVELS

    @property
    def cases(self) -> list[QueryCase]:
        return [s.case() for s in self.sections]

    @property
    def regions(self) -> list[Region]:
        return [s.region() for s in self.sections]

    def __len__(self) -> int:
        return len(self.sections)

    def to_dict(self) -> dict[str, Any]:
        return {"levels": list(self.levels), "headings": self.headings, "queries": len(self.sections),
                "skipped": dict(self.skipped)}


def probe_query(heading: str) -> str:
    """The question a heading asks: its words without the number ("3.2 Forward Kinematics" → "Forward Kinematics")."""
    return " ".join(_NUMBER_PREFIX.sub("", heading, count=1).split())


def even_sample(items: Sequence[T], n: int | None) -> list[T]:
    """``n`` items spread evenly over ``items`` (the middle of each of n equal stretches); all when n is None or
    at least len(items). Deterministic: the same input always gives the same sample."""
    items = list(items)
    if n is None or n >= len(items):
        return items
    if n <= 0:
        return []
    size = len(items)
    return [items[(2 * i + 1) * size // (2 * n)] for i in range(n)]


def _body_start(text: str, pos: int, end: int, heading_spans: Sequence[tuple[int, int]]) -> int:
    """The first character in [pos, end) that is neither white space nor inside a heading line; ``end`` if none.

    A section whose own text is empty begins, for the probe, at its first subsection's text: a chunk holding
    only "## A" and "### B" answers neither.
    """
    spans = iter(heading_spans)
    nxt = next(spans, None)
    while pos < end:
        while pos < end and text[pos].isspace():
            pos += 1
        while nxt is not None and nxt[1] <= pos:
            nxt = next(spans, None)
        if nxt is not None and nxt[0] <= pos < nxt[1]:
            pos = nxt[1]
            continue
        return pos
    return end


def probe_sections(tree: "DocsTree", *, min_level: int = DEFAULT_LEVELS[0], max_level: int = DEFAULT_LEVELS[1],
                   max_queries: int | None = None, unique: bool = True) -> ProbeSet:
    """The probe questions of ``tree``: one per heading at ``min_level..max_level`` with a body.

    Args:
        max_queries: keep this many, spread evenly over the tree in reading order (deterministic).
        unique: skip headings whose question occurs more than once in the tree (case-insensitive).
    """
    if not 1 <= min_level <= max_level <= 6:
        raise ParamError(f"heading levels must satisfy 1 <= min <= max <= 6, got {min_level}-{max_level}")
    skipped = {"empty": 0, "number-only": 0, "duplicate": 0, "sampled-out": 0}
    found: list[ProbeSection] = []
    headings = 0
    for doc in tree.documents:
        outline = doc.outline
        text = doc.text
        spans = [(h.start, h.end) for h in outline.headings]
        for h in outline.headings:
            if not min_level <= h.level <= max_level:
                continue
            headings += 1
            query = probe_query(h.text)
            if not any(ch.isalpha() for ch in query):
                skipped["number-only"] += 1
                continue
            end = outline.section_end(h)
            inner = [s for s in spans if h.end <= s[0] < end]
            start = _body_start(text, h.end, end, inner)
            if start >= end:
                skipped["empty"] += 1
                continue
            found.append(ProbeSection(doc.path, h.line, h.level, h.text, query, h.anchor, start, end, h.start))
    if unique:
        counts: dict[str, int] = {}
        for s in found:
            key = s.query.casefold()
            counts[key] = counts.get(key, 0) + 1
        kept = [s for s in found if counts[s.query.casefold()] == 1]
        skipped["duplicate"] = len(found) - len(kept)
        found = kept
    sample = even_sample(found, max_queries)
    skipped["sampled-out"] = len(found) - len(sample)
    return ProbeSet(sample, headings, skipped, (min_level, max_level))


# --- running one configuration --------------------------------------------------------------------------------


@dataclass
class _Run:
    result: EvalResult
    chunks: list["Chunk"]
    texts: int  # distinct embedded texts of this configuration
    embedded: int  # of those, run through the model now
    cached: int  # of those, found in the embedding cache
    collection: str
    seconds: float


def _run_config(tree: "DocsTree", label: str, strategy: Strategy, embedder: "Embedder", store: "Store",
                cases: Sequence[QueryCase], regions: Sequence[Region], qvecs: Any, *, ks: Sequence[int], miss_k: int,
                threshold: float | None, depth: int, site_url: str | None,
                step: ProgressFn, cancel: CancelToken | None, search_mode: str = "dense") -> _Run:
    """Chunk, embed what is new (length-sorted), write the collection, and score the queries. Raises Cancelled.

    ``step`` gets this configuration's own reports; the caller places them within the whole job."""
    from chunkscope.embedding.embedder import text_sha
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.tokens import prepare

    t0 = time.perf_counter()
    step(Progress(Phase.CHUNK, 0, 1, unit="configuration", label=label))
    try:
        prepare(tree.documents, strategy.length_tokenizer)  # whole-document encodings on all cores, kept per doc
    except Exception:  # noqa: BLE001 - only a speed-up; chunking reports a bad tokenizer itself
        pass
    retriever = Retriever(tree, strategy, embedder, store, site_url, search_mode=search_mode)
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
    embedded = cached = None
    if getattr(embedder, "cache", None) is not None:  # without a cache the sync below embeds (once per point)
        stats = embedder.embed([c.embed_text for c in ordered], on_progress=step, cancel=cancel,
                               token_counts=[c.embed_tokens for c in ordered], label=label).stats
        embedded, cached = stats.misses, stats.hits
    report = retriever.ensure_indexed(step, cancel, label=label)
    if report.cancelled:
        raise Cancelled(f"stopped while indexing {label}")
    if embedded is None:
        embedded, cached = report.embedded, report.cached
    result = score_retriever(retriever, label, cases, regions, qvecs, ks=ks, threshold=threshold, miss_k=miss_k,
                             depth=depth, tokenizer=_tokenizer(embedder), cancel=cancel, report=report,
                             on_progress=step)
    return _Run(result, chunks, len(distinct), embedded, cached, retriever.collection, time.perf_counter() - t0)


def _tokenizer(embedder: "Embedder") -> Any:
    """The model's word-piece tokenizer for truncation verdicts; None when the model folder has none."""
    try:
        return embedder.tokenizer
    except Exception:  # noqa: BLE001 - a model without tokenizer.json: the verdict is simply not given
        return None


def _query_vectors(embedder: "Embedder", cases: Sequence[QueryCase], cancel: CancelToken | None) -> Any:
    return embedder.embed([c.query for c in cases], cancel=cancel, label="questions").vectors


# --- probe ----------------------------------------------------------------------------------------------------


@dataclass
class ProbeOutcome:
    """One strategy on the probe set; lists are per section, in the order of `ProbeResult.sections`."""

    label: str
    strategy: str
    params: dict[str, Any]
    chunks: int
    metrics: dict[str, float]
    hits: list[bool]  # answered within k
    ranks: list[int | None]  # evaluate's rank: a hit's first body chunk, else the chunk judged for the miss
    reasons: list[str | None]  # evaluate's miss reason, None for a hit
    cut_off: list[bool]  # every chunk holding the heading line holds none of the body
    seconds: float = 0.0
    eval: EvalResult | None = None

    @property
    def misses(self) -> int:
        return sum(1 for h in self.hits if not h)

    def to_dict(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for r in self.reasons:
            if r:
                reasons[r] = reasons.get(r, 0) + 1
        return {"label": self.label, "strategy": self.strategy, "params": self.params, "chunks": self.chunks,
                "metrics": {k: round(v, 6) for k, v in self.metrics.items()}, "misses": self.misses,
                "reasons": reasons, "cut_off": sum(self.cut_off), "seconds": round(self.seconds, 3)}


@dataclass
class ProbeResult:
    """The probe of a tree with one or more strategies."""

    k: int
    ks: tuple[int, ...]
    probe_set: ProbeSet
    outcomes: list[ProbeOutcome]
    seconds: float = 0.0
    cancelled: bool = False

    @property
    def sections(self) -> list[ProbeSection]:
        return self.probe_set.sections

    def missed_by_all(self) -> list[ProbeSection]:
        """Sections no strategy answered within k (empty when no strategy ran)."""
        if not self.outcomes:
            return []
        return [s for i, s in enumerate(self.sections) if not any(o.hits[i] for o in self.outcomes)]

    def missed_only_by(self, label: str) -> list[ProbeSection]:
        """Sections this strategy missed and every other strategy answered (its misses alone; empty when it
        ran alone). A section two strategies missed is in neither's list."""
        mine = next(o for o in self.outcomes if o.label == label)
        others = [o for o in self.outcomes if o is not mine]
        return [s for i, s in enumerate(self.sections)
                if others and not mine.hits[i] and all(o.hits[i] for o in others)]

    def to_dict(self) -> dict[str, Any]:
        per_section = []
        for i, s in enumerate(self.sections):
            d = s.to_dict()
            d["results"] = {
                o.label: {"hit": o.hits[i], "rank": o.ranks[i], "reason": o.reasons[i], "cut_off": o.cut_off[i],
                          "score": _round(o.eval.per_query[i].score) if o.eval else None,
                          **(o.eval.per_query[i].miss_dict() if o.eval else {})}
                for o in self.outcomes
            }
            per_section.append(d)
        return {
            "k": self.k,
            "ks": list(self.ks),
            **self.probe_set.to_dict(),
            "strategies": [o.to_dict() for o in self.outcomes],
            "missed_by_all": [{"path": s.path, "line": s.line, "heading": s.heading} for s in self.missed_by_all()],
            "sections": per_section,
            "seconds": round(self.seconds, 3),
            "cancelled": self.cancelled,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _cut_off(sections: Sequence[ProbeSection], chunks: Sequence["Chunk"], tree: "DocsTree") -> list[bool]:
    """Per section: the chunks that hold its heading line hold none of its body (the heading is orphaned)."""
    by_path: dict[str, list["Chunk"]] = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    out = []
    for s in sections:
        doc = tree.get(s.path)
        assert doc is not None
        holders = [c for c in by_path.get(s.path, []) if c.start <= s.heading_start < c.end]
        region = s.region()
        out.append(bool(holders) and not any(overlaps(doc.text, c.start, c.end, region) for c in holders))
    return out


def probe(tree: "DocsTree", strategies: Sequence[tuple[str, Strategy]], *, k: int = 5,
          min_level: int = DEFAULT_LEVELS[0], max_level: int = DEFAULT_LEVELS[1], max_queries: int | None = None,
          unique: bool = True, probe_set: ProbeSet | None = None, embedder: "Embedder | None" = None,
          store: "Store | None" = None, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
          depth: int = DEFAULT_DEPTH, site_url: str | None = None, search_mode: str = "dense") -> ProbeResult:
    """Ask every section heading of ``tree`` and score each strategy on finding that section's body.

    Args:
        strategies: (label, configured strategy) pairs.
        k: a question is answered when a body chunk ranks within k; metrics are hit@1, hit@k, MRR (cut at k),
            recall@ and nDCG@ at 1 and k.
        probe_set: questions made beforehand (`probe_sections`); else made here from the level/sample options.
        store: the vector store (each strategy keeps its collection there, as `index` would); default: the tree's
            local store, opened and closed here.
        on_progress: each step's `Progress`, within a `Phase.PROBE` report of strategies done of all.
        cancel: stops between batches; the result then holds the strategies that finished (``cancelled``).
    """
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.store import Store

    if k < 1:
        raise ParamError(f"-k must be positive, got {k}")
    t0 = time.perf_counter()
    pset = probe_set if probe_set is not None else probe_sections(
        tree, min_level=min_level, max_level=max_level, max_queries=max_queries, unique=unique)
    ks = tuple(sorted({1, k}))
    result = ProbeResult(k, ks, pset, [])
    if not pset.sections or not strategies:
        result.seconds = time.perf_counter() - t0
        return result
    embedder = embedder or Embedder()
    own = store is None
    store = store or Store(tree.root)
    cases, regions = pset.cases, pset.regions
    whole = Progress(Phase.PROBE, 0, len(strategies), unit="strategies")

    def report(p: Progress) -> None:
        if on_progress is not None:
            on_progress(p.within(whole))

    try:
        qvecs = _query_vectors(embedder, cases, cancel)
        for i, (label, strategy) in enumerate(strategies):
            whole = Progress(Phase.PROBE, i, whole.total, unit=whole.unit, started=whole.started, label=label)
            run = _run_config(tree, label, strategy, embedder, store, cases, regions, qvecs, ks=ks, miss_k=k,
                              threshold=None, depth=depth, site_url=site_url, step=report, cancel=cancel,
                              search_mode=search_mode)
            ev = run.result
            result.outcomes.append(ProbeOutcome(
                label=label, strategy=strategy.name, params=dict(strategy.params), chunks=len(run.chunks),
                metrics=dict(ev.metrics), hits=[q.hit for q in ev.per_query], ranks=[q.rank for q in ev.per_query],
                reasons=[q.reason for q in ev.per_query], cut_off=_cut_off(pset.sections, run.chunks, tree),
                seconds=run.seconds, eval=ev,
            ))
            if on_progress is not None:
                on_progress(whole.advanced(i + 1))
    except Cancelled:
        result.cancelled = True
    finally:
        if own:
            store.close()
    result.seconds = time.perf_counter() - t0
    return result


# --- sweep ----------------------------------------------------------------------------------------------------


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination, the first parameter varying slowest."""
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


class UnknownMetric(ParamError):
    """A ranking metric the sweep does not know; ``expected`` says which forms it takes."""

    expected = ("expected mrr, hit@N, recall@N, ndcg@N, passage_recall@N, passage_precision@N, passage_iou@N "
                "or precision_omega (N >= 1)")

    def __init__(self, metric: str) -> None:
        self.metric = metric
        super().__init__(f"metric {metric!r}: {self.expected}")


def parse_metric(metric: str | None, k: int) -> tuple[str, tuple[int, ...]]:
    """The ranking metric (default ``hit@k``) and the cut-offs to compute: 1, k and the metric's own."""
    metric = (metric or f"hit@{k}").strip().lower()
    m = _METRIC.match(metric)
    if not m or (m.group(2) is not None and int(m.group(2)) < 1):
        raise UnknownMetric(metric)
    ks = {1, k}
    if m.group(2):
        ks.add(int(m.group(2)))
    return metric, tuple(sorted(ks))


def _fmt_value(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else str(v)


def toml_value(v: Any) -> str:
    """A TOML literal for a parameter value (strings, numbers, booleans, lists and tables of them)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))


@dataclass
class GridPoint:
    """One combination of the grid and what it scored."""

    index: int
    params: dict[str, Any]  # this point's grid values
    status: str = "pending"  # "ok", "skipped" (invalid combination), "failed" (chunking failed), "pending"
    reason: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    chunks: int = 0
    texts: int = 0  # distinct chunk texts
    embedded: int = 0  # of those, run through the model in this sweep
    cached: int = 0  # of those, taken from the embedding cache
    vector_bytes: int = 0
    payload_bytes: int = 0
    seconds: float = 0.0
    collection: str = ""
    eval: EvalResult | None = None

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={_fmt_value(v)}" for k, v in self.params.items())

    @property
    def storage_bytes(self) -> int:
        return self.vector_bytes + self.payload_bytes

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "params": self.params, "label": self.label, "status": self.status}
        if self.reason:
            d["reason"] = self.reason
        if self.status == "ok":
            d.update({
                "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
                "chunks": self.chunks, "texts": self.texts, "embedded": self.embedded, "cached": self.cached,
                "storage": {"vectors": self.chunks, "vector_bytes": self.vector_bytes,
                            "payload_bytes": self.payload_bytes, "total_bytes": self.storage_bytes},
                "seconds": round(self.seconds, 3),
                "collection": self.collection,
            })
            if self.eval is not None:
                d["reasons"] = self.eval.reasons
                d["misses"] = [{"query": q.query, "line": q.line, "reason": q.reason, "rank": q.rank}
                               for q in self.eval.per_query if q.reason]
        return d


@dataclass
class SweepResult:
    """A parameter sweep: every grid point in grid order, and what ran."""

    strategy: str
    base_params: dict[str, Any]
    grid: dict[str, list[Any]]
    metric: str
    k: int
    ks: tuple[int, ...]
    source: str  # "queries" or "probe"
    queries: int
    points: list[GridPoint]
    dim: int = 0
    distinct_texts: int = 0  # distinct chunk texts over every point that ran
    embedded: int = 0  # texts run through the model (cache misses)
    cached: int = 0  # texts found in the embedding cache (summed over points)
    query_embedded: int = 0  # question texts run through the model
    encode_seconds: float = 0.0  # time inside the model during the sweep
    seconds: float = 0.0
    cancelled: bool = False
    dropped: list[str] = field(default_factory=list)  # collections removed at the end
    probe: ProbeSet | None = None

    def ranked(self) -> list[GridPoint]:
        """Points that ran, best first: the metric, then MRR, then the smaller store, then grid order."""
        done = [p for p in self.points if p.status == "ok"]
        return sorted(done, key=lambda p: (-p.metrics.get(self.metric, 0.0), -p.metrics.get("mrr", 0.0),
                                           p.storage_bytes, p.index))

    @property
    def best(self) -> GridPoint | None:
        r = self.ranked()
        return r[0] if r else None

    @property
    def skipped(self) -> list[GridPoint]:
        return [p for p in self.points if p.status in ("skipped", "failed")]

    def preset_params(self, point: GridPoint | None = None) -> dict[str, Any]:
        point = point or self.best
        return {**self.base_params, **(point.params if point else {})}

    def preset_toml(self, name: str = "sweep-best") -> str:
        """The winning configuration as a ``chunkscope.toml`` preset (empty when nothing ran)."""
        best = self.best
        if best is None:
            return ""
        lines = [f"# best by {self.metric} = {best.metrics.get(self.metric, 0.0):.3f} on {self.queries} "
                 f"{'probe ' if self.source == 'probe' else ''}queries ({best.label})",
                 f"[presets.{name}]", f"strategy = {toml_value(self.strategy)}"]
        lines += [f"{k} = {toml_value(v)}" for k, v in self.preset_params(best).items()]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {
            "strategy": self.strategy,
            "base_params": self.base_params,
            "grid": self.grid,
            "metric": self.metric,
            "k": self.k,
            "ks": list(self.ks),
            "source": self.source,
            "queries": self.queries,
            "probe": self.probe.to_dict() if self.probe is not None else None,
            "points": [p.to_dict() for p in self.points],
            "ranking": [p.index for p in self.ranked()],
            "best": best.index if best is not None else None,
            "preset": self.preset_toml(),
            "cache": {"distinct_texts": self.distinct_texts, "embedded": self.embedded, "cached": self.cached,
                      "query_embedded": self.query_embedded},
            "dim": self.dim,
            "encode_seconds": round(self.encode_seconds, 3),
            "seconds": round(self.seconds, 3),
            "cancelled": self.cancelled,
            "dropped": self.dropped,
        }


def sweep(tree: "DocsTree", strategy: str | type[Strategy], grid: Mapping[str, Sequence[Any]],
          queries: Sequence[QueryCase] | ProbeSet, *, base_params: Mapping[str, Any] | None = None, k: int = 5,
          metric: str | None = None, threshold: float | None = None, max_queries: int | None = None,
          embedder: "Embedder | None" = None, store: "Store | None" = None, keep: bool = False,
          on_progress: ProgressFn | None = None, cancel: CancelToken | None = None, depth: int = DEFAULT_DEPTH,
          site_url: str | None = None, search_mode: str = "dense",
          embedder_factory: Callable[[str], "Embedder"] | None = None) -> SweepResult:
    """Score every combination of ``grid`` for one strategy; see the module docstring.

    Args:
        strategy: a registered strategy name, or a Strategy class.
        grid: parameter name → values (raw strings are coerced per point). Besides the strategy's parameters
            (``embed_prefix`` among them), two keys are dimensions of the pipeline: ``search`` (dense, keyword,
            hybrid: points that differ only there share one collection and its vectors) and ``embedder``
            (a model per value, made by ``embedder_factory``).
        search_mode: the search mode of points whose grid has no ``search``.
        embedder_factory: makes the embedder of an ``embedder`` grid value (required when the grid has one).
        queries: labelled queries (`evaluate.load_queries`) or a `ProbeSet` (then no threshold applies).
        base_params: parameters every point shares (a preset's, ``--param``); the grid's values win.
        metric: what ranks the points: ``hit@N``, ``mrr``, ``recall@N``, ``ndcg@N``, the passage-level
            ``passage_recall@N``, ``passage_precision@N``, ``passage_iou@N`` or ``precision_omega`` (characters;
            `chunkscope.evaluation.evaluate`) (default ``hit@k``).
        max_queries: score on this many queries, spread evenly (deterministic).
        store: the vector store; default: the tree's local store, opened and closed here. Every point gets its
            own collection in it; those created here are dropped at the end unless ``keep``.
        on_progress: each step's `Progress`, within a `Phase.SWEEP` report of grid points finished (skipped
            ones included) of all, labelled with the point's parameters.
        cancel: stops between batches; the result then holds the points that finished (``cancelled``).
    """
    from chunkscope.embedding.embedder import Embedder, text_sha
    from chunkscope.retrieval.store import Store

    t0 = time.perf_counter()
    cls = strategy_class(strategy) if isinstance(strategy, str) else strategy
    metric, ks = parse_metric(metric, k)
    base = dict(base_params or {})
    if isinstance(queries, ProbeSet):
        pset: ProbeSet | None = queries
        if max_queries is not None and max_queries < len(queries.sections):
            sample = even_sample(queries.sections, max_queries)
            skipped = {**queries.skipped}
            skipped["sampled-out"] = skipped.get("sampled-out", 0) + len(queries.sections) - len(sample)
            pset = ProbeSet(sample, queries.headings, skipped, queries.levels)
        cases, regions = pset.cases, pset.regions
        threshold = None
        source = "probe"
    else:
        pset = None
        cases = even_sample(queries, max_queries)
        regions = [resolve_region(tree, q) for q in cases]  # a bad expectation fails before any embedding
        source = "queries"
    if not cases:
        raise QueriesError("nothing to score: no queries" if source == "queries"
                           else "nothing to score: no heading with a body at the probed levels")
    points = [GridPoint(i, p) for i, p in enumerate(grid_points(grid))]
    result = SweepResult(cls.name, base, {n: list(v) for n, v in grid.items()}, metric, k, ks, source, len(cases),
                         points, probe=pset)
    embedder = embedder or Embedder()
    result.dim = embedder.dim
    if "embedder" in grid and embedder_factory is None:
        raise ValueError("a grid over embedders needs an embedder_factory")
    embedders: dict[str, "Embedder"] = {}
    query_vectors: dict[str, Any] = {}

    def embedder_for(name: str | None) -> "Embedder":
        if name is None:
            return embedder
        if name not in embedders:
            embedders[name] = embedder_factory(name)  # type: ignore[misc] - checked above
        return embedders[name]

    own = store is None
    store = store or Store(tree.root)
    total = len(points)
    seen: set[str] = set()
    created: list[str] = []
    encode0 = getattr(embedder, "encode_seconds", 0.0)
    whole = Progress(Phase.SWEEP, 0, total, unit="configurations")

    def report(p: Progress) -> None:
        if on_progress is not None:
            on_progress(p.within(whole))

    try:
        existing = set(store.collections())
        for point in points:
            whole = Progress(Phase.SWEEP, point.index, total, unit="configurations", started=whole.started,
                             label=point.label)
            pipeline = {key: point.params[key] for key in PIPELINE_KEYS if key in point.params}
            strategy_params = {n: v for n, v in point.params.items() if n not in PIPELINE_KEYS}
            try:
                mode = check_search_mode(str(pipeline.get("search", search_mode)))
                point_embedder = embedder_for(pipeline.get("embedder"))
                strat = cls(**{**base, **strategy_params})
            except (ParamError, SearchModeError, EmbedderSpecError) as exc:
                point.status, point.reason = "skipped", str(exc)
                if on_progress is not None:
                    on_progress(whole.advanced(point.index + 1))
                continue
            point.params = {**{n: strat.params[n] for n in strategy_params}, **pipeline}  # coerced values
            key = point_embedder.model_id
            if key not in query_vectors:  # each embedder embeds the questions once
                asked = point_embedder.embed([c.query for c in cases], cancel=cancel, label="questions")
                query_vectors[key] = asked.vectors
                result.query_embedded += asked.stats.misses
            qvecs = query_vectors[key]
            # The collection is named before the run, so one that fails half-way is still dropped at the end.
            coll = store.use(strat, point_embedder, owner=tree.root)
            if coll not in existing and coll not in created:
                created.append(coll)
            try:
                run = _run_config(tree, point.label, strat, point_embedder, store, cases, regions, qvecs, ks=ks,
                                  miss_k=k, threshold=threshold, depth=depth, site_url=site_url, step=report,
                                  cancel=cancel, search_mode=mode)
            except Cancelled:
                raise
            except (ParamError, ValueError, LookupError) as exc:  # the strategy failed on a document
                point.status, point.reason = "failed", f"{type(exc).__name__}: {exc}"
                if on_progress is not None:
                    on_progress(whole.advanced(point.index + 1))
                continue
            ev = run.result
            point.status = "ok"
            point.metrics = dict(ev.metrics)
            point.chunks = len(run.chunks)
            point.texts, point.embedded, point.cached = run.texts, run.embedded, run.cached
            est = storage_estimate(run.chunks, point_embedder.dim)
            point.vector_bytes, point.payload_bytes = est.vector_bytes, est.payload_bytes
            point.seconds = run.seconds
            point.collection = run.collection
            point.eval = ev
            result.embedded += run.embedded
            result.cached += run.cached
            seen.update(text_sha(c.embed_text) for c in run.chunks)
            if on_progress is not None:
                on_progress(whole.advanced(point.index + 1))
    except Cancelled:
        result.cancelled = True
    finally:
        try:
            if not keep:
                for name in created:
                    try:
                        store.drop(name)
                        result.dropped.append(name)
                    except Exception:  # noqa: BLE001 - a collection that is already gone
                        pass
        finally:
            for e in embedders.values():
                e.close()
            if own:
                store.close()
    result.distinct_texts = len(seen)
    result.encode_seconds = getattr(embedder, "encode_seconds", 0.0) - encode0 + sum(
        e.encode_seconds for e in embedders.values())
    result.seconds = time.perf_counter() - t0
    return result
