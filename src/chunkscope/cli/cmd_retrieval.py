"""``index``, ``query`` and ``eval``: embed the chunks into Qdrant, ask questions, score strategies on labels."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from . import Interrupted
from .cmd_core import documents_exit
from .common import (
    EXIT_FINDINGS,
    add_docs_arg,
    add_strategy_args,
    console,
    json_line,
    load_context,
    snippet,
    strategies_from_args,
    visible,
)


def _add_store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qdrant-url", metavar="URL",
                   help="a Qdrant server (default: the embedded local store; API key from QDRANT_API_KEY)")
    p.add_argument("--model", metavar="NAME", help="embedding model name or local folder (default all-MiniLM-L6-v2)")


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
    p.add_argument("--threshold", type=float, default=None, help="score threshold (default 0.7, seed 004)")
    p.add_argument("--filter", action="append", metavar="KEY=VALUE",
                   help="payload filter, e.g. chapter_id=ch03 or path=intro.md: any metadata field of the strategy "
                        "(see `chunk --format jsonl`) or path, heading, chunk_index (repeatable: all must match)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("eval", help="hit@k, MRR, recall@k, nDCG@k per strategy on labelled queries")
    add_docs_arg(p)
    p.add_argument("queries", metavar="QUERIES", help="JSONL or YAML: {query, expect: {path, heading|anchor|text}}")
    add_strategy_args(p, multiple=True)
    _add_store_args(p)
    p.add_argument("-k", default="1,3,5,10", metavar="K,K,...", help="cut-offs (default 1,3,5,10)")
    p.add_argument("--threshold", type=float, default=None, help="score threshold (default from config, else none)")
    p.add_argument("--fail-under", action="append", metavar="METRIC=VALUE",
                   help="exit 1 when a strategy scores under the bar, e.g. hit@5=0.8 (repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_eval)


# --- shared -----------------------------------------------------------------------------------------------------


def open_store(ctx, args):
    """The store: --qdrant-url, else [qdrant] url or path, else QDRANT_URL, else the tree's local store."""
    from ..store import Store

    target = ctx.config.qdrant_target(getattr(args, "qdrant_url", None))
    return Store(ctx.tree.root, url=target.url, path=target.path, timeout=target.timeout)


def make_embedder(ctx, args):
    from ..embed import Embedder

    return Embedder(getattr(args, "model", None) or ctx.config.embed_model, device=ctx.config.embedding.get("device"))


@contextmanager
def graceful_interrupt() -> Iterator[threading.Event]:
    """First Ctrl-C asks the work to stop after the current batch (the store stays consistent); a second one
    interrupts at once."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):  # noqa: ANN001 - signal handler signature
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("\nchunkscope: stopping after this batch (Ctrl-C again to abort)…", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def index_progress(label: str, quiet: bool = False):
    """A rich progress bar on stderr: points written, embedded vs cached, rate and ETA."""
    if quiet or not sys.stderr.isatty():
        yield lambda done, total, stats: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from .common import console as make_console

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"), TimeRemainingColumn(),
        console=make_console(sys.stderr), transient=True,
    )
    task = progress.add_task(f"indexing {label}", total=None, detail="")

    def on_progress(done: int, total: int, stats: dict[str, Any]) -> None:
        detail = ", ".join(f"{k} {stats[k]}" for k in ("embedded", "cached", "deleted") if k in stats)
        if "rate" in stats:
            detail += f", {stats['rate']:.1f}/s"
        progress.update(task, completed=done, total=total or None, detail=detail)

    with progress:
        yield on_progress


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
    with graceful_interrupt() as stop, index_progress(label, quiet) as on_progress:
        return retriever.ensure_indexed(on_progress, stop.is_set)


# --- index ------------------------------------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace) -> int:
    from ..retrieval import Retriever

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
    return documents_exit(ctx.tree)


# --- query ------------------------------------------------------------------------------------------------------


def _filters(items: list[str] | None) -> dict[str, str]:
    from .parsing import parse_filters

    return parse_filters(items or [])


def _check_query_args(args: argparse.Namespace) -> None:
    """Refuse what cannot mean anything before loading a model: no question, k below 1, a threshold no cosine
    score can reach."""
    from ..chunk import ParamError

    if not args.question.strip():
        raise ParamError("query: the question is empty")
    if args.k is not None and args.k < 1:
        raise ParamError(f"query: -k must be at least 1, got {args.k}")
    if args.threshold is not None and not -1.0 <= args.threshold <= 1.0:
        raise ParamError(f"query: --threshold must be between -1 and 1 (a cosine score), got {args.threshold}")


def _check_filter_keys(filters: dict[str, str], chunks) -> None:
    """A filter on a field no chunk has matches nothing: say so, with the fields there are."""
    from ..chunk import ParamError
    from ..payload import chunk_payload

    if not filters or not chunks:
        return
    known = set(chunk_payload(chunks[0])) - {"meta_keys"}
    for c in chunks:
        known.update(c.metadata or {})
    unknown = [key for key in filters if key.split(".", 1)[0] not in known]
    if unknown:
        raise ParamError(f"--filter: no chunk has the field {unknown[0]!r}; fields: {', '.join(sorted(known))}")


def cmd_query(args: argparse.Namespace) -> int:
    from ..retrieval import Retriever

    _check_query_args(args)
    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    k = ctx.config.k if args.k is None else args.k
    threshold = ctx.config.threshold if args.threshold is None else args.threshold
    filters = _filters(args.filter)
    embedder = make_embedder(ctx, args)
    with open_store(ctx, args) as store:
        retriever = Retriever(ctx.tree, resolved.strategy, embedder, store, ctx.config.site_url or None,
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
    return documents_exit(ctx.tree)


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


# --- eval -------------------------------------------------------------------------------------------------------


def _parse_ks(text: str) -> list[int]:
    from ..chunk import ParamError

    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ParamError(f"-k {text!r}: expected numbers like 1,3,5,10") from None
    if not ks or ks[0] < 1:
        raise ParamError(f"-k {text!r}: cut-offs must be positive")
    return ks


def _parse_bars(items: list[str] | None) -> dict[str, float]:
    from ..chunk import ParamError

    bars: dict[str, float] = {}
    for item in items or []:
        if "=" not in item:
            raise ParamError(f"--fail-under {item!r}: expected metric=value, e.g. hit@5=0.8")
        m, v = item.split("=", 1)
        try:
            bars[m.strip()] = float(v)
        except ValueError:
            raise ParamError(f"--fail-under {item!r}: {v!r} is not a number") from None
    return bars


def cmd_eval(args: argparse.Namespace) -> int:
    from ..chunk import ParamError
    from ..evaluate import evaluate, load_queries

    ctx = load_context(args)
    ks = _parse_ks(args.k)
    bars = _parse_bars(args.fail_under)
    queries = load_queries(args.queries)
    resolved = strategies_from_args(args, ctx.config)
    threshold = args.threshold if args.threshold is not None else ctx.config.query.get("threshold")
    embedder = make_embedder(ctx, args)
    with open_store(ctx, args) as store:
        with graceful_interrupt() as stop, index_progress("eval", quiet=args.json) as on_progress:
            results = evaluate(
                ctx.tree, [(r.label, r.strategy) for r in resolved], queries, ks=ks, threshold=threshold,
                embedder=embedder, store_factory=lambda label, strategy: _SharedStore(store), on_progress=on_progress,
                should_stop=stop.is_set, site_url=ctx.config.site_url or None,
            )
    for metric in bars:
        if results and metric not in results[0].metrics:
            raise ParamError(f"--fail-under: unknown metric {metric!r} (have {', '.join(results[0].metrics)})")
    failed = [(r.strategy_label, m, r.metrics[m], bar) for r in results for m, bar in bars.items() if r.metrics[m] < bar]
    if args.json:
        out = {"results": [r.to_dict() for r in results],
               "failed": [{"strategy": s, "metric": m, "value": v, "bar": b} for s, m, v, b in failed]}
        print(json_line(out))
    else:
        print_eval(results, ks)
        for s, m, v, b in failed:
            print(f"chunkscope: {s}: {m} = {v:.3f} is under --fail-under {b}", file=sys.stderr)
    # A stop (Ctrl-C) raised `Cancelled` out of evaluate(): the command line's one handler makes it exit 130.
    return EXIT_FINDINGS if failed else documents_exit(ctx.tree)


class _SharedStore:
    """Lets evaluate() use the command's store without closing it (the command owns it)."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def __enter__(self):
        return self._store

    def __exit__(self, *exc) -> None:
        return None

    def close(self) -> None:
        return None


def print_eval(results, ks: list[int]) -> None:
    from rich.table import Table
    from rich.text import Text

    con = console()
    if not results:
        return
    metrics = list(results[0].metrics)
    # Metrics down, strategies across: a dozen metrics never fit side by side, two strategies always do.
    t = Table(title=f"retrieval on {len(results[0].per_query)} queries", title_justify="left")
    t.add_column("metric")
    for r in results:
        t.add_column(visible(r.strategy_label, oneline=True), justify="right")
    for m in metrics:
        values = [r.metrics[m] for r in results]
        best = max(values)
        t.add_row(m, *[Text(f"{v:.3f}", style="bold green" if len(values) > 1 and v == best else "") for v in values])
    t.add_row("misses (top-5)", *[", ".join(f"{n} {k}" for k, n in sorted(r.reasons.items()) if n) or "—" for r in results])
    con.print(t)
    for r in results:
        misses = [q for q in r.per_query if q.reason]
        if not misses:
            continue
        con.print()
        con.print(Text(f"{r.strategy_label}: {len(misses)} missed", style="bold"))
        for q in misses:
            line = Text(f"  {q.reason:<10} ", style="yellow")
            line += Text(visible(q.query, oneline=True))
            if q.detail:
                line += Text(f"  — {visible(q.detail, oneline=True)}", style="dim")
            con.print(line)
