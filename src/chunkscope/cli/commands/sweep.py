"""``chunkscope sweep``: score every combination of parameter values end to end; print the best as a preset."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chunkscope.chunking.params import ParamError
from chunkscope.config.reader import Config
from chunkscope.evaluation.sweep import SweepResult, format_value
from chunkscope.safe_text import json_line, visible
from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import load_context
from chunkscope.cli.exits import EXIT_USAGE, Interrupted, documents_exit
from chunkscope.cli.options import (
    add_docs_arg,
    add_json_arg,
    add_parent_arg,
    add_probe_args,
    add_rerank_args,
    add_search_arg,
    add_store_args,
)
from chunkscope.cli.output import console, error, human_bytes
from chunkscope.cli.parsing import check_k, max_queries, parse_grid, parse_levels, parse_param_args
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar
from chunkscope.cli.table_layout import DROP, Col, fit_table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="score every combination of parameter values; print the best as a preset")
    add_docs_arg(p)
    p.add_argument("queries", nargs="?", metavar="QUERIES",
                   help="JSONL or YAML queries as for eval (or --probe for the label-free set)")
    # Repeatable only so that a second -s is refused instead of silently replacing the first.
    p.add_argument("--strategy", "-s", action="append", metavar="NAME",
                   help="the one strategy or preset to sweep (default from config)")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="a parameter every point shares")
    p.add_argument("--config", metavar="FILE", help="config file")
    p.add_argument("--grid", "-g", action="append", metavar="NAME=V1,V2,...",
                   help="values of one parameter (repeat for more parameters; every combination is scored); "
                        "also search=…, embedder=… and parent=none,section,window:N,page")
    p.add_argument("-k", type=int, default=5, help="cut-off of the default metric hit@k and of MRR (default 5)")
    p.add_argument("--metric", metavar="METRIC",
                   help="what ranks the points: hit@N, mrr, recall@N, ndcg@N, passage_recall@N, "
                        "passage_precision@N, passage_iou@N, precision_omega (passages in characters; default hit@k)")
    p.add_argument("--probe", action="store_true", help="score on the section headings instead of QUERIES")
    add_probe_args(p)
    p.add_argument("--threshold", type=float, default=None,
                   help="score threshold for QUERIES (default from config, else none)")
    add_search_arg(p)
    add_rerank_args(p)
    add_parent_arg(p)
    p.add_argument("--keep", action="store_true", help="keep the sweep's collections in the store afterwards")
    p.add_argument("--preset-name", default="sweep-best", metavar="NAME",
                   help="name of the printed preset (default sweep-best)")
    add_store_args(p)
    add_json_arg(p)
    p.set_defaults(func=cmd_sweep)


def _sweep_target(args: argparse.Namespace, cfg: Config) -> tuple[str, dict[str, Any], str | None, str | None]:
    """The strategy to sweep, the parameters every point shares (config defaults, a preset's, --param), and the
    swept preset's search mode and parent (None for a strategy, or a preset naming none): the points run in the
    mode the preset is used in, unless --search or a grid says."""
    from chunkscope.chunking.registry import strategy_class
    from chunkscope.config.reader import preset_named

    name = args.strategy[0] if args.strategy else cfg.strategy
    cli = parse_param_args(args.param)
    preset_search = preset_parent = None
    found = preset_named(cfg, name)
    if found is not None:
        preset = dict(found)
        strat = preset.pop("strategy")
        preset_search = preset.pop("search", None)  # no parameter: how the points are searched
        preset_parent = preset.pop("parent", None)  # no parameter either: what the hits return
        base = {**cfg.strategies.get(strat, {}), **preset, **cli}
    else:
        strat = name
        base = {**cfg.strategies.get(strat, {}), **cli}
    cls = strategy_class(strat)  # UnknownStrategy lists the names
    declared = [p.name for p in cls.parameters]
    for key in base:
        if key not in declared:
            raise ParamError(f"{strat}: unknown parameter {key!r} (parameters: {', '.join(declared) or 'none'})")
    return strat, base, preset_search, preset_parent


def check_one_strategy(args: argparse.Namespace) -> None:
    """A sweep's grid names one strategy's parameters: refuse several -s before any work (the last would win)."""
    if args.strategy and len(args.strategy) > 1:
        raise ParamError(f"sweep takes one strategy, got {len(args.strategy)} ({', '.join(args.strategy)}); "
                         f"run one sweep per strategy, or `chunkscope probe DOCS -s A -s B` to compare strategies")


def cmd_sweep(args: argparse.Namespace) -> int:
    from chunkscope.evaluation.queries import load_queries
    from chunkscope.evaluation.probe import probe_sections
    from chunkscope.evaluation.sweep import parse_metric, sweep

    # What the command line and the queries file can refuse, before the tree is read or the store opened.
    check_one_strategy(args)
    if not args.grid:
        raise ParamError("sweep needs at least one --grid NAME=V1,V2,... (e.g. --grid chunk_size=256,384,512)")
    k = check_k(args.k)
    parse_metric(args.metric, k)  # a bad metric fails before any work
    if args.probe and args.queries:
        raise ParamError("sweep takes QUERIES or --probe, not both")
    if not args.probe and not args.queries:
        raise ParamError("sweep needs a QUERIES file, or --probe to ask the section headings instead")
    max_q = max_queries(args.max_queries)
    labelled = None if args.probe else load_queries(args.queries)
    ctx = load_context(args)
    strat, base, preset_mode, preset_parent = _sweep_target(args, ctx.config)
    grid = parse_grid(args.grid, strat)
    if "parent" in grid and args.parent:
        raise ParamError("give the parent with --parent or --grid parent=…, not both")
    parent = retrieval_setup.parent_spec(args, ctx.config, preset_parent).label
    reranker = retrieval_setup.make_reranker(ctx.config, args)
    if labelled is None:
        lo, hi = parse_levels(args.levels)
        queries: Any = probe_sections(ctx.tree, min_level=lo, max_level=hi, max_queries=max_q,
                                      unique=not args.keep_duplicates)
        threshold = None
    else:
        queries = labelled
        threshold = args.threshold if args.threshold is not None else ctx.config.query.get("threshold")
    mode = retrieval_setup.search_mode(args, ctx.config, preset_mode)
    # The store first: a tree in use by another process is said at once, before the model loads.
    try:
        with retrieval_setup.open_store(ctx, args) as store:
            embedder = retrieval_setup.make_embedder(ctx, args)
            with graceful_interrupt() as cancel, progress_bar(f"sweep {strat}", quiet=args.json) as on_progress:
                result = sweep(ctx.tree, strat, grid, queries, base_params=base, k=k, metric=args.metric,
                               threshold=threshold, max_queries=None if args.probe else max_q, embedder=embedder,
                               store=store, keep=args.keep, on_progress=on_progress, cancel=cancel,
                               site_url=ctx.config.site_url or None, search_mode=mode,
                               embedder_factory=lambda name: retrieval_setup.make_embedder(ctx, args, name),
                               reranker=reranker, parent=parent)
    finally:
        if reranker is not None:
            reranker.close()
    if args.json:
        print(json_line(result.to_dict()))
    else:
        # The swept preset's mode goes into the printed one too (unless the grid chose a mode): a preset found
        # best in hybrid search and used in dense would not be the one that was scored.
        keep_mode = mode if preset_mode is not None and "search" not in grid else None
        # Likewise the parent the points were scored with, when the grid did not choose it.
        keep_parent = parent if parent != "none" and "parent" not in grid else None
        print_sweep(result, args.preset_name, keep_mode, keep_parent)
    if result.cancelled:
        raise Interrupted("the table covers the points that finished")
    if result.best is None:
        error(f"no grid point could be scored ({len(result.skipped)} of {len(result.points)} skipped)")
        return EXIT_USAGE
    return documents_exit(ctx.tree)


def print_sweep(result: SweepResult, preset_name: str = "sweep-best", search: str | None = None,
                parent: str | None = None) -> None:
    """The ranked table, what was skipped, and the best point as a preset (with ``search`` and ``parent`` when
    given)."""
    from rich.text import Text

    con = console()
    src = "probe questions" if result.source == "probe" else "queries"
    table, dropped = sweep_table(result, con.width, title=f"{result.strategy}: {len(result.points)} grid points on "
                                 f"{result.queries} {src}, by {result.metric}", title_justify="left")
    con.print(table)
    if dropped:
        con.print(Text(f"({', '.join(dropped)} left out at this width; --json has them)", style="dim"))
    if result.skipped:
        con.print(Text(f"skipped ({len(result.skipped)}):", style="yellow"))
        for p in result.skipped:
            # The reason on a line of its own: it stays whole (and greppable) at 80 columns.
            con.print(Text(f"  {visible(p.label, oneline=True)}", style="yellow"))
            con.print(Text(f"      {visible(p.reason, oneline=True)}", style="dim"))
    pending = [p for p in result.points if p.status == "pending"]
    if pending:
        con.print(Text(f"not run (stopped): {len(pending)} points", style="yellow"))
    con.print(Text(
        f"embedding cache: {result.distinct_texts} distinct chunk texts over {len(result.ranked())} points; "
        f"{result.embedded} embedded, {result.cached} from cache; model {result.encode_seconds:.1f}s of "
        f"{result.seconds:.1f}s", style="dim"))
    if result.dropped:
        con.print(Text(f"dropped the sweep's {len(result.dropped)} collections (--keep keeps them)", style="dim"))
    snippet = result.preset_toml(preset_name)
    if snippet:
        if search is not None:
            snippet += f'search = "{search}"\n'  # one of SEARCH_MODES: plain words, no TOML escaping needed
        if parent is not None:
            snippet += f'parent = "{parent}"\n'  # a ParentSpec label: plain words and digits
        con.print()
        con.print(Text("add to chunkscope.toml, then use -s " + preset_name + ":", style="bold"))
        # Printed raw (no rich wrapping) so it can be copied as is; values went through the TOML writer.
        sys.stdout.flush()
        print(visible(snippet), end="")


def sweep_table(result: SweepResult, width: int, **table_kw: Any) -> tuple[Any, list[str]]:
    """The ranked grid points (the best in green): rank, parameter values, metrics, chunks, storage, embedding
    work and time. Names and numbers are never cut; on a narrow terminal the per-point embedding counts are
    left out first (the cache line below the table sums them), then the time, then storage."""

    ranked = result.ranked()
    extra = [m for m in ("hit@1", f"hit@{result.k}", "mrr") if m != result.metric]
    cols = [Col("#", [str(rank) for rank in range(1, len(ranked) + 1)], justify="right")]
    # A value (a list of separators, say) may wrap; the parameter's name above it stays whole.
    cols += [Col(name, [visible(format_value(p.params[name]), oneline=True) for p in ranked], justify="right",
                 overflow="fold") for name in result.grid]
    cols.append(Col(result.metric, [f"{p.metrics.get(result.metric, 0.0):.3f}" for p in ranked], justify="right",
                    style="bold"))
    cols += [Col(m, [f"{p.metrics.get(m, 0.0):.3f}" for p in ranked], justify="right") for m in extra]
    cols += [Col("chunks", [str(p.chunks) for p in ranked], justify="right"),
             Col("storage", [human_bytes(p.storage_bytes) for p in ranked], justify="right"),
             Col("embedded", [str(p.embedded) for p in ranked], justify="right"),
             Col("cached", [str(p.cached) for p in ranked], justify="right"),
             Col("time", [f"{p.seconds:.1f}s" for p in ranked], justify="right")]
    steps = [*((name, 12) for name in result.grid), ("cached", DROP), ("embedded", DROP), ("time", DROP),
             ("storage", DROP), *((name, 0) for name in result.grid)]
    styles = ["green" if rank == 1 else None for rank in range(1, len(ranked) + 1)]
    return fit_table(cols, width, steps, row_styles=styles, **table_kw)
