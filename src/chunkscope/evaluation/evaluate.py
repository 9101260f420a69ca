"""Retrieval evaluation: which strategy finds the expected passage for a set of questions, and why not.

`evaluate` indexes the tree with each strategy and asks every question; `score_retriever` asks them of one
already-indexed collection (the probe, the sweep and tune call it too), and `ask_and_judge` asks one question
(the app's expectation calls it). Each answer is judged by `chunkscope.evaluation.verdicts.judge`. The questions
file is read by `chunkscope.evaluation.queries`, answer regions come from `chunkscope.evaluation.regions` and the
metrics from `chunkscope.evaluation.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from chunkscope.evaluation.metrics import DEFAULT_KS, PASSAGE_UNITS, mean_metrics, passage_measure
from chunkscope.evaluation.parents import CARRIED, PARENT_REASONS, judge_parents
from chunkscope.evaluation.queries import QueriesError, QueryCase
from chunkscope.evaluation.passages import Measure, char_measure
from chunkscope.evaluation.regions import Region, overlaps, resolve_region
from chunkscope.evaluation.verdicts import (
    DEFAULT_DEPTH,
    REASONS,
    ChunkIndex,
    QueryResult,
    heading_cut_off,
    holders_of,
    judge,
)
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import DocsTree, Document
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.parents import ParentResolver, ParentSpec
    from chunkscope.retrieval.rerankers.base import Reranker
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Hit, IndexReport, Store


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
    #: For a parent-level result: the parent its metrics are of (``section``, ``window:200``); None for chunks.
    parent: str | None = None
    #: For a chunk-level result scored with a parent: the parent-level result of the same search
    #: (`chunkscope.evaluation.parents`), one `QueryResult` per query in the same order.
    parents: "EvalResult | None" = None

    @property
    def reasons(self) -> dict[str, int]:
        counts = {r: 0 for r in (*REASONS, *(PARENT_REASONS if self.parent else ()))}
        for q in self.per_query:
            if q.reason:
                counts[q.reason] = counts.get(q.reason, 0) + 1
        return counts

    @property
    def carried(self) -> int:
        """Parent level: the questions the chunks missed within k and their parents answered."""
        if self.parent is None:
            return 0
        return sum(1 for q in self.per_query if q.hit and q.detail.startswith(CARRIED))

    def levels(self) -> list["EvalResult"]:
        """This result, then its parent-level one when it has one (the columns ``eval`` shows side by side)."""
        return [self] if self.parents is None else [self, self.parents]

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
            **({"level": "parent", "parent": self.parent, "carried": self.carried} if self.parent else {}),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "reasons": self.reasons,
            "index": self.index.to_dict() if self.index is not None else None,
            "per_query": [q.to_dict() for q in self.per_query],
        }


def evaluate(tree: "DocsTree", strategies: Sequence[tuple[str, "Strategy"]], queries: Sequence[QueryCase],
             ks: Sequence[int] = DEFAULT_KS, threshold: float | None = None, embedder: "Embedder | None" = None,
             store_factory: Callable[[str, "Strategy"], "Store"] | None = None, on_progress: ProgressFn | None = None,
             *, miss_k: int = 5, depth: int = DEFAULT_DEPTH, cancel: CancelToken | None = None,
             site_url: str | None = None, regions: Sequence[Region] | None = None,
             passage_unit: str = "chars", search_mode: str = "dense",
             reranker: "Reranker | None" = None, parent: "ParentSpec | None" = None) -> list[EvalResult]:
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
            probe (`chunkscope.evaluation.probe`) makes its own. Default: `resolve_region` of each query's expectation.
        passage_unit: what passage-level metrics count, one of `PASSAGE_UNITS`.
        reranker: the rerank stage after the search (`chunkscope.retrieval.rerank`); the caller closes it.
        parent: small-to-big (`chunkscope.retrieval.parents`): each result then carries the parent-level result of
            the same search in ``parents``.
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
            retriever = Retriever(tree, strategy, embedder, store, site_url, search_mode=search_mode,
                                  reranker=reranker)
            report = retriever.ensure_indexed(on_progress, cancel, label=label)
            if report.cancelled:
                raise Cancelled(f"evaluation stopped while indexing {label}")
            results.append(score_retriever(retriever, label, queries, regions, qvecs, ks=ks, threshold=threshold,
                                           miss_k=miss_k, depth=depth, tokenizer=tokenizer, on_progress=on_progress,
                                           cancel=cancel, report=report, passage_unit=passage_unit,
                                           parent=parent))
    finally:
        if own_store is not None:
            own_store.close()
    return results


def score_retriever(retriever: "Retriever", label: str, queries: Sequence[QueryCase], regions: Sequence[Region],
                    qvecs: Any, *, ks: Sequence[int] = DEFAULT_KS, threshold: float | None = None, miss_k: int = 5,
                    depth: int = DEFAULT_DEPTH, tokenizer: Any = None, on_progress: ProgressFn | None = None,
                    cancel: CancelToken | None = None, report: "IndexReport | None" = None,
                    passage_unit: str = "chars", parent: "ParentSpec | None" = None) -> EvalResult:
    """Score queries against a retriever whose collection is already indexed (`evaluate` does one per strategy).

    ``qvecs`` holds one query vector per query; ``regions`` one resolved region per query. Progress is reported
    as `Phase.EVALUATE` reports labelled ``label``. Raises `Cancelled` when ``cancel`` is cancelled.
    ``passage_unit`` is what passage-level metrics count (`PASSAGE_UNITS`; tokens are ``tokenizer``'s, else the
    retriever's embedder's). With an active ``parent``, the result's ``parents`` is the parent-level result of the
    same searches (`chunkscope.evaluation.parents.judge_parents`).
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
    resolver = parent_resolver(retriever, parent)
    per_query: list[QueryResult] = []
    per_parent: list[QueryResult] = []
    asked = Progress(Phase.EVALUATE, 0, len(queries), unit="questions", label=label)
    for i, (case, region, vec) in enumerate(zip(queries, regions, qvecs)):
        if cancel is not None and cancel.cancelled:
            raise Cancelled(f"evaluation stopped at query {i + 1} of {len(queries)} ({label})")
        asked_one = _ask(retriever, case, region, vec, by_path.get(region.path, []), ks=ks, miss_k=miss_k,
                         threshold=threshold, depth=depth, tokenizer=tokenizer, index=index, measure=measure)
        per_query.append(asked_one.result)
        if resolver is not None:
            per_parent.append(judge_parents(asked_one.result, asked_one.hits, resolver, region, asked_one.doc,
                                            asked_one.relevant, ks, miss_k, measure))
        if on_progress is not None:
            on_progress(asked.advanced(i + 1))
    strategy = retriever.strategy

    def result(label: str, rows: list[QueryResult], parent: str | None = None) -> EvalResult:
        return EvalResult(strategy_label=label, metrics=mean_metrics(q.metrics for q in rows), per_query=rows,
                          strategy=strategy.name, params=dict(strategy.params), chunks=len(retriever.chunks),
                          threshold=threshold, ks=ks, miss_k=miss_k, index=report, passage_unit=passage_unit,
                          parent=parent)

    out = result(label, per_query)
    if resolver is not None:
        out.parents = result(f"{label} · parent={resolver.spec.label}", per_parent, resolver.spec.label)
    return out


def parent_resolver(retriever: "Retriever", parent: "ParentSpec | None") -> "ParentResolver | None":
    """The parents of ``retriever``'s hits (its tree's documents, its strategy's tokens); None for no parent.

    One per collection scored, kept for all its questions (it keeps the spans it found). A file the tree did not
    load is read within the loader's default size limit.
    """
    if parent is None or not parent.active:
        return None
    from chunkscope.retrieval.parents import ParentResolver

    return ParentResolver.of_tree(parent, retriever.tree, retriever.strategy.counter)


def ask_and_judge(retriever: "Retriever", case: QueryCase, region: Region, vector: Any, chunks: Sequence["Chunk"], *,
                  ks: Sequence[int] = DEFAULT_KS, miss_k: int = 5, threshold: float | None = None,
                  depth: int = DEFAULT_DEPTH, tokenizer: Any = None, index: ChunkIndex | None = None,
                  measure: Measure = char_measure) -> QueryResult:
    """Ask one question of an indexed retriever and judge the answer against ``region``: what ``eval``,
    ``probe``, ``tune`` and the app's expectation all call, so that they give one verdict, rank and score.

    ``chunks`` are the retriever's chunks of the region's document; ``vector`` the question's (None in keyword
    search). Searches as deep as the metrics look first, and ``depth`` deep only when a miss's chunk is not in
    that search (for its rank): a chunk's score is then the one the shallow search, and a result list, shows.
    """
    return _ask(retriever, case, region, vector, chunks, ks=ks, miss_k=miss_k, threshold=threshold, depth=depth,
                tokenizer=tokenizer, index=index, measure=measure).result


@dataclass
class _Asked:
    """One question asked and judged: the verdict, and what it was judged on (parents are judged on it too)."""

    result: QueryResult
    hits: list["Hit"]
    doc: "Document"
    relevant: list["Chunk"]


def _ask(retriever: "Retriever", case: QueryCase, region: Region, vector: Any, chunks: Sequence["Chunk"], *,
         ks: Sequence[int], miss_k: int, threshold: float | None, depth: int, tokenizer: Any,
         index: ChunkIndex | None, measure: Measure) -> _Asked:
    """`ask_and_judge`, keeping the hits, the document and the relevant chunks."""
    doc = retriever.tree.get(region.path)
    if doc is None:
        raise QueriesError(f"{case.where}: expected file {region.path!r} is not in the docs tree")
    relevant = [c for c in chunks if overlaps(doc.text, c.start, c.end, region)]
    # judge() gives the same verdict either way: everything it reads beyond the top max(ks) is the rank of the
    # judged chunk. Local mode copies every returned payload, so a deep search costs ~10x a shallow one.
    shallow = max(max(ks), miss_k)
    hits = retriever.search(vector, k=shallow, threshold=threshold, text=case.query)
    if depth > shallow and _needs_depth(hits, doc, region, relevant, miss_k):
        hits = retriever.search(vector, k=depth, threshold=threshold, text=case.query)
    # A chunk the search did not reach is scored from its vector only where scores are cosines: in keyword and
    # hybrid search, and after a reranker, a cosine is no score any list shows (one score per mode).
    cosines = retriever.search_mode == "dense" and retriever.reranker is None
    result = judge(case, region, doc, hits, relevant, ks, miss_k, threshold, tokenizer, depth, index=index,
                   query_vector=vector if cosines else None, measure=measure,
                   cut_off=heading_cut_off(doc.text, chunks, region))
    return _Asked(result, list(hits), doc, relevant)


def _needs_depth(hits: Sequence["Hit"], doc: "Document", region: Region, relevant: Sequence["Chunk"],
                 miss_k: int) -> bool:
    """Whether a shallow search leaves a miss's rank unknown: no relevant chunk kept within ``miss_k``, and the
    chunk the miss is judged on (a chunk holding the region whole, else any relevant one) not in ``hits``."""
    if any(h.kept and h.path == region.path and overlaps(doc.text, h.start, h.end, region) for h in hits[:miss_k]):
        return False
    wanted = {(c.start, c.end) for c in (holders_of(doc, region, relevant) or relevant)}
    return not any(h.path == region.path and (h.start, h.end) in wanted for h in hits)
