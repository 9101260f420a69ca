"""A command's inputs: the configuration and the docs tree, the strategies the command line names, and the tree
chunked with per-file failures reported on stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkscope.config.reader import Config, ResolvedStrategy, load_config, resolve_strategy
from chunkscope.document.loader import DocsError, DocsTree, load_docs
from chunkscope.safe_text import visible
from chunkscope.cli.parsing import parse_param_args

if TYPE_CHECKING:
    from chunkscope.chunking.model import ChunkedDoc


@dataclass
class Context:
    """A command's loaded inputs."""

    config: Config
    tree: DocsTree


def load_config_for(args: argparse.Namespace) -> Config:
    """The configuration for ``args.docs`` (``--config`` when given): cheap, read before any tree or model."""
    return load_config(args.docs, getattr(args, "config", None), trust_tree=getattr(args, "trust_tree_config", False))


def load_context(args: argparse.Namespace, *, report_problems: bool = True, require_documents: bool = True) -> Context:
    """Config + docs tree; per-file problems go to stderr as ``path: code: message`` and work goes on.

    With ``require_documents``, a tree without a single readable Markdown file is a usage error (a mistyped docs
    folder must not pass a CI job as "0 files, 0 errors").
    """
    cfg = load_config_for(args)
    # A JS site config is code: Node runs it only where the user trusts the tree's config.
    tree = load_docs(args.docs, ignore=cfg.ignore, max_bytes=cfg.max_file_bytes, allow_code=cfg.trust_tree,
                     site=cfg.site)
    if report_problems:
        print_problems(tree)
    if require_documents and not tree.documents:
        if not report_problems:
            print_problems(tree)  # the reasons, before the one-line verdict
        what = "no file could be read" if tree.problems else "no .md or .mdx files found"
        raise DocsError(f"{args.docs}: {what}")
    return Context(cfg, tree)


def print_problems(tree: DocsTree) -> None:
    for line in [*tree.notes, *map(str, tree.problems)]:  # how the tree was read, then what could not be
        print(visible(line, oneline=True), file=sys.stderr)


def strategies_from_args(args: argparse.Namespace, cfg: Config) -> list[ResolvedStrategy]:
    names = args.strategy if isinstance(args.strategy, list) else [args.strategy]
    names = [n for n in names if n] or [None]
    params = parse_param_args(getattr(args, "param", None))
    resolved = [resolve_strategy(cfg, n, params) for n in names]
    # A strategy that embeds as it chunks (semantic) embeds with the command's embedder, made on first use and
    # shared by every strategy of the command line (and the app's re-cuts, when the command is the app).
    from chunkscope.embedding.sentence_vectors import configured_vectors

    model, url = getattr(args, "embedder", None), getattr(args, "embed_url", None)
    url = url if model is None or model.startswith("openai:") else None
    for r in resolved:
        configured_vectors(r.strategy, cfg, model, url)
    return resolved


def chunk_tree(tree: DocsTree, resolved: ResolvedStrategy, cfg=None, lint: bool = True) -> list[ChunkedDoc]:
    """Chunk every document; per-document failures are printed as problems and the rest goes on."""
    from chunkscope.chunking.drivers import chunk_documents  # here: the app's start-up does without the drivers

    results = chunk_documents(tree.documents, resolved.strategy)
    for r in results:
        if r.error:
            print(visible(f"{r.doc.path}: chunk-error: {r.error}", oneline=True), file=sys.stderr)
    if lint:
        from chunkscope.lint import annotate_results, lint_tree

        # One pass over the tree: duplicates are found across files (as `chunkscope lint` finds them); the
        # findings' rule ids land in the chunks' warnings (lint marks copies, never the chunks it was given).
        results = annotate_results(results, lint_tree(tree, resolved, cfg, results=results))
    return results


def require_chunked(results: Sequence[ChunkedDoc], docs: str, label: str) -> None:
    """Refuse a run in which the strategy chunked no document: nothing could be used (exit 2, as for a docs path
    with no Markdown), whatever the output format.

    Raises:
        DocsError: every document failed (each failure was reported on stderr by `chunk_tree`).
    """
    from chunkscope.document.loader import DocsError

    if results and all(r.error for r in results):
        raise DocsError(f"{docs}: {label} could chunk none of the {len(results)} files (each problem is listed above)")
