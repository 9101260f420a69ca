"""``index`` and ``query``: embed the chunks into Qdrant and ask questions (``eval`` lives in cmd_eval_tools)."""

from __future__ import annotations

import argparse
import json
import sys

from chunkscope.cli import Interrupted
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar
from chunkscope.cli.cmd_core import documents_exit
from chunkscope.cli.common import (
    add_docs_arg,
    add_strategy_args,
    console,
    load_context,
    snippet,
    strategies_from_args,
    visible,
)


def _add_store_args(p: argparse.ArgumentParser) -> None:
    """The flags every retrieval command shares: where the vectors live and which embedder makes them."""
    p.add_argument("--qdrant-url", metavar="URL",
                   help="a Qdrant server (default: the embedded local store; API key from QDRANT_API_KEY)")
    p.add_argument("--embedder", "--model", dest="embedder", metavar="MODEL",
                   help="all-MiniLM-L6-v2 (default, offline), st:PATH (a local sentence-transformers model) or "
                        "openai:MODEL (an OpenAI-compatible endpoint, see --embed-url); default: [embedder] model")
    p.add_argument("--embed-url", metavar="URL",
                   help="base URL of the openai: endpoint, e.g. http://localhost:11434/v1 for Ollama "
                        "(default: [embedder] url, else https://api.openai.com/v1; key from OPENAI_API_KEY or "
                        "[embedder] api_key_env)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="embed the chunks and store them in Qdrant (only what changed)")
    add_docs_arg(p)
    add_strategy_args(p)
    _add_store_args(p)
    p.add_argument("--rebuild", action="store_true", help="drop the collection and index from scratch")
    p.add_argument("--json", action="store_true", help="print the index report as JSON")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("query", help="ask a question: ranked chunks with scores, citations and URLs")
    add_docs_arg(p)
    p.add_argument("question", help="the question, as a chatbot user would type it")
    add_strategy_args(p)
    _add_store_args(p)
    p.add_argument("-k", type=int, default=None, help="how many chunks to retrieve (default 5)")
    p.add_argument("--threshold", type=float, default=None,
                   help="score threshold (default: [query] threshold, else the embedder's own: 0.7 for "
                        "text-embedding-3-small as in seed 004, 0.45 for all-MiniLM-L6-v2, measured)")
    add_search_arg(p)
    p.add_argument("--filter", action="append", metavar="KEY=VALUE",
                   help="payload filter, e.g. chapter_id=ch03 or path=intro.md: any metadata field of the strategy "
                        "(see `chunk --format jsonl`) or path, heading, chunk_index (repeatable: all must match)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_query)


# --- shared -----------------------------------------------------------------------------------------------------


def open_store(ctx, args):
    """The store: --qdrant-url, else [qdrant] url or path, else QDRANT_URL, else the tree's local store."""
    from chunkscope.retrieval.store import Store

    target = ctx.config.qdrant_target(getattr(args, "qdrant_url", None))
    return Store(ctx.tree.root, url=target.url, path=target.path, timeout=target.timeout)


def make_embedder(ctx, args, model: str | None = None):
    """The embedder: ``model`` (a grid's value), else --embedder, with --embed-url, over [embedder] (see
    `Config.embedder_spec`). The URL goes only to an endpoint: a grid may mix local models and endpoints."""
    from chunkscope.embedding.embedder import embedder_for

    name = model or getattr(args, "embedder", None)
    url = getattr(args, "embed_url", None)
    if name and not name.startswith("openai:"):
        url = None
    return embedder_for(ctx.config, name, url)


def add_search_arg(p: argparse.ArgumentParser, several: bool = False) -> None:
    more = ("; several, comma-separated, are compared side by side (also --grid search=dense,hybrid)"
            if several else "")
    p.add_argument("--search", metavar="MODE",
                   help="how questions are matched: dense (the embedder's vectors), keyword (BM25, scored by Qdrant) "
                        f"or hybrid (both, fused by reciprocal rank); default: [query] search, else dense{more}")


def search_mode(args, config, preset_search: str | None = None) -> str:
    """--search, else the preset's ``search`` (``ResolvedStrategy.search``), else ``[query] search``, else dense."""
    from chunkscope.cli.parsing import parse_search

    modes = parse_search(getattr(args, "search", None))
    return modes[0] if modes else (preset_search or config.search_mode)


def report_line(label: str, r) -> str:
    parts = [f"{label}: {r.chunks} chunks", f"{r.embedded} embedded", f"{r.cached} from cache",
             f"{r.upserted} written", f"{r.unchanged} unchanged", f"{r.deleted} deleted"]
    if r.truncated:
        parts.append(f"{r.truncated} longer than the model reads")
    line = ", ".join(parts) + f" in {r.seconds:.1f}s"
    if r.cancelled:
        line += " — stopped early; run again to finish"
    return line


def ensure_index(retriever, label: str, quiet: bool = False):
    """Index what is missing, with a progress bar and Ctrl-C as a stop; a document the strategy cannot chunk is
    one line on stderr (as `chunk` says it) and the rest is indexed."""
    with graceful_interrupt() as cancel, progress_bar(f"index {label}", quiet) as on_progress:
        report = retriever.ensure_indexed(on_progress, cancel)
    for r in retriever.chunk_failures:
        print(visible(f"{r.doc.path}: chunk-error: {r.error}", oneline=True), file=sys.stderr)
    return report


# --- index ------------------------------------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace) -> int:
    from chunkscope.retrieval.retriever import Retriever

    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    embedder = make_embedder(ctx, args)
    with open_store(ctx, args) as store:
        retriever = Retriever(ctx.tree, resolved.strategy, embedder, store, ctx.config.site_url or None,
                              citation_template=resolved.citation_template)
        if args.rebuild:
            retriever.rebuild()  # a single file: only its points; the rest of its tree stays indexed
        report = ensure_index(retriever, resolved.label, quiet=args.json)
        # The report is the command's output (stdout); progress and problems stay on stderr.
        if args.json:
            print(json.dumps(report.to_dict(), indent=2))
        else:
            print(report_line(resolved.label, report))
            print(f"collection {report.collection} in {store.location}")
        for w in embedder.warnings:
            print(f"chunkscope: warning: {visible(w, oneline=True)}", file=sys.stderr)
    if report.cancelled:
        raise Interrupted("indexing stopped; the points written so far are kept")
    return documents_exit(ctx.tree, retriever.chunk_failures)


# --- query ------------------------------------------------------------------------------------------------------


def _filters(items: list[str] | None) -> dict[str, str]:
    from chunkscope.cli.parsing import parse_filters

    return parse_filters(items or [])


def _check_query_args(args: argparse.Namespace) -> None:
    """Refuse what cannot mean anything before loading a model: no question, k below 1, a threshold no cosine
    score can reach."""
    from chunkscope.chunking.chunk import ParamError

    if not args.question.strip():
        raise ParamError("query: the question is empty")
    if args.k is not None and args.k < 1:
        raise ParamError(f"query: -k must be at least 1, got {args.k}")
    if args.threshold is not None and not -1.0 <= args.threshold <= 1.0:
        raise ParamError(f"query: --threshold must be between -1 and 1 (a cosine score), got {args.threshold}")


def _check_filter_keys(filters: dict[str, str], chunks) -> None:
    """A filter on a field no chunk has matches nothing: say so, with the fields there are."""
    from chunkscope.chunking.chunk import ParamError
    from chunkscope.retrieval.payload import chunk_payload

    if not filters or not chunks:
        return
    known = set(chunk_payload(chunks[0])) - {"meta_keys"}
    for c in chunks:
        known.update(c.metadata or {})
    unknown = [key for key in filters if key.split(".", 1)[0] not in known]
    if unknown:
        raise ParamError(f"--filter: no chunk has the field {unknown[0]!r}; fields: {', '.join(sorted(known))}")


def cmd_query(args: argparse.Namespace) -> int:
    from chunkscope.retrieval.retriever import Retriever

    _check_query_args(args)
    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    k = ctx.config.k if args.k is None else args.k
    filters = _filters(args.filter)
    embedder = make_embedder(ctx, args)
    threshold = args.threshold
    if threshold is None:
        threshold = ctx.config.threshold if ctx.config.threshold is not None else embedder.default_threshold
    mode = search_mode(args, ctx.config, resolved.search)
    if mode != "dense":
        threshold = None  # BM25 scores and fused ranks are not cosines: a cosine threshold means nothing there
    with open_store(ctx, args) as store:
        retriever = Retriever(ctx.tree, resolved.strategy, embedder, store, ctx.config.site_url or None,
                              search_mode=mode,
                              citation_template=resolved.citation_template)
        _check_filter_keys(filters, retriever.chunks)
        report = ensure_index(retriever, resolved.label, quiet=args.json)
        if report.embedded or report.deleted:
            if not args.json:
                print(report_line(resolved.label, report), file=sys.stderr)
        hits = retriever.query(args.question, k=k, threshold=threshold, filters=filters)
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2).translate(_ESC))
    else:
        print_hits(hits, args.question, threshold, resolved.label, filters)
    return documents_exit(ctx.tree, retriever.chunk_failures)


_ESC = {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}


def print_hits(hits, question: str, threshold: float | None, label: str, filters: dict[str, str] | None = None) -> None:
    from rich.text import Text

    con = console()
    con.print(Text(f"{label}: {len(hits)} results for ", style="dim") + Text(visible(question, oneline=True), style="bold"))
    shown_line = False
    for h in hits:
        if not h.kept and not shown_line:
            con.print(Text(f"── filtered out by threshold {threshold} " + "─" * 30, style="yellow"))
            shown_line = True
        style = "" if h.kept else "dim"
        head = Text(f"{h.rank:>2}. ", style=style) + Text(f"{h.score:.3f}", style="bold green" if h.kept else "dim")
        head += Text("  " + visible(h.citation or " › ".join(h.heading_path), oneline=True), style=style or "bold")
        # One line each, cut with an ellipsis at the terminal's width: wrapped, they lose their indent.
        where = f"    {visible(h.path, oneline=True)}:{h.start_line}"
        lines = [head, Text(where, style="cyan" if h.kept else "dim")]
        if h.url:
            lines.append(Text(f"    {visible(h.url, oneline=True)}", style="cyan" if h.kept else "dim"))
        lines.append(Text("    " + snippet(h.text, max(20, min(100, con.width - 5))), style=style))
        for line in lines:
            con.print(line, no_wrap=True, overflow="ellipsis")
    if hits and threshold is not None and not any(h.kept for h in hits):
        # Seed 004's 0.7 was set for text-embedding-3-small; smaller models score lower on the same texts.
        con.print(Text(f"all under the threshold {threshold}; if these answers are good, lower it (--threshold)",
                       style="yellow"))
    if not hits and filters:
        wanted = ", ".join(f"{k}={v}" for k, v in filters.items())
        con.print(Text(f"no chunk matches the filter {visible(wanted, oneline=True)}", style="yellow"))
    elif not hits:
        con.print(Text("no chunks in the index", style="yellow"))
