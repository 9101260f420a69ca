"""``chunkscope index``: embed the chunks and store them in Qdrant (only what changed)."""

from __future__ import annotations

import argparse
import json

from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import load_config_for, strategies_from_args
from chunkscope.cli.exits import Interrupted, documents_exit
from chunkscope.cli.options import add_docs_arg, add_store_args, add_strategy_args
from chunkscope.cli.output import warn


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="embed the chunks and store them in Qdrant (only what changed)")
    add_docs_arg(p)
    add_strategy_args(p)
    add_store_args(p)
    p.add_argument("--rebuild", action="store_true", help="drop the collection and index from scratch")
    p.add_argument("--json", action="store_true", help="print the index report as JSON")
    p.set_defaults(func=cmd_index)


def cmd_index(args: argparse.Namespace) -> int:
    config = load_config_for(args)
    resolved = strategies_from_args(args, config)[0]
    # The tree's manifest says which files changed: only those are read again (a rebuild reads every one).
    with retrieval_setup.indexed_retriever(args, config, resolved, stored=not args.rebuild) as (ctx, retriever):
        store, embedder = retriever.store, retriever.embedder
        if args.rebuild:
            retriever.rebuild()  # a single file: only its points; the rest of its tree stays indexed
        report = retrieval_setup.ensure_index(retriever, resolved.label, quiet=args.json)
        # The report is the command's output (stdout); progress and problems stay on stderr.
        if args.json:
            print(json.dumps(report.to_dict(), indent=2))
        else:
            print(retrieval_setup.report_line(resolved.label, report))
            print(f"collection {report.collection} in {store.location}")
        for w in embedder.warnings:
            warn(w)
    if report.cancelled:
        raise Interrupted("indexing stopped; the points written so far are kept")
    return documents_exit(ctx.tree, retriever.chunk_failures)
