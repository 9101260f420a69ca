"""Running the rules: over one document (`lint_document`) or a whole tree (`lint_tree`).

For each document the runner builds one `LintContext`, runs the enabled rules whose inputs the run has, drops
what inline directives silence and sorts the findings by position. It never chunks a document that was handed
in chunked, and never changes the chunks: marking them with the findings is `annotate`'s separate step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.model import Chunk, ChunkedDoc
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import DEFAULT_MAX_BYTES, load_docs, marked_root_of
from chunkscope.progress import Phase, Progress
from chunkscope.lint.context import LintContext, LintRun
from chunkscope.lint.directives import read_directives
from chunkscope.lint.findings import ERROR, Finding, LintReport
from chunkscope.lint.registry import RULES
from chunkscope.lint.rules.duplicate import remember_pages
from chunkscope.lint.settings import lint_settings

if TYPE_CHECKING:
    from chunkscope.config.reader import Config
    from chunkscope.document.loader import DocsTree, Document
    from chunkscope.progress import CancelToken, ProgressFn
    from chunkscope.lint.context import ChunkEmbeddings
    from chunkscope.lint.rule import Rule


def _strategy_of(x: Any) -> Strategy:
    """A `Strategy` from a strategy or a `config.ResolvedStrategy`."""
    return x.strategy if not isinstance(x, Strategy) and hasattr(x, "strategy") else x


def run_rules(ctx: LintContext, rules: Iterable[Rule]) -> list[Finding]:
    """Every finding of ``rules`` in the context's document, rule after rule. A rule that needs an input the run
    does not have (`Rule.needs`, e.g. embeddings a plain ``lint`` never computes) is skipped, not failed."""
    have = ctx.inputs
    out: list[Finding] = []
    for rule in rules:
        if rule.needs <= have:
            out += rule.check(ctx)
    return out


def _lint_one(run: LintRun, doc: Document, chunks: Sequence[Chunk], strategy: Strategy) -> list[Finding]:
    """The enabled rules on one document's chunks, minus what its directives silence, sorted by position."""
    settings = run.settings
    enabled = settings.enabled - settings.ignored_for(doc.path)
    if not chunks or not enabled:
        return []
    directives = read_directives(doc)
    for line, rid in directives.unknown:
        run.notes.append(f"{run.display(doc.path)}:{line}: unknown rule {rid!r} in a chunkscope comment "
                         f"(rules: {', '.join(RULES)})")
    enabled = enabled - directives.file
    found = run_rules(LintContext(doc, chunks, strategy, run), [r for r in RULES.values() if r.id in enabled])
    if directives.ranges:
        found = [f for f in found if not directives.silences(f.rule, f.line)]
    for f in found:
        f.path = run.display(f.path)
    order = {rid: i for i, rid in enumerate(RULES)}  # ties at one position in registry order
    found.sort(key=lambda f: (f.line, f.column, order[f.rule]))
    return found


def lint_document(doc: Document, chunks: Sequence[Chunk], strategy: Any, cfg: Config | None = None, *,
                  embeddings: ChunkEmbeddings | None = None) -> list[Finding]:
    """Lint one document's chunks with the ``[lint]`` settings of ``cfg``; the chunks are left as they are.

    Duplicates are looked for within the document only (`lint_tree` looks across the tree). `with_warnings`
    gives the chunks marked with the findings' rule ids.
    """
    run = LintRun(lint_settings(cfg), cfg, embeddings=embeddings)
    return _lint_one(run, doc, chunks, _strategy_of(strategy))


def _is_marked_tree(tree: DocsTree) -> bool:
    """Whether a single file's tree has a marked root (`docs.marked_root_of`), not merely the file's own folder."""
    if not tree.documents:
        return False
    root = Path(tree.root)
    return marked_root_of(root / tree.documents[0].path) == root


def _earlier_pages(tree: DocsTree, strategy: Strategy, cfg: Config | None) -> list[ChunkedDoc]:
    """The chunks of the pages a whole-tree run reads before a file linted on its own."""
    loaded = {d.path for d in tree.documents}
    full = load_docs(tree.root, ignore=cfg.ignore if cfg is not None else (),
                     site=cfg.site if cfg is not None else None,
                     max_bytes=cfg.max_file_bytes if cfg is not None else DEFAULT_MAX_BYTES)
    first = next((i for i, d in enumerate(full.documents) if d.path in loaded), None)
    if first is None:  # the file is not a page of the tree as read now (ignored, or the tree was built by hand)
        return []
    return chunk_documents(full.documents[:first], strategy)


def lint_tree(tree: DocsTree, strategy: Any, cfg: Config | None = None, select: Iterable[str] | str | None = None,
              ignore: Iterable[str] | str | None = None, *, results: Sequence[ChunkedDoc] | None = None,
              display: Callable[[str], str] | None = None, cancel: CancelToken | None = None,
              on_progress: ProgressFn | None = None, embeddings: ChunkEmbeddings | None = None) -> LintReport:
    """Lint every document of a tree with one strategy (a `Strategy` or a `config.ResolvedStrategy`).

    Args:
        results: chunks already made for this tree and strategy (e.g. by the chunk command); when omitted the
            tree is chunked here, once. They are not changed (`annotate_results` marks copies).
        display: maps a document's path (relative to the docs root) to the path findings should show.
        cancel: asked between documents; once cancelled, the run ends with `progress.Cancelled`.
        on_progress: told after each document (`Phase.LINT`, counted in files).
        embeddings: the chunks' vectors, for rules that need them (skipped without).

    Raises:
        ConfigError: bad ``[lint]`` settings or an unknown rule in ``select``/``ignore``.
        Cancelled: ``cancel`` was cancelled.
    """
    strat = _strategy_of(strategy)
    settings = lint_settings(cfg, select, ignore)
    run = LintRun(settings, cfg, display, embeddings)
    if results is None:
        results = chunk_documents(tree.documents, strat)
    # Only a marked docs root is a tree of pages; a file's folder taken as its root may hold unrelated pages.
    if tree.partial and "duplicate" in settings.enabled and _is_marked_tree(tree):
        remember_pages(run, _earlier_pages(tree, strat, cfg))
    findings: list[Finding] = []
    by_doc: dict[str, list[Finding]] = {}
    failed: dict[str, str] = {}
    chunks_by_path: dict[str, list[Chunk]] = {}
    progress = Progress(Phase.LINT, 0, len(results), unit="files")
    for done, r in enumerate(results, 1):
        if cancel is not None:
            cancel.raise_if_cancelled("lint stopped")
        chunks_by_path[r.doc.path] = r.chunks
        if r.error:
            failed[r.doc.path] = r.error
        else:
            found = _lint_one(run, r.doc, r.chunks, strat)
            by_doc[r.doc.path] = found
            findings += found
        if on_progress is not None:
            on_progress(progress.advanced(done))
    by_rule = {rid: 0 for rid in RULES}
    for f in findings:
        by_rule[f.rule] += 1
    by_rule = {k: v for k, v in by_rule.items() if v}
    errors = sum(1 for f in findings if f.severity == ERROR)
    return LintReport(findings, by_rule, errors, len(findings) - errors, chunks_by_path, failed, run.notes, by_doc)
