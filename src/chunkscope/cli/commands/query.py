"""``chunkscope query``: ask a question of the local index; ranked chunks with scores, citations and URLs.

Citations are never cut: a ``path:line`` and a URL are printed whole on lines of their own at any width (a cut URL
looks like a link and is wrong); only the snippet is wrapped to the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from chunkscope.chunking.params import ParamError
from chunkscope.safe_text import snippet, visible
from chunkscope.wording import plural
from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import load_config_for, strategies_from_args
from chunkscope.cli.exits import documents_exit
from chunkscope.cli.options import (
    add_docs_arg,
    add_json_arg,
    add_parent_arg,
    add_rerank_args,
    add_search_arg,
    add_store_args,
    add_strategy_args,
)
from chunkscope.cli.output import console, print_wrapped
from chunkscope.cli.parsing import parse_filters

if TYPE_CHECKING:
    from chunkscope.retrieval.store import Hit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("query", help="ask a question: ranked chunks with scores, citations and URLs")
    add_docs_arg(p)
    p.add_argument("question", help="the question, as a chatbot user would type it")
    add_strategy_args(p)
    add_store_args(p)
    p.add_argument("-k", type=int, default=None, help="how many chunks to retrieve (default 5)")
    p.add_argument("--threshold", type=float, default=None,
                   help="score threshold (default: [query] threshold, else the embedder's own: 0.7 for "
                        "text-embedding-3-small as in seed 004, 0.45 for all-MiniLM-L6-v2, measured)")
    add_search_arg(p)
    add_rerank_args(p)
    add_parent_arg(p)
    p.add_argument("--filter", action="append", metavar="KEY=VALUE",
                   help="payload filter, e.g. chapter_id=ch03 or path=intro.md: any metadata field of the strategy "
                        "(see `chunk --format jsonl`) or path, heading, chunk_index (repeatable: all must match)")
    add_json_arg(p)
    p.set_defaults(func=cmd_query)


def _check_query_args(args: argparse.Namespace) -> None:
    """Refuse what cannot mean anything before loading a model: no question, k below 1, a threshold no cosine
    score can reach."""
    if not args.question.strip():
        raise ParamError("query: the question is empty")
    if args.k is not None and args.k < 1:
        raise ParamError(f"query: -k must be at least 1, got {args.k}")
    if args.threshold is not None and not -1.0 <= args.threshold <= 1.0:
        raise ParamError(f"query: --threshold must be between -1 and 1 (a cosine score), got {args.threshold}")


def _check_filter_keys(filters: dict[str, str], fields: set[str]) -> None:
    """A filter on a field no chunk has matches nothing: say so, with the fields there are (``fields``:
    `Retriever.filter_fields`)."""
    if not filters or not fields:
        return
    known = fields - {"meta_keys"}
    unknown = [key for key in filters if key.split(".", 1)[0] not in known]
    if unknown:
        raise ParamError(f"--filter: no chunk has the field {unknown[0]!r}; fields: {', '.join(sorted(known))}")


def cmd_query(args: argparse.Namespace) -> int:
    _check_query_args(args)
    config = load_config_for(args)
    resolved = strategies_from_args(args, config)[0]
    k = config.k if args.k is None else args.k
    filters = parse_filters(args.filter or [])
    mode = retrieval_setup.search_mode(args, config, resolved.search)
    parent = retrieval_setup.parent_spec(args, config, resolved.parent)
    reranker = retrieval_setup.make_reranker(config, args)  # a bad spec fails before the tree is read
    # An indexed, unchanged tree answers from its manifest and the store: no file is loaded or chunked.
    with retrieval_setup.indexed_retriever(args, config, resolved, mode) as (ctx, retriever):
        embedder = retriever.embedder
        threshold = args.threshold
        if threshold is None:
            threshold = ctx.config.threshold if ctx.config.threshold is not None else embedder.default_threshold
        if mode != "dense":
            threshold = None  # BM25 scores and fused ranks are not cosines: a cosine threshold means nothing there
        if filters:  # before any embedding: from the manifest when there is one, else from the tree's chunks
            _check_filter_keys(filters, retriever.filter_fields())
        report = retrieval_setup.ensure_index(retriever, resolved.label, quiet=args.json)
        if report.embedded or report.deleted:
            if not args.json:
                print(retrieval_setup.report_line(resolved.label, report), file=sys.stderr)
        retriever.reranker = reranker
        try:
            hits = retriever.query(args.question, k=k, threshold=threshold, filters=filters)
        finally:
            if reranker is not None:
                reranker.close()
        if parent.active:
            # The chunks were searched; the parents answer, each once (small-to-big, auto-merging).
            from chunkscope.retrieval.parents import ParentResolver

            resolver = ParentResolver.of_tree(parent, retriever.tree, retriever.strategy.counter,
                                              ctx.config.max_file_bytes)
            hits = list(resolver.merge(hits))
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2).translate(_ESC))
    else:
        label = resolved.label if not parent.active else f"{resolved.label} · parent={parent.label}"
        print_hits(hits, args.question, threshold, label, filters)
    return documents_exit(ctx.tree, retriever.chunk_failures)


_ESC = {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}


#: How many lines of a hit's text the preview may take.
SNIPPET_LINES = 2


def print_hits(hits: Sequence[Hit], question: str, threshold: float | None, label: str,
               filters: dict[str, str] | None = None) -> None:
    """The ranked hits: rank, score and citation; ``path:line`` and URL each whole on a line of their own (never
    cut, never wrapped: a terminal, copy and grep see them as they are); the text's preview wrapped under them."""
    from rich.text import Text

    from chunkscope.retrieval.parents import ParentHit
    from chunkscope.retrieval.rerankers.base import RerankedHit

    con = console()
    con.print(Text(f"{label}: {plural(len(hits), 'result')} for ", style="dim") + Text(visible(question, oneline=True), style="bold"))
    shown_line = False
    preview = max(20, min(160, SNIPPET_LINES * (con.width - 4)))
    for h in hits:
        if not h.kept and not shown_line:
            con.print(Text(f"── filtered out by threshold {threshold} " + "─" * 30, style="yellow"))
            shown_line = True
        style = "" if h.kept else "dim"
        head = Text(f"{h.rank:>2}. ", style=style) + Text(f"{h.score:.3f}", style="bold green" if h.kept else "dim")
        if isinstance(h, RerankedHit) and h.rerank_score is not None:
            head += Text(f" (search #{h.search_rank} {h.search_score:.3f})", style="dim")
        head += Text("  " + visible(h.citation or " › ".join(h.heading_path), oneline=True), style=style or "bold")
        cite_style = "cyan" if h.kept else "dim"
        citations = [head, Text(f"    {visible(h.path, oneline=True)}:{h.start_line}", style=cite_style)]
        if h.url:
            citations.append(Text(f"    {visible(h.url, oneline=True)}", style=cite_style))
        # soft_wrap: printed as they are, however long; a cut URL ("#practical-implementat…") looks like a link
        # and is wrong.
        if isinstance(h, ParentHit):
            found = ", ".join(f"#{c.rank} line {c.start_line}" for c in h.children)
            citations.append(Text(f"    {h.parent} lines {h.start_line}-{h.end_line}, found by "
                                  f"{len(h.children)} chunk{'s' if len(h.children) != 1 else ''}: {found}",
                                  style="dim"))
        for line in citations:
            con.print(line, soft_wrap=True)
        # The preview wraps at the terminal's width, each line under the citation's indent.
        print_wrapped(con, Text(snippet(h.text, preview), style=style), 4)
    if hits and threshold is not None and not any(h.kept for h in hits):
        # Seed 004's 0.7 was set for text-embedding-3-small; smaller models score lower on the same texts.
        con.print(Text(f"all under the threshold {threshold}; if these answers are good, lower it (--threshold)",
                       style="yellow"))
    if not hits and filters:
        wanted = ", ".join(f"{k}={v}" for k, v in filters.items())
        con.print(Text(f"no chunk matches the filter {visible(wanted, oneline=True)}", style="yellow"))
    elif not hits:
        con.print(Text("no chunks in the index", style="yellow"))
