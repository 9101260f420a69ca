"""``chunkscope probe``: a retrieval check that needs no labels: does each section heading find its own section?"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chunkscope.evaluation.probe import ProbeResult

from chunkscope.safe_text import json_line, visible
from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import load_context, strategies_from_args
from chunkscope.cli.exits import EXIT_OK, Interrupted, documents_exit
from chunkscope.cli.misses import print_miss_chunks
from chunkscope.cli.options import add_docs_arg, add_json_arg, add_parent_arg, add_probe_args, add_rerank_args, \
    add_search_arg, add_store_args, add_strategy_args
from chunkscope.cli.output import console, error, print_wrapped
from chunkscope.cli.parsing import check_k, max_queries, parse_levels
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar
from chunkscope.cli.table_layout import Col, fit_table

if TYPE_CHECKING:
    from rich.console import Console

    from chunkscope.evaluation.probe import ProbeOutcome, ProbeSection


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="label-free retrieval check: does each section heading find its own section?")
    add_docs_arg(p)
    add_strategy_args(p, multiple=True, param_help="override a strategy parameter (repeatable)")
    add_store_args(p)
    add_probe_args(p)
    add_search_arg(p)
    add_rerank_args(p, compare=True)
    add_parent_arg(p, compare=True)
    p.add_argument("-k", type=int, default=5, help="a heading is answered when its section ranks within k (default 5)")
    p.add_argument("--show", type=int, default=30, metavar="N", help="list at most N missed sections per list (0: all)")
    add_json_arg(p, "machine-readable output, with every section's result")
    p.set_defaults(func=cmd_probe)


def cmd_probe(args: argparse.Namespace) -> int:
    from chunkscope.evaluation.probe import probe, probe_sections

    ctx = load_context(args)
    k = check_k(args.k)
    lo, hi = parse_levels(args.levels)
    resolved = strategies_from_args(args, ctx.config)
    pset = probe_sections(ctx.tree, min_level=lo, max_level=hi, max_queries=max_queries(args.max_queries),
                          unique=not args.keep_duplicates)
    if not pset.sections:
        error(f"nothing to probe: no heading at levels {lo}-{hi} has a body ({pset.headings} headings found)")
        return EXIT_OK
    # As eval does: one probe() per search mode, since each preset may name its own (what tune chose), and with a
    # reranker each strategy once without it and once with it; the columns keep the order given in the one table.
    reranker = retrieval_setup.make_reranker(ctx.config, args)
    reranks = [None, reranker] if reranker is not None else [None]
    groups: dict[tuple[str, Any, Any], list[tuple[str, Any]]] = {}
    order = []
    for r in resolved:
        # With a parent (small-to-big), each strategy's parents are a row of their own, under its chunks'.
        parent = retrieval_setup.parent_spec(args, ctx.config, r.parent)
        for rr in reranks:
            label = r.label if rr is None else f"{r.label} · {rr.spec.label}"
            mode = retrieval_setup.search_mode(args, ctx.config, r.search)
            groups.setdefault((mode, rr, parent), []).append((label, r.strategy))
            order.append(label)
            if parent.active:
                order.append(f"{label} · parent={parent.label}")
    parts = []
    try:
        # The store first: a tree in use by another process is said at once, before the model loads.
        with retrieval_setup.open_store(ctx, args) as store:
            embedder = retrieval_setup.make_embedder(ctx, args)
            with graceful_interrupt() as cancel, progress_bar("probe", quiet=args.json) as on_progress:
                for (mode, rr, parent), pairs in groups.items():
                    part = probe(ctx.tree, pairs, k=k, probe_set=pset, embedder=embedder, store=store,
                                 on_progress=on_progress, cancel=cancel, site_url=ctx.config.site_url or None,
                                 search_mode=mode, reranker=rr, parent=parent)
                    parts.append(part)
                    if part.cancelled:
                        break  # a stop covers the rest: what finished is reported
    finally:
        if reranker is not None:
            reranker.close()
    result = _merged_probe(parts, order)
    if args.json:
        print(json_line(result.to_dict()))
    else:
        print_probe(result, args.show)
    if result.cancelled:
        raise Interrupted("the results above cover only the strategies that finished")
    return documents_exit(ctx.tree)


def _merged_probe(parts: list[ProbeResult], order: list[str]) -> ProbeResult:
    """One `ProbeResult` of the probes run per search mode (same questions), strategies in the order given."""
    first = parts[0]
    rank = {label: i for i, label in enumerate(order)}
    outcomes = sorted((o for p in parts for o in p.outcomes), key=lambda o: rank.get(o.label, len(rank)))
    return ProbeResult(first.k, first.ks, first.probe_set, outcomes, seconds=sum(p.seconds for p in parts),
                       cancelled=any(p.cancelled for p in parts))


#: How the probe header words each reason a heading was not asked (`ProbeSet.skipped`'s keys).
_SKIP_WORDS = {"empty": ("empty section", "empty sections"), "number-only": ("number-only heading", "number-only headings"),
               "duplicate": ("duplicate heading", "duplicate headings"), "sampled-out": ("sampled out", "sampled out")}


def _skipped_text(skipped: dict[str, int]) -> str:
    parts = [f"{n} {_SKIP_WORDS.get(why, (why, why))[n != 1]}" for why, n in skipped.items() if n]
    return ("; skipped " + ", ".join(parts)) if parts else ""


def print_probe(result: ProbeResult, show: int = 30) -> None:
    from rich.text import Text

    con = console()
    ps = result.probe_set
    lo, hi = ps.levels
    con.print(Text(f"probe: {len(ps.sections)} section headings (levels {lo}-{hi}) asked, answer = the section's "
                   f"body within top {result.k}{_skipped_text(ps.skipped)}", style="dim"))
    if not result.outcomes:
        return
    several = len(result.outcomes) > 1
    con.print(probe_table(result, con.width, title=f"label-free retrieval on {len(ps.sections)} headings",
                          title_justify="left"))
    legend = PROBE_LEGEND.format(k=result.k) + (PROBE_LEGEND_ONLY if several else "")
    con.print(Text(legend, style="dim"))
    print_missed(con, result, "missed by every strategy" if several else "missed", result.missed_by_all(), show)
    if several:
        for o in result.outcomes:
            print_missed(con, result, f"missed only by {visible(o.label, oneline=True)}",
                         result.missed_only_by(o.label), show, o)


#: What the short headers of the probe table mean (short, so that the table fits 80 columns).
PROBE_LEGEND = "miss: sections not found in the top {k}; cut: sections whose heading is cut off from their body"
PROBE_LEGEND_ONLY = "; only: missed by this strategy and found by every other"


def probe_table(result: ProbeResult, width: int, **table_kw: Any) -> Any:
    """One row per strategy: chunks, the metrics (the best of several in bold green), misses, cut-off headings
    and, with several strategies, the misses no other strategy has (every other found those sections). Numbers
    are never cut."""
    from rich.text import Text

    outcomes = result.outcomes
    metrics = ["hit@1", f"hit@{result.k}", "mrr"] if result.k != 1 else ["hit@1", "mrr"]
    several = len(outcomes) > 1
    cols = [Col("strategy", [Text(visible(o.label, oneline=True)) for o in outcomes], overflow="fold"),
            Col("chunks", [str(o.chunks) for o in outcomes], justify="right")]
    for m in metrics:
        values = [o.metrics.get(m, 0.0) for o in outcomes]
        cells = [Text(f"{v:.3f}", style="bold green" if several and v == max(values) else "") for v in values]
        cols.append(Col(m if m != "mrr" else f"MRR@{result.k}", cells, justify="right"))
    cols += [Col("miss", [str(o.misses) for o in outcomes], justify="right"),
             Col("cut", [str(sum(o.cut_off)) for o in outcomes], justify="right")]
    if several:
        cols.append(Col("only", [str(len(result.missed_only_by(o.label))) for o in outcomes], justify="right"))
    return fit_table(cols, width, [("strategy", 16), ("strategy", 8)], **table_kw)[0]


def print_missed(con: Console, result: ProbeResult, title: str, sections: Sequence[ProbeSection], show: int,
                 outcome: ProbeOutcome | None = None) -> None:
    """A list of missed sections, ``where  heading`` and why (per strategy unless `outcome` names one); the
    why goes on a line of its own when both do not fit one line."""
    from rich.text import Text

    if not sections:
        return
    con.print()
    con.print(Text(f"{title} ({len(sections)})", style="bold"))
    limit = len(sections) if show <= 0 else show
    index = {id(s): i for i, s in enumerate(result.sections)}
    several = len(result.outcomes) > 1
    for s in sections[:limit]:
        where = Text(visible(s.where, oneline=True), style="cyan")
        line = Text("  ") + where + Text("  " + visible(s.heading, oneline=True))
        notes = []
        judged = [outcome] if outcome is not None else result.outcomes
        for o in judged:
            i = index[id(s)]
            why = o.words(i)  # the core's words, as the app says them
            notes.append(why if outcome is not None or not several else f"{visible(o.label, oneline=True)}: {why}")
        note = Text("  — " + visible("; ".join(notes), oneline=True), style="dim")
        if line.cell_len + note.cell_len <= con.width:
            con.print(line + note)
        elif line.cell_len <= con.width:
            con.print(line)
            print_wrapped(con, note, 4)
        else:
            # The path:line whole on its own line (copied, grepped, clicked), the heading and why under it.
            con.print(Text("  ") + where, soft_wrap=True)
            print_wrapped(con, Text(visible(s.heading, oneline=True)) + note, 4)
        # Each strategy's chunk for the section and what outranked it (a probe built by hand has no evaluation).
        for o in judged:
            q = o.eval.per_query[index[id(s)]] if o.eval is not None else None
            if q is None or q.reason is None:
                continue
            if several and outcome is None:
                con.print(Text(f"    {visible(o.label, oneline=True)}:", style="dim"))
            print_miss_chunks(con, q, indent=6 if several and outcome is None else 4)
    if len(sections) > limit:
        con.print(Text(f"  … and {len(sections) - limit} more (--show 0 lists all, --json has every section)",
                       style="dim"))
