"""What the views show, computed off the UI thread: one file's chunks with embedder figures, the tree's counts.

Plain functions over the core, no Textual: workers call them and post the dataclasses they return. Every
failure of the core on one file (a strategy error, a missing tokenizer) is recorded on the result, never raised,
so one bad file leaves the rest of the app working.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.model import Chunk, count_embed_tokens
from chunkscope.config.reader import Config, ResolvedStrategy, resolve_strategy
from chunkscope.document.loader import Document, DocsTree, Problem, iter_doc_files, read_document
from chunkscope.chunking.reading import embed_cuts
from chunkscope.tui.headless.watcher import Snapshot, TreeChange

if TYPE_CHECKING:
    from chunkscope.chunking.cut_cache import CutCache


@dataclass(eq=False)
class FileResult:
    """One document cut by one strategy, with what the embedder makes of each chunk.

    Compared by identity: a view redraws when it receives a new result, never by comparing chunk lists.
    """

    doc: Document
    resolved: ResolvedStrategy
    chunks: list[Chunk]
    error: str | None = None
    #: chunk index -> absolute offset in ``doc.text`` where the embedding model stops reading.
    truncations: dict[int, int] = field(default_factory=dict)
    embed_error: str | None = None
    #: Lint findings located in this document (empty when lint failed on it).
    findings: list[Any] = field(default_factory=list)
    elapsed: float = 0.0
    #: False for the quick first result (chunks only); True once embedder figures and findings are in.
    complete: bool = False
    #: The chunks came from the cut cache (`chunking.cut_cache`): nothing was cut, no tokenizer was loaded.
    cached: bool = False

    @property
    def limit(self) -> int | None:
        return self.resolved.strategy.limits().max


@dataclass(eq=False)
class TreeEntry:
    """A document's chunk count and lint marks for the docs tree."""

    path: str
    chunks: list[Chunk]
    error: str | None = None
    lint_errors: int = 0
    lint_warnings: int = 0


@dataclass(eq=False)
class TreeResult:
    """Every document cut by one strategy (the tree's counts, the histogram, exports) and the tree's lint."""

    resolved: ResolvedStrategy
    entries: dict[str, TreeEntry]
    elapsed: float = 0.0
    #: ``lint.LintReport`` of the tree (None until it ran, or when it failed: ``lint_error`` says why).
    lint: Any = None
    lint_error: str | None = None

    @property
    def chunk_count(self) -> int:
        return sum(len(e.chunks) for e in self.entries.values())

    def token_counts(self) -> list[int]:
        return [c.tokens for e in self.entries.values() for c in e.chunks]


def resolve(config: Config, name: str, params: dict[str, Any] | None = None) -> ResolvedStrategy:
    """A strategy or preset by name with parameter overrides (raises the core's ParamError/UnknownStrategy).

    A strategy that embeds as it chunks (semantic) embeds with the configured embedder, made on first use: the
    one the query pane asks with, whatever parameters change (a re-cut never makes an embedder of its own)."""
    from chunkscope.embedding.sentence_vectors import configured_vectors

    resolved = resolve_strategy(config, name, params or None)
    configured_vectors(resolved.strategy, config)
    return resolved


def _safe_chunk(doc: Document, resolved: ResolvedStrategy) -> tuple[list[Chunk], str | None]:
    """The core's ``chunk_documents`` for one document; an unexpected exception becomes the error text."""
    try:
        cd = chunk_documents([doc], resolved.strategy)[0]
    except Exception as exc:  # noqa: BLE001 - a strategy bug on one file must not take the app down
        return [], f"{type(exc).__name__}: {exc}"
    return cd.chunks, cd.error


def chunk_file(doc: Document, resolved: ResolvedStrategy, config: Config, *, lint: bool = True) -> FileResult:
    """Cut one document and fill in what the file views show (embedder counts, truncation, findings)."""
    return complete_file(cut_file(doc, resolved), config, lint=lint)


def cut_file(doc: Document, resolved: ResolvedStrategy, cache: CutCache | None = None) -> FileResult:
    """The first, fast half of `chunk_file`: only the chunks (enough to draw the boundaries).

    With a ``cache``, an unchanged file's stored cut is given back (``cached``) and the file is not cut: a reopened
    tree shows its first file without loading a tokenizer. Reads files: call it off the UI thread.
    """
    t0 = time.perf_counter()
    if cache is not None:
        stored = cache.lookup(resolved.strategy, [doc]).get(doc.path)
        if stored is not None:
            return FileResult(doc, resolved, stored, elapsed=time.perf_counter() - t0, cached=True)
    chunks, error = _safe_chunk(doc, resolved)
    return FileResult(doc, resolved, chunks, error, elapsed=time.perf_counter() - t0)


def keep_cut(cache: CutCache, first: FileResult) -> None:
    """Store a file's fresh cut for the next start (`cut_file`'s result, before anything else changes its chunks).

    Only a cut that succeeded: an error may come from the environment (a missing tokenizer), not the file.
    """
    if first.cached or first.error is not None:
        return
    # Encoded here, not when cut: the file's chunks are on their way to the screen. `encode` checks that they come
    # back equal, so a chunk changed meanwhile (word-piece counts filled in) is skipped, never stored wrong.
    cache.keep_fresh(first.resolved.strategy, [(first.doc, first.chunks)])


def complete_file(first: FileResult, config: Config, *, lint: bool = True) -> FileResult:
    """The second half: word-piece counts, where the embedder stops reading, lint findings (a new result)."""
    t0 = time.perf_counter()
    res = FileResult(first.doc, first.resolved, first.chunks, first.error, complete=True)
    if res.chunks:
        try:
            spec = config.embedder_spec()
            count_embed_tokens(res.chunks, spec)
            res.truncations = embed_cuts(res.chunks, spec)
        except Exception as exc:  # noqa: BLE001 - a missing model folder only loses the embedder columns
            res.embed_error = str(exc)
    if lint:
        from chunkscope.lint import with_warnings  # in a worker, as in `file_findings`

        res.findings = file_findings(res.doc, res.chunks, res.resolved, config)
        # Lint never changes the chunks it is given: the result keeps copies marked with the findings' rule ids
        # (the chunk table's warnings column reads them).
        res.chunks = with_warnings(res.chunks, res.findings)
    res.elapsed = first.elapsed + time.perf_counter() - t0
    return res


def file_findings(doc: Document, chunks: list[Chunk], resolved: ResolvedStrategy, config: Config) -> list[Any]:
    """Lint findings of one document (`with_warnings` marks the chunks with them, as ``chunkscope chunk`` does).

    Empty when lint fails on this file: lint trouble must never hide the chunks (the tree run reports a bad
    ``[lint]`` configuration once).
    """
    if not chunks:
        return []
    from chunkscope.lint import lint_document  # in a worker: its rules pull in numpy, which the first paint does without

    try:
        return list(lint_document(doc, chunks, resolved, config))
    except Exception:  # noqa: BLE001
        return []


def chunk_tree(
    docs: list[Document],
    resolved: ResolvedStrategy,
    config: Config,
    cancelled: Callable[[], bool] = lambda: False,
    tree: Any = None,
    cache: CutCache | None = None,
) -> TreeResult | None:
    """Cut every document (for counts and the histogram), then lint the tree; None when cancelled half-way.

    Args:
        docs: the documents in load order.
        resolved: the strategy.
        config: configuration (lint settings).
        cancelled: polled between documents so a newer parameter change stops this run early.
        tree: the DocsTree, for lint (skipped when None).
        cache: stored cuts: unchanged files are taken from it, the others are cut and stored in it.
    """
    t0 = time.perf_counter()
    stored = cache.lookup(resolved.strategy, docs) if cache is not None else {}
    todo = [d for d in docs if d.path not in stored]
    from chunkscope.tokens import TIKTOKEN_NAMES, prepare  # here: the first frame does without the tokenizers

    if todo and resolved.strategy.length_tokenizer in TIKTOKEN_NAMES:
        prepare(todo, resolved.strategy.length_tokenizer)
    entries: dict[str, TreeEntry] = {}
    fresh: dict[str, list[Chunk]] = {}
    for doc in docs:
        if cancelled():
            return None
        chunks = stored.get(doc.path)
        if chunks is not None:
            entries[doc.path] = TreeEntry(doc.path, chunks)
            continue
        chunks, error = _safe_chunk(doc, resolved)
        entries[doc.path] = TreeEntry(doc.path, chunks, error)
        if cache is not None and error is None:
            fresh[doc.path] = chunks
    if cache is not None and fresh and not cancelled():
        # Before lint: lint's copies of the chunks carry its rule ids among their warnings, the cut's do not.
        cache.keep_fresh(resolved.strategy, [(d, fresh[d.path]) for d in docs if d.path in fresh],
                         keep={d.path for d in docs})
    result = TreeResult(resolved, entries)
    if tree is not None and not cancelled():
        from chunkscope.chunking.model import ChunkedDoc
        from chunkscope.lint import annotate_results, lint_tree  # in a worker, as in `file_findings`
        from chunkscope.progress import CancelToken, Cancelled

        try:
            results = [ChunkedDoc(d, entries[d.path].chunks, entries[d.path].error) for d in docs]
            report = lint_tree(tree, resolved, config, results=results, cancel=CancelToken(poll=cancelled))
        except Cancelled:
            return None
        except Exception as exc:  # noqa: BLE001 - a bad [lint] table: say so once, keep the counts
            result.lint_error = str(exc)
        else:
            result.lint = report
            # Lint leaves the chunks it is given alone: the entries take the copies marked with the findings' rule
            # ids (what the JSONL export writes as each chunk's warnings).
            for r in annotate_results(results, report):
                entries[r.doc.path].chunks = r.chunks
            for f in report.findings:
                e = entries.get(f.path)
                if e is None:
                    continue
                if f.severity == "error":
                    e.lint_errors += 1
                else:
                    e.lint_warnings += 1
    result.elapsed = time.perf_counter() - t0
    return result


@dataclass(eq=False)
class FilesChange:
    """Files that changed on disk, read off the UI thread and ready for `apply_files_change`."""

    change: TreeChange
    #: The scan this change brings the tree to (the watcher's next baseline).
    snapshot: Snapshot
    #: Every added, renamed-to and modified path, read: (the document or None, its problems).
    read: dict[str, tuple[Document | None, list[Problem]]]
    #: Reading order of every file when files came, went or moved (None: the order is unchanged).
    order: list[str] | None = None
    #: The folder walk's own problems (links out of the tree, unreadable folders) with that order.
    walk_problems: list[Problem] = field(default_factory=list)


def read_files_change(tree: DocsTree, change: TreeChange, snapshot: Snapshot, max_bytes: int,
                      ignore: list[str]) -> FilesChange:
    """Read what a change needs (new, moved and edited files; the reading order when files came or went)."""
    out = FilesChange(change, snapshot, {})
    for rel in (*change.added, *(new for _, new in change.renamed), *change.modified):
        if tree.published is not None and not tree.published(rel):
            continue  # a file Docusaurus does not publish (a partial): the loader left it out too
        doc, problems = read_document(tree.root / rel, rel, max_bytes)
        if doc is not None:
            doc.site = tree.site  # its URLs are the site's, as the loaded pages' are
        out.read[rel] = (doc, problems)
    if change.structural and not tree.single_file:
        files, out.walk_problems = iter_doc_files(tree.root, ignore, tree.published)
        out.order = [rel for _, rel in files]
        if tree.site is not None:
            # The walk gives the folders' order; a site's hand-written sidebar orders its pages as on first load.
            from chunkscope.site.sidebars import sidebar_ordered

            known = {d.path: d for d in list(tree.documents)}  # a copy: the UI thread owns the list
            pages = [d for rel in out.order
                     if (d := out.read[rel][0] if rel in out.read else known.get(rel)) is not None]
            ordered, _ = sidebar_ordered(pages, tree.site, tree.allow_code, partial=tree.partial)
            listed = {d.path for d in ordered}
            out.order = [d.path for d in ordered] + [rel for rel in out.order if rel not in listed]
    return out


def apply_files_change(tree: DocsTree, fc: FilesChange) -> None:
    """Bring the tree's documents and problems to what is on disk now (on the UI thread: workers copy
    ``tree.documents`` before they iterate it, and the list object itself is kept for whoever holds it)."""
    by_path = {d.path: d for d in tree.documents}
    gone = {*fc.change.removed, *(old for old, _ in fc.change.renamed)}
    for rel in gone:
        by_path.pop(rel, None)
    for rel, (doc, _) in fc.read.items():
        if doc is None:
            by_path.pop(rel, None)
        else:
            by_path[rel] = doc
    order = fc.order if fc.order is not None else [d.path for d in tree.documents] + list(fc.read)
    tree.documents[:] = [by_path[p] for p in dict.fromkeys(order) if p in by_path]
    touched = gone | set(fc.read)
    if fc.order is None:
        kept = [p for p in tree.problems if p.path not in touched]
    else:  # the walk's problems come fresh with the order; a file's problems stay while the file does
        listed = set(fc.order)
        kept = [p for p in tree.problems if p.path not in touched and p.path in listed] + fc.walk_problems
    tree.problems[:] = kept + [p for _, problems in fc.read.values() for p in problems]


def export_jsonl(result: TreeResult, docs: list[Document], config: Config, folder: Path) -> tuple[Path, int]:
    """Write every chunk of the tree as ``chunkscope chunk --format jsonl`` does; returns (file, chunk count)."""
    from chunkscope.safe_text import json_line

    chunks = [c for d in docs if d.path in result.entries for c in result.entries[d.path].chunks]
    try:
        count_embed_tokens(chunks, config.embedder_spec())
    except Exception:  # noqa: BLE001 - the export still holds everything else
        pass
    name = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in result.resolved.label).strip("-")
    path = folder / f"chunkscope-{name or 'chunks'}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for c in chunks:
            fh.write(json_line(c.to_dict()) + "\n")
    return path, len(chunks)


def chunk_citation(result: FileResult, chunk: Chunk) -> str:
    """The chunk's citation as retrieval renders it (the strategy's or the config's template)."""
    from chunkscope.retrieval.retriever import render_citation

    try:
        return render_citation(result.resolved.citation_template, chunk.metadata, chunk, result.doc)
    except Exception:  # noqa: BLE001 - a malformed template must not break the detail view
        return ""


def chunk_link(config: Config, result: FileResult, chunk: Chunk) -> str:
    """The published URL of the chunk (site_url + route + #anchor), as retrieval computes it."""
    from chunkscope.retrieval.retriever import chunk_url

    try:
        return chunk_url(config.site_url or None, result.doc, chunk)
    except Exception:  # noqa: BLE001
        return ""
