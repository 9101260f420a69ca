"""The label-free probe: every section heading asked as a question, its section's body the answer.

Every section heading (levels 2-4 by default) becomes a question: the heading's words, its number stripped
("3.2 Forward Kinematics" → "Forward Kinematics"). The answer is the section's *body*: from the first content
after the heading line that is not itself a heading line, to the section's end. A chunk that holds only the
heading line (or only headings) is not an answer, so a strategy that cuts a heading off its text shows up as a
miss. Headings with no body, headings that are only numbers, and heading texts that occur more than once in the
tree ("Summary" in every chapter: no label-free way to say which one is meant) are skipped and counted. The probe
ranks only; no score threshold applies (a bare heading scores lower than a user's question would).

`probe` reports `Progress` to ``on_progress`` (each step of one strategy, within the whole job as its ``outer``)
and stops between batches when its `CancelToken` is cancelled, returning what finished with ``cancelled=True``.
Headless: no rich/textual, torch only through the embedder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence, TypeVar

from chunkscope.chunking.params import ParamError
from chunkscope.evaluation.evaluate import EvalResult
from chunkscope.evaluation.queries import Expect, QueryCase
from chunkscope.evaluation.regions import NUMBER_PREFIX, Region
from chunkscope.evaluation.runs import query_vectors, run_config
from chunkscope.evaluation.verdicts import DEFAULT_DEPTH, verdict_words
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn

if TYPE_CHECKING:
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.parents import ParentSpec
    from chunkscope.retrieval.rerankers.base import Reranker
    from chunkscope.retrieval.store import Store

T = TypeVar("T")

DEFAULT_LEVELS = (2, 4)


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
        return Region(self.path, self.start, self.end, f"{self.path} › {self.heading} (body)",
                      heading=self.heading_start)

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
    return " ".join(NUMBER_PREFIX.sub("", heading, count=1).split())


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

    def words(self, i: int) -> str:
        """Section ``i``'s verdict as every view says it (`verdicts.verdict_words`): the reason, or "heading cut
        off", the rank and, when this outcome kept its evaluation, the score."""
        if self.eval is not None:
            return self.eval.per_query[i].words
        return verdict_words(self.reasons[i], self.ranks[i], cut_off=self.cut_off[i])

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


def probe(tree: "DocsTree", strategies: Sequence[tuple[str, Strategy]], *, k: int = 5,
          min_level: int = DEFAULT_LEVELS[0], max_level: int = DEFAULT_LEVELS[1], max_queries: int | None = None,
          unique: bool = True, probe_set: ProbeSet | None = None, embedder: "Embedder | None" = None,
          store: "Store | None" = None, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
          depth: int = DEFAULT_DEPTH, site_url: str | None = None, search_mode: str = "dense",
          reranker: "Reranker | None" = None, parent: "ParentSpec | None" = None) -> ProbeResult:
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
        reranker: the rerank stage after the search (`chunkscope.retrieval.rerank`); the caller closes it.
        parent: small-to-big (`chunkscope.retrieval.parents`): each strategy's parents are an outcome of their own,
            labelled ``… · parent=section``, right after its chunks'.
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
        qvecs = query_vectors(embedder, cases, cancel)
        for i, (label, strategy) in enumerate(strategies):
            whole = Progress(Phase.PROBE, i, whole.total, unit=whole.unit, started=whole.started, label=label)
            run = run_config(tree, label, strategy, embedder, store, cases, regions, qvecs, ks=ks, miss_k=k,
                             threshold=None, depth=depth, site_url=site_url, step=report, cancel=cancel,
                             search_mode=search_mode, reranker=reranker, parent=parent)
            for ev in run.result.levels():
                result.outcomes.append(ProbeOutcome(
                    label=ev.strategy_label, strategy=strategy.name, params=dict(strategy.params),
                    chunks=len(run.chunks), metrics=dict(ev.metrics), hits=[q.hit for q in ev.per_query],
                    ranks=[q.rank for q in ev.per_query], reasons=[q.reason for q in ev.per_query],
                    cut_off=[q.cut_off for q in ev.per_query], seconds=run.seconds, eval=ev,
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
