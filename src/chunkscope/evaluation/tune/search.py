"""Tune: search strategies, their main parameters, ``embed_prefix`` and the search mode within a time budget.

**The space** (`chunkscope.evaluation.tune.space`): for each strategy the values of its own `search_space`, each
`embed_prefix` of `PREFIXES`, each search mode, each ``parent`` asked for (what a hit returns), and with a
reranker each of those without and with it. A chunking's variants share one collection and its vectors, so
measuring a chunking measures every variant of it at the cost of the questions alone (and the reranker's). A
parent variant is scored on its parents' metrics; it ties with its chunks when it carries no question they
missed, and a tie keeps the earlier variant (no parent, no reranker): a stage wins only by answering more.

**The search: successive halving** (`chunkscope.evaluation.tune.plan`). The wall-time budget is shared equally
between the rungs (what one leaves, the next gets): a rung starts no new chunking once its share is spent, and
the search stops, mid-chunking if need be, when the whole budget is. Nothing is embedded twice: every vector
comes from the embedding cache when it is there, and a chunking promoted to a bigger part embeds only that
part's new documents (its collection keeps the rest). The best seed of a rung goes on to the next as a
reference, whatever its rank, so the winner is compared with it on the same questions.

**The score** (`chunkscope.evaluation.tune.score`). With labelled questions: ``0.7 × hit@k + 0.3 × MRR``.
Without, the probe and what needs no questions. Without labels the search modes are dense and hybrid: the
probe's questions are the answers' own heading words, which flatters matching words alone, so pure keyword
search is searched only with labelled questions (or when asked for).

Stopping (the `CancelToken`) keeps what was measured: the result holds every trial so far and the best of them,
and says when that is no answer (`TuneResult.no_answer`). Headless: no rich/textual; torch only through the
embedder.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import strategy_class
from chunkscope.evaluation.evaluate import score_retriever
from chunkscope.evaluation.probe import DEFAULT_LEVELS
from chunkscope.evaluation.queries import QueryCase
from chunkscope.evaluation.runs import run_config
from chunkscope.evaluation.tune.plan import ETA, MAX_RUNG_QUESTIONS, MAX_RUNGS, Part, Rung, plan_rungs
from chunkscope.evaluation.tune.results import Trial, TuneResult
from chunkscope.evaluation.tune.score import (
    LABEL_FREE_PARTS,
    LABELLED_PARTS,
    Structure,
    Weights,
    measure_structure,
    weighted,
)
from chunkscope.evaluation.tune.space import PREFIXES, Axes, Candidate, Chunking, search_space
from chunkscope.progress import Cancelled, CancelToken, Phase, Progress, ProgressFn
from chunkscope.retrieval.parents import ParentError, parse_parent
from chunkscope.retrieval.search_modes import SEARCH_MODES, check_search_mode

if TYPE_CHECKING:
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.config.reader import Config
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.evaluation.evaluate import EvalResult
    from chunkscope.retrieval.rerankers.base import Reranker
    from chunkscope.retrieval.store import Store

#: Search modes searched without labelled questions (see the module docstring for why not keyword).
LABEL_FREE_MODES = ("dense", "hybrid")
LABELLED_MODES = SEARCH_MODES


def _budget_token(cancel: CancelToken | None, deadline: Callable[[], bool]) -> CancelToken:
    return CancelToken(poll=lambda: (cancel is not None and cancel.cancelled) or deadline())


class _Search:
    """One tune run: the parts of the tree, the store and embedder, the clock, and what was measured so far."""

    def __init__(self, tree: DocsTree, parts: list[Part], result: TuneResult, order: Mapping[Candidate, int], *,
                 embedder: Embedder, store: Store, config: Config | None, threshold: float | None,
                 site_url: str | None, cancel: CancelToken | None, on_progress: ProgressFn | None,
                 clock: Callable[[], float], start: float, eta: int, reranker: Reranker | None = None) -> None:
        self.tree, self.parts, self.result, self.order = tree, parts, result, order
        self.embedder, self.store, self.config = embedder, store, config
        self.threshold, self.site_url, self.cancel, self.on_progress = threshold, site_url, cancel, on_progress
        self.clock, self.eta, self.reranker = clock, eta, reranker
        self.labelled = result.source == "queries"
        self.start = start  # the budget counts from the call, planning included
        self.existing = set(store.collections())
        self.created: list[str] = []
        self.by_path = {d.path: d for d in tree.documents}
        names = {c.chunking.strategy for c in order}
        self.base = {n: dict(config.strategies.get(n, {})) for n in names} if config is not None else {}
        budget = result.budget
        self.hard = _budget_token(cancel, lambda: budget is not None and clock() >= self.start + budget)

    @property
    def rungs(self) -> list[Rung]:
        return self.result.rungs

    def user_stopped(self) -> bool:
        return self.cancel is not None and self.cancel.cancelled

    def over_budget(self) -> bool:
        budget = self.result.budget
        return budget is not None and self.clock() >= self.start + budget

    def deadline(self, rung: int) -> float | None:
        """When this rung's share of the budget (and the shares the rungs before it left) is spent."""
        budget = self.result.budget
        return None if budget is None else self.start + budget * (rung + 1) / len(self.rungs)

    def strategy_of(self, ch: Chunking) -> Strategy:
        cls = strategy_class(ch.strategy)
        return cls(**{**self.base.get(ch.strategy, {}), **ch.param_dict})

    def _threshold(self, mode: str) -> float | None:
        # A cosine threshold means nothing to BM25 scores or fused ranks; the probe has none at all.
        return self.threshold if self.labelled and mode == "dense" else None

    def measure(self, ch: Chunking, variants: list[Candidate], rung: int, report: ProgressFn) -> list[Trial]:
        """One chunking on one rung, every variant of it (search mode, reranker, parent): one collection, the
        questions asked once per variant."""
        from chunkscope.retrieval.retriever import Retriever

        part, k = self.parts[rung], self.result.k
        ks = (1, k)
        strategy = self.strategy_of(ch)
        if part.qvecs is None:
            part.qvecs = self.embedder.embed([c.query for c in part.cases], cancel=self.hard,
                                             label="questions").vectors
        name = self.store.use(strategy, self.embedder, owner=self.tree.root)
        if name not in self.existing and name not in self.created:
            self.created.append(name)  # named before the run, so one stopped half-way is still dropped
        began = time.perf_counter()
        def stages(c: Candidate) -> dict[str, Any]:
            lift = parse_parent(c.parent)
            return {"reranker": self.reranker if c.rerank else None, "parent": lift if lift.active else None}

        first = variants[0]
        # depth=k: a miss's deeper rank is not needed to rank configurations (and costs a search each).
        run = run_config(part.tree, ch.label, strategy, self.embedder, self.store, part.cases, part.regions,
                         part.qvecs, ks=ks, miss_k=k, threshold=self._threshold(first.search), depth=k,
                         site_url=self.site_url, step=report, cancel=self.hard, search_mode=first.search,
                         **stages(first))
        evals = {first: run.result}
        for c in variants[1:]:
            st = stages(c)
            retriever = Retriever(part.tree, strategy, self.embedder, self.store, self.site_url,
                                  search_mode=c.search, reranker=st["reranker"])
            evals[c] = score_retriever(retriever, ch.label, part.cases, part.regions, part.qvecs, ks=ks,
                                       threshold=self._threshold(c.search), miss_k=k, depth=k, cancel=self.hard,
                                       on_progress=report, parent=st["parent"])
        structure = None if self.labelled else self._structure(rung, run.collection, run.chunks, strategy)
        seconds = time.perf_counter() - began
        # A parent variant is judged by its parents (what the bot sends on), the chunks' misses kept in theirs.
        out = [self._trial(c, rung, evals[c].parents or evals[c], structure, len(run.chunks), seconds,
                           run.embedded, run.cached) for c in variants]
        self.result.embedded += run.embedded
        self.result.cached += run.cached
        return out

    def _structure(self, rung: int, collection: str, chunks: Sequence[Any], strategy: Strategy) -> Structure:
        from chunkscope.retrieval.neighbours import StoredEmbeddings

        part, paths = self.parts[rung], self.rungs[rung].paths
        # The store's own neighbourhoods of this part's points: what lint's hub and orphan rules read.
        stored = StoredEmbeddings(self.store, collection, paths=None if part.tree is self.tree else paths,
                                  order=paths)
        return measure_structure([self.by_path[p] for p in paths], self.tree.root, chunks, strategy, self.config,
                                 self.embedder, stored)

    def _trial(self, cand: Candidate, rung: int, ev: EvalResult, structure: Structure | None, chunks: int,
               seconds: float, embedded: int, cached: int) -> Trial:
        part, k = self.parts[rung], self.result.k
        metrics = dict(ev.metrics)
        parts: dict[str, float | None]
        if structure is None:
            parts = {"hit": metrics.get(f"hit@{k}", 0.0), "mrr": metrics.get("mrr", 0.0)}
        else:
            parts = {"probe_hit": metrics.get(f"hit@{k}", 0.0), "probe_mrr": metrics.get("mrr", 0.0),
                     **structure.parts()}
        misses = [part.labels[i] for i, q in enumerate(ev.per_query) if not q.hit]
        return Trial(cand, rung, self.order[cand], weighted(parts, self.result.weights), parts, metrics, chunks,
                     len(part.cases), seconds, embedded, cached, structure, len(misses), misses[:20],
                     ev if part.tree is self.tree else None, {r: n for r, n in ev.reasons.items() if n})

    def run_rung(self, r: int, todo: Sequence[Candidate]) -> None:
        """Measure the chunkings of ``todo`` on rung ``r`` until they are done or the rung's share is spent.
        Raises Cancelled when the user stops or the whole budget is spent."""
        rung = self.rungs[r]
        began = self.clock()  # the budget's clock: what a configuration costs is measured as the budget is
        # One unit of work per chunking: every variant of it wanted on this rung.
        work: dict[Chunking, list[Candidate]] = {}
        for cand in todo:
            variants = work.setdefault(cand.chunking, [])
            if cand not in variants:
                variants.append(cand)
        rung.planned = len(work)
        where = f"rung {r + 1}/{len(self.rungs)}, {rung.fraction:.0%} of the tree"
        whole = Progress(Phase.TUNE, 0, rung.planned, unit="configurations", label=where)
        limit = self.deadline(r)
        for i, (ch, variants) in enumerate(work.items()):
            if self.user_stopped():
                raise Cancelled("stopped")
            if self.over_budget():
                raise Cancelled("budget")
            if limit is not None and i > 0 and self.clock() >= limit:
                rung.stopped = "budget"
                break
            whole = Progress(Phase.TUNE, i, rung.planned, unit="configurations", started=whole.started,
                             label=f"{where}: {ch.label}")

            def report(p: Progress, outer: Progress = whole) -> None:
                if self.on_progress is not None:
                    self.on_progress(p.within(outer))

            try:
                trials = self.measure(ch, variants, r, report)
            except Cancelled:
                raise
            except (ParamError, ValueError, LookupError) as exc:  # a combination the strategy refuses
                why = str(exc) if isinstance(exc, ParamError) else f"{type(exc).__name__}: {exc}"
                self.result.skipped.append((ch.label, why))
                continue
            finally:
                rung.seconds = self.clock() - began
            self.result.trials.extend(trials)
            rung.measured += 1
            if self.on_progress is not None:
                self.on_progress(whole.advanced(i + 1))
            rung.seconds = self.clock() - began
        rung.seconds = self.clock() - began

    def run(self, first: Sequence[Candidate]) -> None:
        """Every rung in turn, each on what the one before promoted; stopping keeps what was measured."""
        todo = list(first)
        current: Rung | None = None
        try:
            for r, rung in enumerate(self.rungs):
                current = rung
                self.run_rung(r, todo)
                if r + 1 < len(self.rungs):
                    todo = _promote(self.result.on_rung(r), self.eta)
                    if not todo:
                        break
        except Cancelled:
            # Between batches, or at the budget's end: what finished stays (vectors cached, trials kept).
            if self.user_stopped():
                self.result.cancelled = True
            else:
                self.result.budget_spent = True
            if current is not None and not current.stopped:
                current.stopped = "cancelled" if self.result.cancelled else "budget"

    def drop_collections(self, keep: bool) -> None:
        """Drop the collections this run made, except the winner's whole-tree one (all kept with ``keep``)."""
        result = self.result
        best = result.best
        winner = ""
        if best is not None and self.rungs[best.rung].whole:
            winner = self.store.use(self.strategy_of(best.candidate.chunking), self.embedder, owner=self.tree.root)
        if not keep:
            for name in self.created:
                if name == winner:
                    continue
                try:
                    self.store.drop(name)
                    result.dropped.append(name)
                except Exception:  # noqa: BLE001 - a collection that is already gone
                    pass
        result.kept = winner if winner in self.created or winner in self.existing else ""


def tune(tree: DocsTree, queries: Sequence[QueryCase] | None = None, *, budget: float | None = None, k: int = 5,
         strategies: Sequence[str] | None = None, prefixes: Sequence[str] = PREFIXES,
         modes: Sequence[str] | None = None, space: Mapping[str, Axes] | None = None,
         weights: Weights = Weights(), config: Config | None = None, embedder: Embedder | None = None,
         store: Store | None = None, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
         threshold: float | None = None, site_url: str | None = None, min_level: int = DEFAULT_LEVELS[0],
         max_level: int = DEFAULT_LEVELS[1], eta: int = ETA, max_rungs: int = MAX_RUNGS,
         max_questions: int = MAX_RUNG_QUESTIONS, keep: bool = False, seed: int = 0,
         clock: Callable[[], float] = time.monotonic, reranker: Reranker | None = None,
         parents: Sequence[str] = ("none",)) -> TuneResult:
    """Search the space for the best configuration of ``tree``; see the module docstring.

    Args:
        queries: labelled questions (`queries.load_queries`); None: label-free (the probe and what needs no
            questions).
        budget: wall-time seconds for the whole search (None: no limit: every rung runs to its end).
        strategies: the strategies to search (default: every one that declares a search space).
        space: per strategy, its axes (default: each strategy's own `search_space`).
        modes: the search modes to search (default: `LABEL_FREE_MODES` without queries, all with them).
        config: the tree's configuration: ``[strategies.NAME]`` defaults under every chunking, ``[lint]`` for
            the label-free parts.
        store: the vector store (default: the tree's local store, opened and closed here). Collections created
            here are dropped at the end, except the winner's (its whole-tree collection, what ``-s`` of its
            preset will use) unless ``keep`` keeps them all.
        threshold: the score threshold of dense search on labelled questions (the probe has none).
        on_progress: each step's `Progress`, within a `Phase.TUNE` report of the rung's chunkings.
        cancel: stops between batches; the result then holds what was measured (``cancelled``).
        seed: the order in which the space is tried (the same seed, the same order).
        reranker: every configuration is also measured with it (``rerank`` on and off).
        parents: what a hit returns, each searched (``none``, ``section``, ``window:N``, ``page``).
        clock: seconds, for the budget (tests pass their own).

    Raises:
        QueriesError: a labelled question names nothing in the tree, or there is nothing to ask.
        ParamError: an unknown strategy, mode or level.
    """
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.store import Store

    start = clock()
    t0 = time.perf_counter()
    if k < 1:
        raise ParamError(f"k must be positive, got {k}")
    if budget is not None and budget < 0:
        raise ParamError(f"the budget must not be negative, got {budget}")
    labelled = queries is not None
    modes = tuple(check_search_mode(m) for m in (modes or (LABELLED_MODES if labelled else LABEL_FREE_MODES)))
    for p in prefixes:
        if not isinstance(p, str) or not p:
            raise ParamError(f"embed_prefix values must be non-empty strings, got {p!r}")
    try:
        lifts = tuple(dict.fromkeys(parse_parent(p).label for p in parents)) or ("none",)
    except ParentError as exc:
        raise ParamError(str(exc)) from None
    chunkings = search_space(strategies, prefixes, space)
    pset, parts, rungs = plan_rungs(tree, queries, min_level=min_level, max_level=max_level, eta=eta,
                                    max_rungs=max_rungs, max_questions=max_questions)
    if labelled:
        weight_map = {name: w for name, _, w in LABELLED_PARTS}
    else:
        weight_map = {name: weights.of(name) for name, _ in LABEL_FREE_PARTS}
    result = TuneResult("queries" if labelled else "probe", k, modes, weight_map, len(chunkings), rungs,
                        budget=budget, probe=pset, queries=len(parts[-1].cases), eta=eta, parents=lifts,
                        rerank=reranker.spec.model if reranker is not None else "")

    # The order of the first rung: the seeds (with every mode), then the rest of the space shuffled with a fixed
    # seed, so a budget that ends the rung early leaves a fair sample of the whole space rather than one corner.
    seeds = [c for c in chunkings if c.seed]
    rest = [c for c in chunkings if not c.seed]
    random.Random(seed).shuffle(rest)
    # Within a chunking: no stage first, so a stage that answers nothing more loses the tie (`Trial.sort_key`).
    reranks = (False, True) if reranker is not None else (False,)
    first = [Candidate(c, m, r, p) for c in seeds + rest for m in modes for p in lifts for r in reranks]
    order = {cand: i for i, cand in enumerate(first)}

    own = store is None
    store = store or Store(tree.root)
    try:
        search = _Search(tree, parts, result, order, embedder=embedder or Embedder(), store=store, config=config,
                         threshold=threshold, site_url=site_url, cancel=cancel, on_progress=on_progress,
                         clock=clock, start=start, eta=eta, reranker=reranker)
        try:
            search.run(first)
        finally:
            search.drop_collections(keep)
    finally:
        if own:
            store.close()
    if budget is not None and not result.cancelled and any(x.stopped == "budget" for x in rungs):
        result.budget_spent = True
    result.seconds = time.perf_counter() - t0
    return result


def _promote(trials: Sequence[Trial], eta: int) -> list[Candidate]:
    """The best 1/eta of a rung's trials (at least one), best first, and the rung's best seed second when it
    did not make the cut: the reference the next rung measures the winner against."""
    if not trials:
        return []
    keep = max(1, math.ceil(len(trials) / eta))
    chosen = [t.candidate for t in trials[:keep]]
    seed = next((t.candidate for t in trials if t.candidate.chunking.seed), None)
    if seed is not None and seed not in chosen:
        chosen.insert(1, seed)  # second: measured even when the budget ends the rung early
    return chosen
