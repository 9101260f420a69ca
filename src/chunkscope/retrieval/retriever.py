"""Retrieval: chunk a docs tree with a strategy, keep its collection in step, ask questions, cite the answers.

`render_citation` fills a strategy's citation template (``str.format`` syntax) from a chunk's metadata and
position; a field with no value is dropped together with the words and separator that belong to it, so a
missing section number gives "Chapter 3: Forward Kinematics", never "Chapter 3, Section None: …".
`chunk_url` links a chunk to the published page and the heading it starts under.
"""

from __future__ import annotations

import functools
import re
import string
import time
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from chunkscope.chunking.prefix import FieldFormatter
from chunkscope.progress import CancelToken, ProgressFn
from chunkscope.retrieval.search_modes import DEFAULT_SEARCH_MODE, check_search_mode
from chunkscope.site.urls import chunk_url, page_url
from chunkscope.site.numbering import doc_numbering
from chunkscope.retrieval.indexing import index_chunks
from chunkscope.retrieval.manifest import Manifest, ManifestFile, StoredTree, manifest_file, refresh
from chunkscope.retrieval.store import Hit, IndexReport, Store

if TYPE_CHECKING:
    import numpy as np

    from chunkscope.chunking.model import Chunk, ChunkedDoc
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import Document, DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.rerankers.base import Reranker

__all__ = ["Retriever", "chunk_url", "citation_fields", "render_citation"]

#: Separators between the parts of a citation; a part whose fields are all empty goes with one of its separators.
_SEPARATOR = re.compile(r"\s*(?:›|»|\||·|—|–|,|;|:|\s-\s)\s*")
_DEFAULT_TEMPLATE = "{title} › {heading}"


def citation_fields(chunk: "Chunk | None", doc: "Document | None" = None) -> dict[str, Any]:
    """Values every template may use, besides the strategy's metadata (which wins on a clash).

    ``title`` (front matter title, else the H1), ``heading`` (the innermost heading), ``heading_path`` (joined
    with " › "), ``path``, ``start_line``/``end_line``/``lines``, ``chunk_index``, ``chapter``, ``section``,
    ``chapter_id``, ``chapter_title``, ``module``, ``week``.
    """
    fields: dict[str, Any] = {}
    if doc is not None:
        n = doc_numbering(doc)
        fields.update(title=n.chapter_title, chapter=n.chapter, section=n.section, chapter_id=n.chapter_id,
                      chapter_title=n.chapter_title, module=n.module, week=n.week)
    if chunk is not None:
        fields.update(
            path=chunk.path,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            lines=f"{chunk.start_line}-{chunk.end_line}" if chunk.end_line != chunk.start_line else str(chunk.start_line),
            chunk_index=chunk.index,
            heading=chunk.heading_path[-1] if chunk.heading_path else "",
            heading_path=list(chunk.heading_path),
        )
    return fields


def render_citation(template: str | None, metadata: Mapping[str, Any] | None, chunk: "Chunk | None" = None,
                    doc: "Document | None" = None) -> str:
    """Fill ``template`` from the chunk's metadata (and position); empty parts vanish with their separator."""
    template = template or _DEFAULT_TEMPLATE
    values = citation_fields(chunk, doc)
    values.update({k: v for k, v in (metadata or {}).items()})
    rendered: list[tuple[str, bool]] = []
    any_field_value = False
    for text, is_sep, fields in _template_parts(template):
        if is_sep:
            rendered.append((text, True))
            continue
        fmt = FieldFormatter()
        try:
            out = fmt.vformat(text, (), values)
        except (ValueError, IndexError):  # a malformed template part is shown literally
            out = text
        if fields and fmt.empty_fields == len(fields):
            rendered.append(("", False))  # every field of this part is empty: drop the part's words too
            continue
        if fields:
            any_field_value = True
        rendered.append((out.strip(), False))
    if not any_field_value:
        return ""
    # Join the surviving parts: a separator stays only between two non-empty parts, and when a part between two
    # separators vanished the stronger separator stays: "Chapter 3, Section {empty}: Title" → "Chapter 3: Title",
    # "Source: Chapter {empty}, Section 2" → "Source: Section 2".
    out = ""
    pending_sep = ""
    for text, is_sep in rendered:
        if is_sep:
            if out and (not pending_sep or _strength(text) > _strength(pending_sep)):
                pending_sep = text
            continue
        if not text:
            continue
        out += (pending_sep if out else "") + text
        pending_sep = ""
    out = re.sub(r"\(\s*\)|\[\s*\]", "", out)
    return re.sub(r"\s{2,}", " ", out).strip()


@functools.lru_cache(maxsize=64)
def _template_parts(template: str) -> tuple[tuple[str, bool, tuple[str, ...]], ...]:
    """A template split into parts at its literal separators, each with the fields it names: parsed once per
    template, not once per chunk. "Chapter {chapter}, Section {section_number}: {t}" → "Chapter {chapter}",
    ", ", "Section {section_number}", ": ", "{t}"."""
    parts: list[tuple[str, bool]] = []  # (text, is_separator)
    buf = ""
    for literal, fname, spec, conv in string.Formatter().parse(template):
        pos = 0
        for m in _SEPARATOR.finditer(literal):
            if m.start() == m.end():
                continue
            buf += _escape(literal[pos:m.start()])
            parts.append((buf, False))
            parts.append((m.group(0), True))
            buf = ""
            pos = m.end()
        buf += _escape(literal[pos:])
        if fname is not None:
            buf += "{" + fname + ("!" + conv if conv else "") + (":" + spec if spec else "") + "}"
    parts.append((buf, False))
    return tuple((text, is_sep, () if is_sep else _field_names(text)) for text, is_sep in parts)


def _field_names(text: str) -> tuple[str, ...]:
    return tuple(f for _, f, _, _ in string.Formatter().parse(text) if f is not None)


def _strength(sep: str) -> int:
    """How strongly a separator divides a citation: a colon more than a breadcrumb arrow or dash, a comma least."""
    t = sep.strip()
    if t == ":":
        return 4
    if t in ("›", "»", "|", "·", "—", "–", "-"):
        return 3
    return 2 if t == ";" else 1


def _escape(literal: str) -> str:
    """Literal template text back into format syntax (parse() unescaped its doubled braces)."""
    return literal.replace("{", "{{").replace("}", "}}")


def loaded_paths(tree: "DocsTree") -> frozenset[str] | None:
    """The document paths of a partial load (indexing and answers keep to them); None for a whole tree.

    A partial load (one file of a tree) must not delete the points of the files it did not read.
    """
    return frozenset(d.path for d in tree.documents) if tree.partial else None


class Retriever:
    """A docs tree + a strategy + an embedder + a store: index once, then ask.

    Args:
        tree: the loaded docs tree.
        strategy: a configured strategy; its ``citation_template`` is the default citation format.
        embedder: the embedding model (loaded on first use).
        store: the vector store; the strategy's collection is selected on it.
        site_url: the published site (``https://example.org/docs``) for hit URLs; None gives routes only.
        citation_template: overrides the strategy's.
        tree_settings: how the tree was read (`chunkscope.retrieval.manifest.tree_settings`): given, a whole tree
            keeps a manifest of its collection, so indexing re-chunks only changed files and an unchanged tree
            answers from the store (`stored`).
        unread: indexed files unchanged on disk that ``tree`` does not hold (a tree read from its manifest,
            `chunkscope.retrieval.manifest.stored_tree`): never chunked, never taken as removed.
    """

    def __init__(self, tree: "DocsTree", strategy: "Strategy", embedder: "Embedder", store: Store,
                 site_url: str | None = None, *, citation_template: str | None = None,
                 search_mode: str = DEFAULT_SEARCH_MODE, tree_settings: Mapping[str, Any] | None = None,
                 unread: Collection[str] = (), reranker: "Reranker | None" = None) -> None:
        self.tree = tree
        self.strategy = strategy
        self.embedder = embedder
        self.store = store
        self.site_url = site_url
        #: dense, keyword or hybrid (`chunkscope.retrieval.search_modes`); the collection serves all three.
        self.search_mode = check_search_mode(search_mode)
        #: The rerank stage after the search (`chunkscope.retrieval.rerank`); None: the search's order is the answer.
        self.reranker = reranker
        self.citation_template = citation_template or getattr(strategy, "citation_template", None) or _DEFAULT_TEMPLATE
        # The tree's root owns the collection: another tree sharing the store has collections of its own.
        self.collection = store.use(strategy, embedder, owner=tree.root)
        self._chunks: list["Chunk"] | None = None
        self._docs: dict[str, "Document"] = {d.path: d for d in tree.documents}
        #: Each page's published URL by path (`url`), until the documents change (`invalidate`).
        self._page_urls: dict[str, str] = {}
        self.scope = loaded_paths(tree)
        self.last_report: IndexReport | None = None
        #: The documents the strategy could not chunk (`chunkscope.chunking.model.ChunkedDoc` with its ``error``).
        self.chunk_failures: list[Any] = []
        self.unread = frozenset(unread)
        self.manifest: ManifestFile | None = None
        if tree_settings is not None and not tree.partial:
            from chunkscope import __version__

            identity = {
                "collection": self.collection, "store": self.store.location, "model": embedder.model_id,
                "limit": getattr(embedder, "max_seq_length", None), "citation_template": self.citation_template,
                "site_url": site_url or "", "tree": dict(tree_settings), "chunkscope": __version__}
            contexts = getattr(strategy, "chunk_contexts", None)
            if contexts is not None:  # embed_prefix = "llm": contexts written since change the chunks' embed text
                identity["contexts"] = contexts.state()
            self.manifest = manifest_file(tree.root, identity)
        self._stored: Manifest | None = None
        self._stored_checked = False

    @property
    def chunks(self) -> list["Chunk"]:
        """Every chunk of the tree, documents in reading order (computed once). A document the strategy cannot
        chunk is left out and listed in `chunk_failures`; the rest are indexed and searched."""
        if self._chunks is None:
            from chunkscope.chunking.drivers import chunk_documents

            out: list["Chunk"] = []
            self.chunk_failures = []
            for r in chunk_documents(self.tree.documents, self.strategy):
                out.extend(r.chunks)
                if r.error:
                    self.chunk_failures.append(r)
            self._chunks = out
        return self._chunks

    def use_chunked(self, results: Sequence["ChunkedDoc"]) -> None:
        """Take the tree's chunks as the caller already cut them (`chunk_documents` of this tree's documents with
        this strategy, e.g. lint's), so `chunks` does not cut the tree a second time. Indexing fills in their
        ``embed_tokens`` where missing."""
        self._chunks = [c for r in results for c in r.chunks]
        self.chunk_failures = [r for r in results if r.error]

    def use_stored(self, stored: "StoredTree") -> None:
        """Take the tree as its manifest knows it (`chunkscope.retrieval.manifest.stored_tree`): the documents it
        read again, every other indexed file unread."""
        self.tree = stored.tree
        self.unread = stored.unread
        self.invalidate()

    def invalidate(self) -> None:
        """Documents changed (reloaded in the tree): chunk again on next use."""
        self._chunks = None
        self._docs = {d.path: d for d in self.tree.documents}
        self._page_urls.clear()
        self.scope = loaded_paths(self.tree)

    def citation(self, chunk: "Chunk") -> str:
        """The chunk's citation; when the template's fields are all missing, title › heading, else path:lines."""
        doc = self._docs.get(chunk.path)
        text = render_citation(self.citation_template, chunk.metadata, chunk, doc)
        if not text and self.citation_template != _DEFAULT_TEMPLATE:
            text = render_citation(_DEFAULT_TEMPLATE, chunk.metadata, chunk, doc)
        return text or render_citation("{path}:{lines}", {}, chunk, doc)

    def url(self, chunk: "Chunk") -> str:
        doc = self._docs.get(chunk.path)
        if doc is None:
            return ""
        page = self._page_urls.get(doc.path)
        if page is None:
            page = self._page_urls[doc.path] = page_url(self.site_url, doc)  # once per page, not per chunk
        return chunk_url(self.site_url, doc, chunk, page)

    def _extra(self, chunk: "Chunk") -> dict[str, Any]:
        return {"citation": self.citation(chunk), "url": self.url(chunk)}

    def stored(self) -> Manifest | None:
        """The collection's manifest when it can be trusted: written for this collection and settings, and the
        store holds as many points as it lists (a collection emptied or dropped elsewhere is indexed afresh)."""
        if self.manifest is not None and not self._stored_checked:
            m = self.manifest.load()
            if m is not None and (m.collection != self.collection
                                  or self.store.count(self.collection) != m.point_count):
                m = None
            self._stored, self._stored_checked = m, True
        return self._stored

    def in_step(self) -> IndexReport | None:
        """The index report of a collection its manifest vouches for from file stats alone, without reading,
        hashing or chunking a file; None when it cannot (then `ensure_indexed` compares the texts).

        It vouches when the tree holds exactly the files the manifest lists, each loaded at the stamp it was
        indexed at, nothing changed on disk since (`Manifest.changes`: stats only, recent writes counted as
        changes), and the tree's root, site and problems are those it was indexed with: the points are then those
        `ensure_indexed` would leave as they are. A question on an indexed tree then costs a few thousand
        ``stat`` calls, not a hash of every document (an app holds the whole tree loaded).
        """
        import os
        from pathlib import Path

        from chunkscope.chunking.model import ChunkedDoc
        from chunkscope.retrieval.manifest import site_dict

        m = self.stored()
        tree = self.tree
        if m is None or self.unread or tree.partial or len(m.files) != len(tree.documents):
            return None
        if m.root != str(Path(os.path.abspath(tree.root))) or m.site != site_dict(tree.site) \
                or list(tree.problems) != m.problems:
            return None
        for d in tree.documents:
            rec = m.files.get(d.path)
            if rec is None or rec.size < 0 or rec.mtime_ns != d.mtime_ns:
                return None
        if m.changes():
            return None
        report = IndexReport(collection=self.collection)
        failures: list[ChunkedDoc] = []
        for d in tree.documents:
            rec = m.files[d.path]
            report.chunks += rec.chunks
            report.unchanged += len(rec.points)
            report.truncated += rec.truncated
            if rec.error:
                failures.append(ChunkedDoc(d, [], rec.error))
        self.chunk_failures = failures
        self.last_report = report
        return report

    def filter_fields(self) -> set[str]:
        """Every key a payload filter may name: the payload's own fields and the strategy's metadata keys."""
        from chunkscope.retrieval.payload import chunk_payload

        m = self.stored()
        if m is not None:
            return m.fields()
        chunks = self.chunks
        known = set(chunk_payload(chunks[0])) if chunks else set()
        for c in chunks:
            known.update(c.metadata or {})
        return known

    def ensure_indexed(self, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None, *,
                       label: str = "") -> IndexReport:
        """Chunk every document and bring the collection in step (cheap when nothing changed). With a manifest
        (``tree_settings``), only documents that changed since the last pass are chunked and written.

        ``cancel`` is checked between batches of points; ``on_progress`` gets `Phase.INDEX` reports.
        """
        t0 = time.perf_counter()
        if self.manifest is not None:
            done = refresh(self.store, self.collection, self.tree, self.strategy, self.embedder, self.stored(),
                           self.manifest, unread=self.unread, extra=self._extra, on_progress=on_progress,
                           cancel=cancel, label=label or self.strategy.name)
            self._stored, self._stored_checked = done.manifest, True
            self.chunk_failures = done.failures
            done.report.seconds = time.perf_counter() - t0
            self.last_report = done.report
            return done.report
        chunks = self.chunks
        todo = [c for c in chunks if c.embed_tokens is None]
        if todo:
            # Word-piece counts go into the payload (a UI shows which chunks the model reads only partly).
            for c, n in zip(todo, self.embedder.count_tokens([c.embed_text for c in todo])):
                c.embed_tokens = n
        report = index_chunks(self.store, chunks, self.embedder, self.collection, on_progress=on_progress,
                              cancel=cancel, extra=self._extra, scope=self.scope, label=label or self.strategy.name)
        report.seconds = time.perf_counter() - t0
        self.last_report = report
        return report

    def rebuild(self) -> None:
        """Forget the indexed points, so the next `ensure_indexed` writes every one afresh: the whole collection
        for a whole tree, only the loaded files' points for a partial load (the rest of its tree stays)."""
        if self.manifest is not None:
            self.manifest.discard()
            self._stored, self._stored_checked = None, True
        if self.scope is None:
            self.store.drop(self.collection)
            self.store.ensure_collection(self.collection, self.embedder.dim)
        else:
            self.store.delete_paths(self.scope, self.collection)
        self.last_report = None

    def search(self, vector: "np.ndarray | None", k: int = 5, threshold: float | None = None,
               filters: Mapping[str, Any] | None = None, *, text: str | None = None) -> list[Hit]:
        """Best chunks of this tree (of the loaded files only, for a partial load) in this retriever's search
        mode: ``vector`` is the question's (dense, hybrid), ``text`` its words (keyword, hybrid).

        With a `reranker`, the search goes at least its depth deep, the reranker orders those candidates
        (`chunkscope.retrieval.rerank.Reranker.rerank`) and the first ``k`` of the new order are the answer.
        """
        rr = self.reranker
        depth = max(k, rr.spec.depth) if rr is not None else k
        hits = self.store.search(vector, depth, threshold, filters, collection=self.collection, paths=self.scope,
                                 mode=self.search_mode, text=text)
        if rr is None or text is None:
            return hits[:k]
        return list(rr.rerank(text, hits)[:k])

    def query(self, question: str, k: int = 5, threshold: float | None = None,
              filters: Mapping[str, Any] | None = None) -> list[Hit]:
        """The ``k`` best chunks for ``question``; those under ``threshold`` come back with ``kept=False``."""
        vec = None if self.search_mode == "keyword" else self.embedder.embed_query(question)
        return self.search(vec, k, threshold, filters, text=question)
