"""Questions against the index, for the query pane: one embedder and store per app, a retriever per strategy.

Nothing here runs before the first query: ``chunkscope.retrieval`` (and with it qdrant-client, torch and
sentence-transformers) is imported inside the functions that need it, from worker threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ..chunk import Chunk
from ..config import Config, ResolvedStrategy
from ..docs import DocsTree
from ..progress import CancelToken, ProgressFn
from ..wording import install_hint as _install_sentence

#: How deep to search when looking for the rank of an expected chunk, or when filtering by chapter.
DEPTH = 100


def retrieval_available() -> str | None:
    """None when this install can query, else what to install (shown in the query pane instead of results).

    Looked up when the pane opens (without importing torch), so a base install says so before any work.
    """
    from ..extras import missing_retrieval

    return install_hint(missing_retrieval())


def install_hint(err: BaseException | None, what: str = "Querying") -> str | None:
    """The words for a missing optional part (`embed.MissingExtra`): what to install; None for other errors."""
    from ..extras import MissingExtra

    if not isinstance(err, MissingExtra):
        return None
    return _install_sentence(what, err.extra, err.package)


@dataclass(frozen=True)
class Expected:
    """The chunk the user says should answer the question ("expect this chunk")."""

    path: str
    start: int
    end: int
    index: int
    line: int
    strategy_label: str

    def describe(self) -> str:
        return f"#{self.index} of {self.path} (line {self.line})"


@dataclass
class Verdict:
    """Where the expected chunk ranks for the question, and why it missed (evaluate's reasons)."""

    expected: Expected
    hit: bool
    rank: int | None
    score: float | None
    reason: str | None
    detail: str


@dataclass
class Answer:
    """The hits for one question (``kept`` says which pass the threshold), and the verdict on the expectation."""

    question: str
    hits: list[Any]
    threshold: float | None
    k: int
    strategy_label: str
    verdict: Verdict | None = None
    seconds: float = 0.0
    filters: dict[str, str] = field(default_factory=dict)


class SearchSession:
    """The embedder, the store and one retriever per strategy fingerprint, created on first use.

    Used from worker threads, one operation at a time (a lock), so the local Qdrant store sees one caller.
    """

    def __init__(self, tree: DocsTree, config: Config) -> None:
        self.tree = tree
        self.config = config
        self.lock = threading.RLock()
        self._embedder = None
        self._store = None
        self._retrievers: dict[str, Any] = {}
        self.indexed: set[str] = set()

    def _key(self, resolved: ResolvedStrategy) -> str:
        return resolved.fingerprint()

    def is_indexed(self, resolved: ResolvedStrategy) -> bool:
        return self._key(resolved) in self.indexed

    def invalidate(self) -> None:
        """Documents changed on disk: every retriever chunks again, and the next query re-syncs its index."""
        with self.lock:
            for r in self._retrievers.values():
                r.invalidate()
            self.indexed.clear()

    def forget(self, resolved: ResolvedStrategy) -> None:
        """Drop the index of one strategy (``index: rebuild``)."""
        with self.lock:
            key = self._key(resolved)
            r = self._retrievers.pop(key, None)
            self.indexed.discard(key)
            if r is not None and self._store is not None:
                try:
                    r.rebuild()  # one file open: only its points go, the rest of its tree stays indexed
                except Exception:  # noqa: BLE001 - a missing collection is already rebuilt
                    pass

    def retriever(self, resolved: ResolvedStrategy):
        """The retriever of a strategy (opening the store and creating the embedder the first time)."""
        from ..embed import Embedder
        from ..retrieval import Retriever
        from ..store import Store

        with self.lock:
            if self._embedder is None:
                emb = self.config.embedding
                self._embedder = Embedder(self.config.embed_model, device=emb.get("device"),
                                          batch_size=int(emb.get("batch_size", 32)))
            if self._store is None:
                q = self.config.qdrant_target()  # [qdrant] url or path, else QDRANT_URL, else the local store
                self._store = Store(self.tree.root, url=q.url, path=q.path, timeout=q.timeout)
            key = self._key(resolved)
            r = self._retrievers.get(key)
            if r is None:
                r = Retriever(self.tree, resolved.strategy, self._embedder, self._store, self.config.site_url or None,
                              citation_template=resolved.citation_template)
                self._retrievers[key] = r
            return r

    def index(self, resolved: ResolvedStrategy, on_progress: ProgressFn, cancel: CancelToken):
        """Bring the strategy's collection in step with the tree; returns the core's IndexReport."""
        with self.lock:
            r = self.retriever(resolved)
            report = r.ensure_indexed(on_progress, cancel, label=resolved.label)
            if not report.cancelled:
                self.indexed.add(self._key(resolved))
            return report

    def ask(self, resolved: ResolvedStrategy, question: str, *, path: str | None = None, chapter: str | None = None,
            expected: Expected | None = None) -> Answer:
        """The top ``k`` hits (threshold applied as ``kept``), filtered to a file or chapter, and the verdict."""
        import time

        t0 = time.perf_counter()
        k, threshold = self.config.k, self.config.threshold
        with self.lock:
            r = self.retriever(resolved)
            vec = r.embedder.embed_query(question)
            filters = {"path": path} if path else {}
            if chapter:
                deep = r.search(vec, k=DEPTH, threshold=threshold, filters=filters or None)
                paths = {d.path for d in self.tree.documents if _chapter_of(d) == chapter}
                hits = [h for h in deep if h.path in paths][:k]
            else:
                hits = r.search(vec, k=k, threshold=threshold, filters=filters or None)
            verdict = None
            if expected is not None:
                verdict = self._judge(r, vec, question, expected, k, threshold)
        answer = Answer(question, hits, threshold, k, resolved.label, verdict, time.perf_counter() - t0,
                        {**filters, **({"chapter": chapter} if chapter else {})})
        return answer

    def _judge(self, retriever, vec, question: str, expected: Expected, k: int, threshold: float | None) -> Verdict:
        """evaluate.judge on the expected chunk's own text (the part it does not share with its neighbours)."""
        from ..evaluate import Expect, QueryCase, Region, judge, overlaps

        doc = self.tree.get(expected.path)
        if doc is None:
            return Verdict(expected, False, None, None, "absent", f"{expected.path} is no longer in the tree")
        chunks: list[Chunk] = [c for c in retriever.chunks if c.path == expected.path]
        start, end = expected.start, expected.end
        for c in chunks:  # shrink the region off the overlaps so a neighbour sharing text is not "the answer"
            if c.start < start < c.end <= end:
                start = c.end
            if start <= c.start < end < c.end:
                end = c.start
        if end <= start or doc.text[start:end].isspace():
            start, end = expected.start, expected.end
        region = Region(expected.path, start, end, expected.describe())
        relevant = [c for c in chunks if overlaps(doc.text, c.start, c.end, region)]
        hits = retriever.search(vec, k=DEPTH, threshold=threshold)
        case = QueryCase(question, Expect(expected.path))
        res = judge(case, region, doc, hits, relevant, miss_k=k, threshold=threshold,
                    tokenizer=retriever.embedder.tokenizer, depth=DEPTH)
        return Verdict(expected, res.hit, res.rank, res.score, res.reason, res.detail)

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


def _chapter_of(doc) -> str:
    from ..site import doc_numbering

    return doc_numbering(doc).chapter_id


def chapter_of(doc) -> str:
    """The chapter id the "this chapter only" filter uses for a document."""
    return _chapter_of(doc)
