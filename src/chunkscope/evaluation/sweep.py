"""The sweep: every combination of a parameter grid indexed, scored and ranked.

Every combination of a parameter grid is indexed into its own collection (one local store) and scored on
labelled queries or on the probe set (`chunkscope.evaluation.runs` measures each one; each distinct chunk text
is embedded once). With a reranker, every point is scored twice, without it and with it (a ``rerank`` axis of
``off``/``on``, last, sharing the point's collection); a ``parent`` value scores the point's parents (small-to-big),
the chunk-level metrics kept beside them. Invalid combinations (an overlap not below the size) are recorded as skipped with the
strategy's reason. Collections created by the sweep are dropped at the end unless ``keep``.

`sweep` reports `Progress` to ``on_progress`` (each step of one configuration, within the whole job as its
``outer``) and stops between batches when its `CancelToken` is cancelled, returning the points so far with
``cancelled=True``. Headless: no rich/textual, torch only through the embedder.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import strategy_class
from chunkscope.chunking.strategy import Strategy
from chunkscope.config.presets import toml_value
from chunkscope.embedding.spec import EmbedderSpecError
from chunkscope.evaluation.evaluate import EvalResult
from chunkscope.evaluation.probe import ProbeSet, even_sample
from chunkscope.evaluation.queries import QueriesError, QueryCase
from chunkscope.evaluation.regions import resolve_region
from chunkscope.evaluation.runs import run_config
from chunkscope.evaluation.verdicts import DEFAULT_DEPTH
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn
from chunkscope.retrieval.parents import ParentError, parse_parent
from chunkscope.retrieval.payload import storage_estimate
from chunkscope.retrieval.search_modes import PIPELINE_KEYS, SearchModeError, check_search_mode

if TYPE_CHECKING:
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.rerankers.base import Reranker
    from chunkscope.retrieval.store import Store

#: The axis a reranker adds to the grid: each point without it, then with it.
RERANK_KEY = "rerank"
RERANK_VALUES = ("off", "on")

_METRIC = re.compile(r"^(?:(hit|recall|ndcg|passage_recall|passage_precision|passage_iou)@(\d+)|mrr|precision_omega)$")


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


def format_value(v: Any) -> str:
    """A grid value as a point's label shows it (lists and tables as JSON)."""
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else str(v)


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
    eval: EvalResult | None = None  # what the metrics are: the parents' result when the point has a parent
    chunk_metrics: dict[str, float] = field(default_factory=dict)  # with a parent: the chunks' own metrics

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={format_value(v)}" for k, v in self.params.items())

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
            if self.chunk_metrics:
                d["chunk_metrics"] = {k: round(v, 6) for k, v in self.chunk_metrics.items()}
            if self.eval is not None:
                d["reasons"] = self.eval.reasons
                # The detail names both ranks of a reranked-out miss, and the parent of an outside-parent one.
                d["misses"] = [{"query": q.query, "line": q.line, "reason": q.reason, "rank": q.rank,
                                **({"detail": q.detail} if q.detail else {})}
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
    rerank: str = ""  # the reranker (``st:PATH``, ``http:MODEL``) when the points were also scored with one

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
        """The preset's keys: the shared parameters and the point's values, less ``rerank`` (a preset names
        no reranker: `preset_toml` says in a comment whether the point had it on)."""
        point = point or self.best
        own = {k: v for k, v in (point.params if point else {}).items() if k != RERANK_KEY}
        return {**self.base_params, **own}

    def preset_toml(self, name: str = "sweep-best") -> str:
        """The winning configuration as a ``chunkscope.toml`` preset (empty when nothing ran)."""
        best = self.best
        if best is None:
            return ""
        lines = [f"# best by {self.metric} = {best.metrics.get(self.metric, 0.0):.3f} on {self.queries} "
                 f"{'probe ' if self.source == 'probe' else ''}queries ({best.label})",
                 f"[presets.{name}]", f"strategy = {toml_value(self.strategy)}"]
        if self.rerank:
            on = best.params.get(RERANK_KEY) == "on"
            # A preset names no reranker: the comment says which way this one was scored.
            lines.insert(1, f"# scored {'with' if on else 'without'} the reranker {self.rerank}: "
                         + ("keep the reranker ([rerank] in chunkscope.toml) when you use it" if on
                            else "the search alone did better"))
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
            "rerank": self.rerank or None,
        }


def sweep(tree: "DocsTree", strategy: str | type[Strategy], grid: Mapping[str, Sequence[Any]],
          queries: Sequence[QueryCase] | ProbeSet, *, base_params: Mapping[str, Any] | None = None, k: int = 5,
          metric: str | None = None, threshold: float | None = None, max_queries: int | None = None,
          embedder: "Embedder | None" = None, store: "Store | None" = None, keep: bool = False,
          on_progress: ProgressFn | None = None, cancel: CancelToken | None = None, depth: int = DEFAULT_DEPTH,
          site_url: str | None = None, search_mode: str = "dense",
          embedder_factory: Callable[[str], "Embedder"] | None = None, reranker: "Reranker | None" = None,
          parent: str = "none") -> SweepResult:
    """Score every combination of ``grid`` for one strategy; see the module docstring.

    Args:
        strategy: a registered strategy name, or a Strategy class.
        grid: parameter name → values (raw strings are coerced per point). Besides the strategy's parameters
            (``embed_prefix`` among them), two keys are dimensions of the pipeline: ``search`` (dense, keyword,
            hybrid: points that differ only there share one collection and its vectors) and ``embedder``
            (a model per value, made by ``embedder_factory``).
        search_mode: the search mode of points whose grid has no ``search``.
        embedder_factory: makes the embedder of an ``embedder`` grid value (required when the grid has one).
            A ``parent`` grid key (none, section, window:N, page) sets what the point's hits return; ``parent``
            is the value of points whose grid has none.
        reranker: scores every point a second time with it (a ``rerank`` axis, ``off`` then ``on``).
        queries: labelled queries (`queries.load_queries`) or a `ProbeSet` (then no threshold applies).
        base_params: parameters every point shares (a preset's, ``--param``); the grid's values win.
        metric: what ranks the points: ``hit@N``, ``mrr``, ``recall@N``, ``ndcg@N``, the passage-level
            ``passage_recall@N``, ``passage_precision@N``, ``passage_iou@N`` or ``precision_omega`` (characters;
            `chunkscope.evaluation.metrics`) (default ``hit@k``).
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
    pset: ProbeSet | None = None
    if isinstance(queries, ProbeSet):
        probed = queries
        if max_queries is not None and max_queries < len(queries.sections):
            sample = even_sample(queries.sections, max_queries)
            skipped = {**queries.skipped}
            skipped["sampled-out"] = skipped.get("sampled-out", 0) + len(queries.sections) - len(sample)
            probed = ProbeSet(sample, queries.headings, skipped, queries.levels)
        pset = probed
        cases, regions = probed.cases, probed.regions
        threshold = None
        source = "probe"
    else:
        cases = even_sample(queries, max_queries)
        regions = [resolve_region(tree, q) for q in cases]  # a bad expectation fails before any embedding
        source = "queries"
    if not cases:
        raise QueriesError("nothing to score: no queries" if source == "queries"
                           else "nothing to score: no heading with a body at the probed levels")
    grid = dict(grid)
    if reranker is not None:
        grid[RERANK_KEY] = list(RERANK_VALUES)  # last: a point with it follows the same point without
    points = [GridPoint(i, p) for i, p in enumerate(grid_points(grid))]
    result = SweepResult(cls.name, base, {n: list(v) for n, v in grid.items()}, metric, k, ks, source, len(cases),
                         points, probe=pset, rerank=reranker.spec.model if reranker is not None else "")
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
            if embedder_factory is None:  # a grid over embedders was refused above without one
                raise ValueError("a grid over embedders needs an embedder_factory")
            embedders[name] = embedder_factory(name)
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
            keys = (*PIPELINE_KEYS, RERANK_KEY)
            pipeline = {key: point.params[key] for key in keys if key in point.params}
            strategy_params = {n: v for n, v in point.params.items() if n not in keys}
            try:
                mode = check_search_mode(str(pipeline.get("search", search_mode)))
                point_embedder = embedder_for(pipeline.get("embedder"))
                lift = parse_parent(str(pipeline.get("parent", parent)))
                strat = cls(**{**base, **strategy_params})
            except (ParamError, SearchModeError, EmbedderSpecError, ParentError) as exc:
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
                run = run_config(tree, point.label, strat, point_embedder, store, cases, regions, qvecs, ks=ks,
                                 miss_k=k, threshold=threshold, depth=depth, site_url=site_url, step=report,
                                 cancel=cancel, search_mode=mode,
                                 reranker=reranker if pipeline.get(RERANK_KEY) == "on" else None,
                                 parent=lift if lift.active else None)
            except Cancelled:
                raise
            except (ParamError, ValueError, LookupError) as exc:  # the strategy failed on a document
                point.status, point.reason = "failed", f"{type(exc).__name__}: {exc}"
                if on_progress is not None:
                    on_progress(whole.advanced(point.index + 1))
                continue
            ev = run.result
            if ev.parents is not None:  # the parents are what the bot sends on: they rank the point
                point.chunk_metrics = dict(ev.metrics)
                ev = ev.parents
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
