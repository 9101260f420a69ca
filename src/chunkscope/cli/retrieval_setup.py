"""What the retrieval commands set up alike: the store, the embedder, the search mode, and indexing with progress.

Commands call these through the module (``retrieval_setup.make_embedder(...)``), so a test puts a stand-in
embedder in one place for every command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.chunking.params import ParamError
from chunkscope.safe_text import visible
from chunkscope.cli.output import warn
from chunkscope.cli.parsing import parse_search
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar

if TYPE_CHECKING:
    from chunkscope.config.reader import Config, ResolvedStrategy
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.parents import ParentSpec
    from chunkscope.retrieval.rerankers.base import Reranker
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import IndexReport, Store
    from chunkscope.cli.context import Context


def open_store(ctx: Context, args: argparse.Namespace) -> Store:
    """The store: --qdrant-url, else [qdrant] url or path, else QDRANT_URL, else the tree's local store."""
    return _store_at(ctx.config, args, ctx.tree.root)


def _store_at(config: Config, args: argparse.Namespace, root: str | os.PathLike[str]) -> Store:
    from chunkscope.retrieval.store import Store

    target = config.qdrant_target(getattr(args, "qdrant_url", None))
    return Store(root, url=target.url, path=target.path, timeout=target.timeout, api_key_env=target.api_key_env,
                 engine=target.engine, on_notice=warn)


@contextmanager
def indexed_retriever(args: argparse.Namespace, config: Config, resolved: ResolvedStrategy,
                      mode: str | None = None, *, stored: bool = True) -> Iterator[tuple[Context, Retriever]]:
    """The tree's retriever, its store (opened first: a tree in use by another process is said before the model
    loads) and embedder, keeping the collection's manifest (`chunkscope.retrieval.manifest`).

    With ``stored``, an indexed tree whose manifest vouches that no file came, went or moved is not loaded: only
    files whose stamp moved are read again, and the answers come from the store. Any other tree is loaded whole;
    indexing still re-chunks only the files that changed.
    """
    from chunkscope.cli.context import Context, load_context, print_problems
    from chunkscope.document.loader import DocsTree
    from chunkscope.retrieval.manifest import expected_root, stored_tree, tree_settings
    from chunkscope.retrieval.retriever import Retriever

    settings = tree_settings(config)
    extra: dict[str, Any] = {"search_mode": mode} if mode else {}
    root = expected_root(args.docs) if stored else None
    store: Store | None = None
    try:
        if root is not None:
            store = _store_at(config, args, root)
            ctx = Context(config, DocsTree(root=root, documents=[], problems=[]))
            embedder = make_embedder(ctx, args)
            retriever = Retriever(ctx.tree, resolved.strategy, embedder, store, config.site_url or None,
                                  citation_template=resolved.citation_template, tree_settings=settings, **extra)
            m = retriever.stored()
            known = stored_tree(m, config.max_file_bytes) if m is not None and m.files \
                and m.root == os.path.abspath(root) else None
            if known is not None:
                retriever.use_stored(known)
                ctx.tree = known.tree
                print_problems(ctx.tree)
                yield ctx, retriever
                return
        ctx = load_context(args)
        if store is None or Path(os.path.abspath(ctx.tree.root)) != Path(os.path.abspath(root or "")):
            if store is not None:
                store.close()
                store = None
            store = open_store(ctx, args)
        embedder = make_embedder(ctx, args)
        yield ctx, Retriever(ctx.tree, resolved.strategy, embedder, store, config.site_url or None,
                             citation_template=resolved.citation_template, tree_settings=settings, **extra)
    finally:
        if store is not None:
            store.close()


def make_embedder(ctx: Context, args: argparse.Namespace, model: str | None = None) -> Embedder:
    """The embedder: ``model`` (a grid's value), else --embedder, with --embed-url, over [embedder] (see
    `Config.embedder_spec`). The URL goes only to an endpoint: a grid may mix local models and endpoints.

    The process's embedder of that configuration (`shared_embedder`): a ``semantic`` strategy of the same
    configuration embeds its sentences with it, so ``query -s semantic`` loads the model once, not twice."""
    from chunkscope.embedding.sentence_vectors import shared_embedder

    name = model or getattr(args, "embedder", None)
    url = getattr(args, "embed_url", None)
    if name and not name.startswith("openai:"):
        url = None
    return shared_embedder(ctx.config, name, url)


def make_reranker(config: Config, args: argparse.Namespace) -> Reranker | None:
    """The rerank stage: --rerank, --rerank-url, --rerank-depth over ``[rerank]``; None when none is named."""
    from chunkscope.retrieval.rerank import make_reranker as reranker_for

    depth = getattr(args, "rerank_depth", None)
    if depth is not None and depth < 1:
        raise ParamError(f"--rerank-depth must be at least 1, got {depth}")
    spec = config.reranker(getattr(args, "rerank", None), getattr(args, "rerank_url", None), depth)
    return reranker_for(spec) if spec is not None else None


def parent_spec(args: argparse.Namespace, config: Config, preset_parent: str | None = None) -> ParentSpec:
    """--parent, else the preset's ``parent`` (``ResolvedStrategy.parent``), else ``[retrieval] parent``, else
    none."""
    from chunkscope.retrieval.parents import ParentError

    given = getattr(args, "parent", None)
    try:
        return config.parent(given, preset_parent)
    except ParentError as exc:
        raise ParamError(f"--parent: {exc}" if given else str(exc)) from None


def search_mode(args: argparse.Namespace, config: Config, preset_search: str | None = None) -> str:
    """--search, else the preset's ``search`` (``ResolvedStrategy.search``), else ``[query] search``, else dense."""
    modes = parse_search(getattr(args, "search", None))
    return modes[0] if modes else (preset_search or config.search_mode)


def report_line(label: str, r: IndexReport) -> str:
    """One line of what indexing did."""
    embedded = f"{r.embedded} embedded" + (f" on {r.device}" if r.embedded and r.device else "")
    parts = [f"{label}: {r.chunks} chunks", embedded, f"{r.cached} from cache",
             f"{r.upserted} written", f"{r.unchanged} unchanged", f"{r.deleted} deleted"]
    if r.truncated:
        parts.append(f"{r.truncated} longer than the model reads")
    line = ", ".join(parts) + f" in {r.seconds:.1f}s"
    if r.cancelled:
        line += " — stopped early; run again to finish"
    return line


def ensure_index(retriever: Retriever, label: str, quiet: bool = False) -> IndexReport:
    """Index what is missing, with a progress bar and Ctrl-C as a stop; a document the strategy cannot chunk is
    one line on stderr (as `chunk` says it) and the rest is indexed."""
    with graceful_interrupt() as cancel, progress_bar(f"index {label}", quiet) as on_progress:
        report = retriever.ensure_indexed(on_progress, cancel)
    for r in retriever.chunk_failures:
        print(visible(f"{r.doc.path}: chunk-error: {r.error}", oneline=True), file=sys.stderr)
    return report
