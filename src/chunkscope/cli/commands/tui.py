"""``chunkscope [DOCS]``: open the explorer app (Textual is imported only here and in ``chunkscope.tui``)."""

from __future__ import annotations

import argparse

from chunkscope.chunking.params import ParamError
from chunkscope.retrieval.search_modes import SEARCH_MODES
from chunkscope.cli.context import load_context, strategies_from_args
from chunkscope.cli.options import add_docs_arg, add_rerank_args, add_strategy_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the explorer (the default: `chunkscope DOCS`)")
    add_docs_arg(p, optional=True)
    add_strategy_args(p)
    p.add_argument("--embedder", metavar="MODEL", help="the embedding model for questions (as for query)")
    p.add_argument("--embed-url", metavar="URL", help="the endpoint of an openai: embedder")
    p.add_argument("--search", choices=SEARCH_MODES, help="how questions are matched (ctrl+s in the app cycles)")
    p.add_argument("--threshold", type=float, help="score threshold (default: the embedder's own; ctrl+t in the app)")
    add_rerank_args(p)
    p.add_argument("--queries", metavar="FILE",
                   help="labelled questions, as for eval (JSONL or YAML): the evaluation views (v, V) add eval's "
                        "metrics and misses on them")
    p.set_defaults(func=cmd_tui)


def cmd_tui(args: argparse.Namespace) -> int:
    queries = []
    if args.queries:
        from chunkscope.evaluation.queries import load_queries  # only with --queries: start-up does without it

        # A bad queries file is one line now, as for eval: before the tree is read, not when a view first needs it.
        queries = load_queries(args.queries)
    ctx = load_context(args, report_problems=False, require_documents=False)
    if args.threshold is not None and not -1.0 <= args.threshold <= 1.0:
        raise ParamError(f"--threshold must be between -1 and 1 (a cosine score), got {args.threshold}")
    if args.rerank_depth is not None and args.rerank_depth < 1:
        raise ParamError(f"--rerank-depth must be at least 1, got {args.rerank_depth}")
    config = ctx.config.with_command_line(embedding__model=args.embedder, embedding__url=args.embed_url,
                                          query__search=args.search, query__threshold=args.threshold,
                                          rerank__model=args.rerank, rerank__url=args.rerank_url,
                                          rerank__depth=args.rerank_depth)
    config.embedder_spec()  # a bad --embedder or --embed-url is one line now, not at the first question
    config.reranker()  # likewise a reranker that cannot be named (the query pane applies it after the search)
    resolved = strategies_from_args(args, config)[0]
    from chunkscope.tui.app import run_app

    return run_app(ctx.tree, config, resolved, queries=queries, queries_name=args.queries or "")
