"""Questions against the index, for the query pane: one embedder and store per app, a retriever per strategy.

Nothing here runs before the first query: ``chunkscope.retrieval.retriever`` (and with it qdrant-client, torch and
sentence-transformers) is imported inside the functions that need it, from worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.document.loader import DocsTree
from chunkscope.retrieval.search_modes import passes_threshold
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn, format_seconds
from chunkscope.safe_text import visible
from chunkscope.retrieval.search_modes import DEFAULT_SEARCH_MODE, check_search_mode
from chunkscope.wording import install_hint as _install_sentence

if TYPE_CHECKING:
    from concurrent.futures import Future

    from chunkscope.chunking.model import Chunk
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.evaluation.regions import Region
    from chunkscope.retrieval.parents import ParentResolver, ParentSpec
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Store

#: How deep to search when looking for the rank of an expected chunk, or when filtering by chapter.
DEPTH = 100
#: Seconds between looks at the cancel token while waiting for the store (held by another task).
WAIT_POLL_SECONDS = 0.1

#: Where the threshold in force comes from: set in the query pane, ``[query] threshold``, the embedder's own
#: measured value, or nowhere (an endpoint model nobody measured: every hit is kept).
ThresholdOrigin = Literal["here", "config", "embedder", "none"]


def retrieval_available() -> str | None:
    """None when this install can query, else what to install (shown in the query pane instead of results).

    Looked up when the pane opens (without importing torch), so a base install says so before any work.
    """
    from chunkscope.extras import missing_retrieval

    return install_hint(missing_retrieval())


def install_hint(err: BaseException | None, what: str = "Querying") -> str | None:
    """The words for a missing optional part (`embed.MissingExtra`): what to install; None for other errors."""
    from chunkscope.extras import MissingExtra

    if not isinstance(err, MissingExtra):
        return None
    return _install_sentence(what, err.extra, err.package)


#: How `Progress.describe` ends while there is no rate yet; the app says how long the step has run instead.
_MEASURING = " · time left: measuring"


def measuring(p: Progress) -> bool:
    """Whether the step has no rate yet (its line then shows the time it has run, which moves on its own)."""
    return p.done < p.total and p.rate is None


def progress_text(p: Progress) -> str:
    """A long task's line, terminal-safe: phase, done/total, rate and time left (`Progress.describe`); while
    nothing is measured yet, how long the step has run, so a model loading or a first batch never looks stuck."""
    if p.phase is Phase.LOAD:
        text = f"{p.phase.value} {p.label}".rstrip() + "…"  # one thing loads: no count to show
        o = p.outer
        if o is not None:
            text = f"{o.phase.value} {min(o.done + 1, o.total)}/{o.total} {o.unit} · {text}"
    else:
        text = p.describe()
    if measuring(p):
        text = text.removesuffix(_MEASURING) + f" · {format_seconds(p.elapsed)} so far"
    return visible(text, oneline=True)


def progress_brief(p: Progress) -> str:
    """The footer's few words for it: ``indexing 120/716 · 16 s left``."""
    if p.phase is Phase.LOAD:
        return visible(f"{p.phase.value} {p.label}".rstrip(), oneline=True)
    text = f"{p.phase.value} {p.done:,}/{p.total:,}"
    left = p.seconds_left
    if left is not None and p.done < p.total:
        text += f" · {format_seconds(left)} left"
    return text


@dataclass(frozen=True)
class Expected:
    """The chunk the user says should answer the question ("expect this chunk").

    It belongs to one question (``question``; None: the next question asked) and was cut by one strategy
    (``strategy_label``): the query pane drops it when another question is asked.
    """

    path: str
    start: int
    end: int
    index: int
    line: int
    strategy_label: str
    question: str | None = None
    #: Where the answer is, when known (a probe miss opened from the evaluation view: the section's body, its
    #: heading line included): judged as ``probe`` judges it. None: the chunk's own text is the answer.
    answer: Region | None = None

    def describe(self) -> str:
        return f"#{self.index} of {self.path} (line {self.line})"

    def is_chunk(self, path: str, start: int, end: int) -> bool:
        """Whether a hit is this very chunk (its overlap neighbours share text with it, not its span)."""
        return (path, start, end) == (self.path, self.start, self.end)


@dataclass
class Verdict:
    """Where the expected chunk ranks for the question, and why it missed (evaluate's reasons)."""

    expected: Expected
    hit: bool
    rank: int | None
    score: float | None
    reason: str | None
    detail: str
    #: The answer's heading is cut off from it (`verdicts.heading_cut_off`).
    cut_off: bool = False

    @property
    def words(self) -> str:
        """The verdict as ``eval`` and ``probe`` say it: reason, rank and score (`verdicts.verdict_words`)."""
        from chunkscope.evaluation.verdicts import verdict_words  # here: the first frame does without evaluation

        return verdict_words(self.reason, self.rank, self.score, cut_off=self.cut_off)


@dataclass
class Answer:
    """The hits for one question (``kept`` says which pass the threshold), and the verdict on the expectation.

    ``threshold`` is the one the hits were judged by: None in ``keyword`` and ``hybrid`` search, whose scores are
    no cosines (every hit is kept), and in ``dense`` search when no threshold is in force.
    """

    question: str
    hits: list[Any]
    threshold: float | None
    k: int
    strategy_label: str
    verdict: Verdict | None = None
    seconds: float = 0.0
    filters: dict[str, str] = field(default_factory=dict)
    search_mode: str = DEFAULT_SEARCH_MODE

    def with_threshold(self, threshold: float | None) -> Answer:
        """The same hits judged by another threshold, without searching again: each hit carries its score.

        A hit is kept as `Store.search` keeps it: no threshold, or a score at or over it. Only ``dense`` scores
        are cosines; in the other modes the answer is returned as it is. The verdict on the expected chunk is
        the core's (`verdicts.judge`) and is not re-judged here: ask again for that.
        """
        if self.search_mode != "dense":
            return self
        hits = [replace(h, kept=passes_threshold(h.score, threshold, self.search_mode)) for h in self.hits]
        return replace(self, hits=hits, threshold=threshold)


class SearchSession:
    """The embedder, the store and one retriever per strategy fingerprint, created on first use.

    Used from worker threads, one operation at a time (a lock), so the local Qdrant store sees one caller.
    """

    def __init__(self, tree: DocsTree, config: Config) -> None:
        self.tree = tree
        self.config = config
        self.lock = threading.RLock()
        self._embedder: Embedder | None = None
        #: The model loading on a thread of its own while the store opens (`_load_model_meanwhile`).
        self._model_loading: Future[Any] | None = None
        self._store: Store | None = None
        self._retrievers: dict[str, Retriever] = {}
        #: Each strategy's parents (by fingerprint and parent), kept with their spans while the documents stay as
        #: they are: a question typed letter by letter finds the parents of the same chunks again.
        self._resolvers: dict[tuple[str, str], ParentResolver] = {}
        #: The rerank stage (``[rerank]``, or the app's --rerank), made at the first question; see `reranker`.
        self._reranker: Any = None
        self._reranker_made = False
        self.indexed: set[str] = set()
        #: A threshold the user set in the query pane for this session (None: config, else the embedder's).
        self.threshold_override: float | None = None
        #: How questions are matched (`chunkscope.retrieval.search_modes`): ``[query] search`` until the query pane changes
        #: it. Read when a question is asked; every collection serves all three modes, so nothing is re-indexed.
        self.search_mode: str = check_search_mode(config.search_mode)
        #: What holds the store now ("indexing recursive"), for a task that has to wait for it to say why.
        self.busy: str | None = None
        #: Bumped when the documents change; the retrievers catch up on their next use (see `invalidate`).
        self._generation = 0
        self._retrievers_generation = 0

    def _key(self, resolved: ResolvedStrategy) -> str:
        return resolved.fingerprint()

    def is_indexed(self, resolved: ResolvedStrategy) -> bool:
        return self._key(resolved) in self.indexed

    def invalidate(self) -> None:
        """Documents changed on disk: every retriever chunks again, and the next query re-syncs its index.

        Called on the UI thread, so it never waits for the lock (an index build holds it for minutes): the
        retrievers catch up on their next use, and a build running now is not counted as done.
        """
        self._generation += 1
        self.indexed.clear()

    def _catch_up(self) -> None:
        """Under the lock: let the retrievers see the documents as they are now."""
        if self._retrievers_generation != self._generation:
            for r in self._retrievers.values():
                r.invalidate()
            self._resolvers.clear()  # their spans are of the documents as they were
            self._retrievers_generation = self._generation

    @contextmanager
    def _hold(self, cancel: CancelToken | None, on_progress: ProgressFn,
              outer: Progress | None = None) -> Iterator[None]:
        """The lock, waited for while the token allows (another task may hold the store for minutes); a wait is
        reported, naming what holds the store."""
        told = False
        while not self.lock.acquire(timeout=WAIT_POLL_SECONDS):
            if cancel is not None:
                cancel.raise_if_cancelled("stopped while waiting for the store")
            if not told:
                told = True
                holder = self.busy or "another task"
                on_progress(Progress(Phase.LOAD, 0, 1, unit="store", outer=outer,
                                     label=f"the store: waiting for {holder} to finish"))
        try:
            yield
        finally:
            self.lock.release()

    def forget(self, resolved: ResolvedStrategy) -> None:
        """Drop the index of one strategy (``index: rebuild``)."""
        with self.lock:
            key = self._key(resolved)
            r = self._retrievers.pop(key, None)
            self._resolvers = {k: v for k, v in self._resolvers.items() if k[0] != key}
            self.indexed.discard(key)
            if r is not None and self._store is not None:
                try:
                    r.rebuild()  # one file open: only its points go, the rest of its tree stays indexed
                except Exception:  # noqa: BLE001 - a missing collection is already rebuilt
                    pass

    def retriever(self, resolved: ResolvedStrategy):
        """The retriever of a strategy (opening the store and creating the embedder the first time)."""
        from chunkscope.retrieval.manifest import tree_settings
        from chunkscope.retrieval.retriever import Retriever

        with self.lock:
            self._catch_up()
            embedder = self._embedder_now()
            store = self._open_store()
            key = self._key(resolved)
            r = self._retrievers.get(key)
            if r is None:
                r = Retriever(self.tree, resolved.strategy, embedder, store, self.config.site_url or None,
                              search_mode=self.search_mode,
                              citation_template=resolved.citation_template, tree_settings=tree_settings(self.config),
                              reranker=self.reranker())
                self._retrievers[key] = r
            return r

    def reranker(self) -> Any:
        """The configured rerank stage (`chunkscope.retrieval.rerank`), made once: the query pane's searches and
        verdicts go through it, as ``query`` and ``eval`` do (a miss it caused is ``reranked-out``, both ranks
        named). None when none is configured. Loaded lazily by its backend, on the worker thread that searches.

        Raises:
            RerankError: the configured reranker cannot be named (the question's error line says why).
        """
        with self.lock:
            if not self._reranker_made:
                from chunkscope.retrieval.rerank import make_reranker

                spec = self.config.reranker()
                self._reranker = make_reranker(spec) if spec is not None else None
                self._reranker_made = True
            return self._reranker

    def _open_store(self) -> Store:
        """Under the lock: the session's store, opened on first use."""
        from chunkscope.retrieval.store import Store

        if self._store is None:
            q = self.config.qdrant_target()  # [qdrant] url or path, else QDRANT_URL, else the local store
            self._store = Store(self.tree.root, url=q.url, path=q.path, timeout=q.timeout,
                                api_key_env=q.api_key_env, engine=q.engine)
        return self._store

    def index(self, resolved: ResolvedStrategy, on_progress: ProgressFn, cancel: CancelToken):
        """Bring the strategy's collection in step with the tree; returns the core's IndexReport.

        Every step reports from its start: chunking the files, loading the model (before the first batch, so
        the store's rate measures embedding alone), then the store's own reports. A stop at any step returns a
        report that says ``cancelled``.
        """
        from chunkscope.retrieval.store import IndexReport

        generation = self._generation
        try:
            with self._hold(cancel, on_progress):
                self.busy = f"indexing {resolved.label}"
                try:
                    self._load_model_meanwhile()
                    r = self.retriever(resolved)
                    # An indexed tree unchanged on disk is vouched for by its manifest from file stats alone: no
                    # file is chunked or hashed before the first answer.
                    report = r.in_step()
                    if report is None:
                        self._chunk_all(r, resolved.label, on_progress, cancel)
                    self.load_model(r.embedder, on_progress, cancel)
                    if report is None:
                        report = r.ensure_indexed(on_progress, cancel, label=resolved.label)
                finally:
                    self.busy = None
        except Cancelled:
            return IndexReport(cancelled=True)
        if not report.cancelled and generation == self._generation:
            self.indexed.add(self._key(resolved))
        return report

    def _chunk_all(self, retriever: Any, label: str, on_progress: ProgressFn, cancel: CancelToken | None) -> None:
        """The retriever's chunks of the whole tree, said before it starts (seconds on a large tree)."""
        files = len(self.tree.documents)
        step = Progress(Phase.CHUNK, 0, files, unit="files", label=label)
        on_progress(step)
        if retriever.manifest is None:  # with a manifest, indexing chunks only the files that changed
            retriever.chunks  # noqa: B018 - computed once and kept by the retriever
        on_progress(step.advanced(files))
        if cancel is not None:
            cancel.raise_if_cancelled()

    def _embedder_now(self) -> Embedder:
        """Under the lock: the session's embedder, made on first use (its model is not loaded by this); the one a
        semantic strategy of the same configuration embeds with (`shared_embedder`): one model, one cache."""
        from chunkscope.embedding.sentence_vectors import shared_embedder

        if self._embedder is None:
            self._embedder = shared_embedder(self.config)
        return self._embedder

    def _load_model_meanwhile(self) -> None:
        """Under the lock: start loading the model on a thread of its own, so that it loads while the store opens
        (`load_model` waits for it). Qdrant Edge holds the interpreter while it opens a collection; ONNX Runtime
        builds its session without it, so on two cores the two take about as long as the longer of them."""
        embedder = self._embedder_now()
        if self._model_loading is not None or embedder.loaded:
            return
        from concurrent.futures import ThreadPoolExecutor  # here: the first frame does without it

        pool = ThreadPoolExecutor(1, thread_name_prefix="chunkscope-model")
        self._model_loading = pool.submit(embedder.load)
        pool.shutdown(wait=False)

    def load_model(self, embedder: Any, on_progress: ProgressFn, cancel: CancelToken | None) -> None:
        """Load the embedding model now (or wait for it to finish loading), saying so: torch and the weights take
        seconds the first time. A failure to load is raised here, whichever thread loaded."""
        pending, self._model_loading = self._model_loading, None
        if embedder.loaded and (pending is None or pending.done()):
            return
        on_progress(Progress(Phase.LOAD, 0, 1, unit="model", label="the embedding model"))
        if pending is not None:
            pending.result()
        embedder.load()  # at once when the thread loaded it; else (another embedder, a failed load) now
        if cancel is not None:
            cancel.raise_if_cancelled()

    def warm(self, resolved: ResolvedStrategy, cancel: CancelToken | None = None) -> bool:
        """Get an indexed tree ready to answer before its first question (the query pane calls this when it
        opens): the store and the strategy's collection opened, the model loaded, the vectors read once, and the
        index vouched for by its manifest (`Retriever.in_step`). True when the strategy is then indexed (results
        follow as you type; Enter asks at once).

        It never indexes nor creates anything: a tree without a manifest, a strategy without a collection, or a
        tree changed since it was indexed is left for Enter (which indexes, as before), and False is returned.
        Nor does it fail: a store that cannot be opened (in use, unreachable), a model that cannot load, is said
        by Enter's indexing, in the pane, as before.
        """
        from chunkscope.retrieval.ids import workspace_dir
        from chunkscope.retrieval.manifest import MANIFEST_DIR

        manifests = workspace_dir(self.tree.root) / MANIFEST_DIR
        if self.tree.partial or not any(manifests.glob("*.json")):
            return False  # never indexed with a manifest: nothing to open before Enter
        generation = self._generation
        try:
            return self._warm(resolved, cancel, generation)
        except Exception:  # noqa: BLE001 - only speed is lost: Enter does the same work and reports its failure
            return False

    def _warm(self, resolved: ResolvedStrategy, cancel: CancelToken | None, generation: int) -> bool:
        """`warm`'s work, which may raise."""
        from chunkscope.retrieval.ids import collection_name, owner_key

        try:
            with self._hold(cancel, lambda p: None):
                if self.is_indexed(resolved):
                    return True
                self.busy = "opening the index"
                try:
                    store = self._open_store()
                    strategy = resolved.strategy
                    name = collection_name(strategy.name, dict(strategy.params), self._embedder_now().model_id,
                                           owner_key(self.tree.root))
                    if name not in store.collections():
                        return False  # Store.use would create it: Enter indexes
                    self._load_model_meanwhile()
                    r = self.retriever(resolved)
                    if r.in_step() is None:
                        return False
                    self.load_model(r.embedder, lambda p: None, cancel)
                    # One search reads the collection's vectors into memory, so the first question does not.
                    r.store.search([1.0] + [0.0] * (r.embedder.dim - 1), 1, collection=r.collection)
                finally:
                    self.busy = None
        except Cancelled:
            return False
        if generation != self._generation:
            return False  # the documents changed meanwhile: the next question re-syncs
        self.indexed.add(self._key(resolved))
        return True

    def probe(self, strategies: Sequence[ResolvedStrategy], on_progress: ProgressFn, cancel: CancelToken,
              search_modes: Sequence[str] | None = None):
        """The label-free probe (`chunkscope.evaluation.probe.probe`) of ``strategies`` with the app's embedder and store.

        Before the core's own reports, the steps it does not report: finding the section headings, loading the
        model and embedding the questions (cached, so the probe then reads them back at once). Stopped, it
        returns what finished (``cancelled``), possibly no strategy at all.

        ``search_modes``: how each strategy's questions are matched, one per strategy (default: the session's
        mode for all). As ``chunkscope probe`` does, the core runs once per mode and the columns keep their order.
        """
        from chunkscope.evaluation.probe import ProbeResult, probe, probe_sections

        k = self.config.k
        ks = tuple(sorted({1, k}))
        files = len(self.tree.documents)
        outer = Progress(Phase.PROBE, 0, len(strategies), unit="strategies")
        on_progress(Progress(Phase.LOAD, 0, 1, unit="files", label=f"the section headings of {files} files",
                             outer=outer))
        pset = probe_sections(self.tree)
        groups = self._groups(strategies, search_modes)
        parts: list[ProbeResult] = []
        try:
            with self._hold(cancel, on_progress, outer):
                self.busy = "the probe"
                try:
                    retriever = self.retriever(strategies[0])  # opens the app's embedder and store once
                    embedder = retriever.embedder
                    self.load_model(embedder, lambda p: on_progress(p.within(outer)), cancel)
                    questions = [c.query for c in pset.cases]
                    embedder.embed(questions, on_progress=lambda p: on_progress(p.within(outer)), cancel=cancel,
                                   label="questions")
                    done = 0
                    for (mode, parent), group in groups.items():
                        # With a parent configured, its parents are columns of their own beside the chunks'.
                        part = probe(self.tree, [(r.label, r.strategy) for r in group], k=k, probe_set=pset,
                                     embedder=embedder, store=retriever.store,
                                     on_progress=_counted_from(done, len(strategies), on_progress), cancel=cancel,
                                     site_url=self.config.site_url or None, search_mode=mode,
                                     parent=parent if parent.active else None)
                        parts.append(part)
                        done += len(group)
                        if part.cancelled:
                            break
                finally:
                    self.busy = None
        except Cancelled:
            pass
        if not parts:
            return ProbeResult(k, ks, pset, [], cancelled=True)
        order = _column_order(strategies)
        outcomes = sorted((o for p in parts for o in p.outcomes), key=lambda o: order(o.label))
        return ProbeResult(k, ks, pset, outcomes, seconds=sum(p.seconds for p in parts),
                           cancelled=any(p.cancelled for p in parts) or len(parts) < len(groups))

    def evaluate(self, strategies: Sequence[ResolvedStrategy], queries: Sequence[Any], on_progress: ProgressFn,
                 cancel: CancelToken, search_modes: Sequence[str] | None = None) -> tuple[list[Any], bool]:
        """``chunkscope eval`` of ``strategies`` on labelled questions (`QueryCase`s), with the app's embedder and
        store: one `EvalResult` per strategy that finished, in order, and whether it was stopped.

        As ``eval`` does: hit@1 and hit@k (the query pane's k), one core run per search mode, the configured
        threshold in ``dense`` search only (the other modes' scores are no cosines).
        """
        from chunkscope.evaluation.evaluate import evaluate

        k = self.config.k
        groups = self._groups(strategies, search_modes)
        by_label: dict[str, Any] = {}
        outer = Progress(Phase.EVALUATE, 0, len(strategies), unit="strategies")
        try:
            with self._hold(cancel, on_progress, outer):
                self.busy = "the evaluation"
                try:
                    retriever = self.retriever(strategies[0])  # opens the app's embedder and store once
                    self.load_model(retriever.embedder, lambda p: on_progress(p.within(outer)), cancel)
                    for (mode, parent), group in groups.items():
                        for res in evaluate(self.tree, [(r.label, r.strategy) for r in group], queries,
                                            ks=sorted({1, k}), threshold=self.config.threshold if mode == "dense"
                                            else None, embedder=retriever.embedder,
                                            store_factory=lambda label, strategy: retriever.store,
                                            on_progress=lambda p: on_progress(p.within(outer)), cancel=cancel,
                                            miss_k=k, site_url=self.config.site_url or None, search_mode=mode,
                                            parent=parent if parent.active else None):
                            by_label[res.strategy_label] = res
                            outer = replace(outer, done=len(by_label))
                finally:
                    self.busy = None
        except Cancelled:
            pass
        done = [by_label[r.label] for r in strategies if r.label in by_label]
        # Each strategy's chunks, then (with a parent) its parents: the probe's columns hold both.
        return [x for res in done for x in res.levels()], len(done) < len(strategies)

    def _groups(self, strategies: Sequence[ResolvedStrategy], search_modes: Sequence[str] | None
                ) -> dict[tuple[str, Any], list[ResolvedStrategy]]:
        """The strategies by (search mode, parent): one core run each, as ``probe`` and ``eval`` do. The parent
        is the strategy's preset's, else ``[retrieval] parent``."""
        modes = list(search_modes) if search_modes is not None else [self.search_mode] * len(strategies)
        groups: dict[tuple[str, Any], list[ResolvedStrategy]] = {}
        for r, mode in zip(strategies, modes):
            groups.setdefault((check_search_mode(mode), self.config.parent(None, r.parent)), []).append(r)
        return groups

    @property
    def threshold(self) -> float | None:
        """The score threshold in force: the one set in the query pane, else ``[query] threshold``, else the
        embedder's own (0.7 for text-embedding-3-small as in seed 004, a measured value for MiniLM)."""
        if self.threshold_override is not None:
            return self.threshold_override
        if self.config.threshold is not None:
            return self.config.threshold
        spec = self.embedder_spec
        return spec.default_threshold if spec is not None else None

    @property
    def threshold_origin(self) -> ThresholdOrigin:
        """Where `threshold` comes from (the pane says so beside the value)."""
        if self.threshold_override is not None:
            return "here"
        if self.config.threshold is not None:
            return "config"
        return "embedder" if self.threshold is not None else "none"

    @property
    def embedder_spec(self) -> Any:
        """The configured embedder (`EmbedderSpec`: its ``text`` is what the pane shows); None when the
        configuration names one that cannot be used (the first question says why)."""
        from chunkscope.embedding.spec import EmbedderSpecError

        try:
            return self.config.embedder_spec()
        except EmbedderSpecError:
            return None

    def ask(self, resolved: ResolvedStrategy, question: str, *, path: str | None = None, chapter: str | None = None,
            expected: Expected | None = None) -> Answer:
        """The top ``k`` hits (threshold applied as ``kept``), filtered to a file or chapter, and the verdict."""
        import time

        t0 = time.perf_counter()
        mode = self.search_mode
        # A cosine threshold means nothing to BM25 scores or fused ranks: the other modes keep every hit.
        k, threshold = self.config.k, self.threshold if mode == "dense" else None
        with self.lock:
            r = self.retriever(resolved)
            r.search_mode = mode  # a retriever made before the mode changed; its collection serves every mode
            vec = None if mode == "keyword" else r.embedder.embed_query(question)
            filters = {"path": path} if path else {}
            if chapter:
                deep = r.search(vec, k=DEPTH, threshold=threshold, filters=filters or None, text=question)
                paths = {d.path for d in self.tree.documents if _chapter_of(d) == chapter}
                hits = [h for h in deep if h.path in paths][:k]
            else:
                hits = r.search(vec, k=k, threshold=threshold, filters=filters or None, text=question)
            parent = self.config.parent(None, resolved.parent)
            if parent.active:
                # Small-to-big: the chunks were searched, their parents answer (each once, with its chunks).
                hits = list(self._resolver(resolved, parent, r).merge(hits))
            verdict = None
            if expected is not None:
                # A probe question (its answer known) is judged as the probe judges it: ranked, no threshold.
                judged_by = None if expected.answer is not None else threshold
                verdict = self._judge(r, vec, question, expected, k, judged_by)
        answer = Answer(question, hits, threshold, k, resolved.label, verdict, time.perf_counter() - t0,
                        {**filters, **({"chapter": chapter} if chapter else {})}, mode)
        return answer

    def _resolver(self, resolved: ResolvedStrategy, parent: ParentSpec, retriever: Retriever) -> ParentResolver:
        """Under the lock: the strategy's parents of ``parent``'s kind, made on first use (see `_resolvers`)."""
        from chunkscope.retrieval.parents import ParentResolver

        key = (self._key(resolved), parent.label)
        resolver = self._resolvers.get(key)
        if resolver is None:
            resolver = ParentResolver.of_tree(parent, self.tree, retriever.strategy.counter,
                                              self.config.max_file_bytes)
            self._resolvers[key] = resolver
        return resolver

    def _judge(self, retriever, vec, question: str, expected: Expected, k: int, threshold: float | None) -> Verdict:
        """The core's judging (`evaluate.ask_and_judge`, as eval and probe call it) of the expected chunk: against
        the answer it was expected for when known, else against its own text (the part it does not share with its
        neighbours)."""
        from chunkscope.evaluation.evaluate import ask_and_judge
        from chunkscope.evaluation.queries import Expect, QueryCase
        from chunkscope.evaluation.regions import Region
        from chunkscope.evaluation.verdicts import ChunkIndex

        doc = self.tree.get(expected.path)
        if doc is None:
            return Verdict(expected, False, None, None, "absent", f"{expected.path} is no longer in the tree")
        chunks: list[Chunk] = [c for c in retriever.chunks if c.path == expected.path]
        region = expected.answer
        if region is None:
            start, end = expected.start, expected.end
            for c in chunks:  # shrink the region off the overlaps so a neighbour sharing text is not "the answer"
                if c.start < start < c.end <= end:
                    start = c.end
                if start <= c.start < end < c.end:
                    end = c.start
            if end <= start or doc.text[start:end].isspace():
                start, end = expected.start, expected.end
            region = Region(expected.path, start, end, expected.describe())
        embedder = retriever.embedder
        # Every chunk was embedded when the collection was written: its vector is an embedding-cache lookup.
        index = ChunkIndex(retriever.chunks, lambda texts: embedder.embed(texts).vectors)
        res = ask_and_judge(retriever, QueryCase(question, Expect(expected.path)), region, vec, chunks, ks=(k,),
                            miss_k=k, threshold=threshold, depth=DEPTH, tokenizer=embedder.tokenizer, index=index)
        return Verdict(expected, res.hit, res.rank, res.score, res.reason, res.detail, res.cut_off)

    def close(self) -> None:
        with self.lock:
            if self._store is not None:
                try:
                    self._store.close()
                except Exception:  # noqa: BLE001
                    pass
                self._store = None
            if self._embedder is not None:
                try:
                    self._embedder.close()
                except Exception:  # noqa: BLE001
                    pass
                self._embedder = None
            if self._reranker is not None:
                try:
                    self._reranker.close()
                except Exception:  # noqa: BLE001
                    pass
                self._reranker = None


def _column_order(strategies: Sequence[ResolvedStrategy]) -> Callable[[str], float]:
    """Where a column goes: its strategy's place, a parent-level column (``… · parent=section``) right after
    its chunks'."""
    order = {r.label: i for i, r in enumerate(strategies)}

    def place(label: str) -> float:
        if label in order:
            return order[label]
        base, sep, _ = label.rpartition(" · parent=")
        return order[base] + 0.5 if sep and base in order else len(order)

    return place


def _counted_from(done: int, total: int, on_progress: ProgressFn) -> ProgressFn:
    """A core probe's reports over a group of the strategies, counted as part of all ``total`` (its strategies
    start at ``done``)."""

    def report(p: Progress) -> None:
        o = p.outer if p.outer is not None and p.outer.phase is Phase.PROBE else p if p.phase is Phase.PROBE else None
        if o is None:
            on_progress(p)
            return
        whole = replace(o, done=done + o.done, total=total)
        on_progress(whole if o is p else replace(p, outer=whole))

    return report


def _chapter_of(doc) -> str:
    from chunkscope.site.numbering import doc_numbering

    return doc_numbering(doc).chapter_id


def chapter_of(doc) -> str:
    """The chapter id the "this chapter only" filter uses for a document."""
    return _chapter_of(doc)
