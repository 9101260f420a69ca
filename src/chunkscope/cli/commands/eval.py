"""``chunkscope eval``: strategies scored on labelled questions (hit@k, MRR, recall, nDCG, passage metrics), every
miss with the chunks that outranked it, bars to pass and a saved baseline to compare with.

The work is `chunkscope.evaluation.evaluate`'s; this module checks the arguments and the queries file before any
work, shows progress on stderr and prints the tables.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chunkscope.chunking.params import ParamError
from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.evaluation.metrics import PASSAGE_UNITS
from chunkscope.retrieval.search_modes import PIPELINE_KEYS
from chunkscope.safe_text import json_line, visible
from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import load_context, strategies_from_args
from chunkscope.cli.exits import EXIT_FINDINGS, documents_exit
from chunkscope.cli.misses import print_miss_chunks
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
from chunkscope.cli.parsing import parse_grid, parse_search
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar
from chunkscope.cli.table_layout import Col, fit_table

#: What the passage-level metrics are, for ``eval --help``.
EVAL_EPILOG = """\
passage-level metrics (after Chroma's "Evaluating Chunking Strategies for Retrieval", 2024) measure text, not
chunks. The passage is the expected section's body (without its heading line), the expected text, or the file.
For the top k chunks kept by the threshold:
  passage_recall@k     share of the passage inside them
  passage_precision@k  share of their text that is passage (text that overlapping chunks share counted once)
  passage_iou@k        passage ∩ chunks over passage ∪ chunks
  precision_omega      precision of exactly the chunks touching the passage: the ceiling the chunking sets
Counted in characters unless --passage-unit tokens (the embedding model's word pieces over the same spans).

miss reasons: absent, truncated, threshold, reranked-out (the search ranked it within k, the reranker pushed it
below: both ranks named), shadowed (a near-duplicate elsewhere in the tree, cosine >= 0.95 or the same text, took
its place), split, below-k. Each miss names the chunk holding the passage (rank, score,
path:line) and the chunks ranked above it.

parents (--parent section|window:N|page): the chunks are searched, the parents of the top k chunks (merged, each
with its best child's rank) are what counts: a "· parent=" column beside each strategy's. A parent hit the chunks
missed is "carried"; a parent miss keeps the chunk's reason, or is outside-parent: a chunk of the same page ranked
within k, but its parent stops short of the passage.

baselines: --save-baseline FILE keeps every strategy's metrics; --baseline FILE prints each metric's change and
exits 1 when one drops by more than --tolerance (the same 0-1 units as the metrics: 0.02 is two points).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="hit@k, MRR, recall@k, nDCG@k and passage recall/precision/IoU per strategy "
                                    "on labelled queries", epilog=EVAL_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_docs_arg(p)
    p.add_argument("queries", metavar="QUERIES", help="JSONL or YAML: {query, expect: {path, heading|anchor|text}}")
    add_strategy_args(p, multiple=True)
    add_store_args(p)
    add_search_arg(p, several=True)
    add_rerank_args(p, compare=True)
    add_parent_arg(p, compare=True)
    p.add_argument("--grid", "-g", action="append", metavar="NAME=V1,V2,...",
                   help="score every combination as its own column: a strategy parameter (embed_prefix=none,heading), "
                        "search=dense,keyword,hybrid or embedder=all-MiniLM-L6-v2,openai:MODEL (repeatable)")
    p.add_argument("-k", default="1,3,5,10", metavar="K,K,...", help="cut-offs (default 1,3,5,10)")
    p.add_argument("--threshold", type=float, default=None, help="score threshold (default from config, else none)")
    p.add_argument("--passage-unit", choices=PASSAGE_UNITS, default="chars",
                   help="what passage-level metrics count: chars (default) or tokens (the embedding model's word "
                        "pieces over the same spans)")
    p.add_argument("--fail-under", action="append", metavar="METRIC=VALUE",
                   help="exit 1 when a strategy scores under the bar, e.g. hit@5=0.8 (repeatable)")
    p.add_argument("--save-baseline", metavar="FILE", help="write every strategy's metrics to FILE (JSON), for --baseline")
    p.add_argument("--baseline", metavar="FILE",
                   help="print each metric's change since FILE (from --save-baseline); exit 1 when one drops by "
                        "more than --tolerance")
    p.add_argument("--tolerance", type=float, default=0.0, metavar="DROP",
                   help="how far a metric may fall below the baseline, in the metric's own 0-1 units "
                        "(0.02 = two points; default 0: any drop fails)")
    add_json_arg(p)
    p.set_defaults(func=cmd_eval)


def _parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ParamError(f"-k {text!r}: expected numbers like 1,3,5,10") from None
    if not ks or ks[0] < 1:
        raise ParamError(f"-k {text!r}: cut-offs must be positive")
    return ks


def _parse_bars(items: list[str] | None) -> dict[str, float]:
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
    from chunkscope.evaluation.baselines import Baseline
    from chunkscope.evaluation.evaluate import evaluate
    from chunkscope.evaluation.queries import load_queries
    from chunkscope.retrieval.parents import parse_parent

    ks = _parse_ks(args.k)
    bars = _parse_bars(args.fail_under)
    if not args.tolerance >= 0:
        raise ParamError(f"--tolerance must be 0 or more (a drop in the metrics' 0-1 units), got {args.tolerance}")
    # A missing or damaged baseline fails in a second, not after indexing the tree.
    baseline = Baseline.load(args.baseline) if args.baseline else None
    if baseline is not None:
        baseline.check_unit(args.passage_unit)
    queries = load_queries(args.queries)  # a bad queries file fails before the tree is read or the store opened
    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)
    threshold = args.threshold if args.threshold is not None else ctx.config.query.get("threshold")
    reranker = retrieval_setup.make_reranker(ctx.config, args)
    variants = eval_variants(args, ctx.config, resolved, reranker.spec.label if reranker is not None else None)
    embedders: dict[str | None, Any] = {}
    results = []
    try:
        with retrieval_setup.open_store(ctx, args) as store:
            with graceful_interrupt() as cancel, progress_bar("eval", quiet=args.json) as on_progress:
                # One evaluate() per (search mode, embedder): the strategies of a group share its question vectors.
                groups: dict[tuple[str, str | None, bool, str], list[tuple[str, Any]]] = {}
                for v in variants:
                    groups.setdefault((v.search, v.embedder, v.rerank, v.parent), []).append((v.label, v.strategy))
                by_label = {}
                for (mode, emb_name, rerank, parent), pairs in groups.items():
                    if emb_name not in embedders:
                        embedders[emb_name] = retrieval_setup.make_embedder(ctx, args, emb_name)
                    for r in evaluate(
                        ctx.tree, pairs, queries, ks=ks, threshold=threshold if mode == "dense" else None,
                        embedder=embedders[emb_name], store_factory=lambda label, strategy: store,
                        on_progress=on_progress, cancel=cancel, site_url=ctx.config.site_url or None,
                        passage_unit=args.passage_unit, search_mode=mode, reranker=reranker if rerank else None,
                        parent=parse_parent(parent),
                    ):
                        by_label[r.strategy_label] = r
                # Each strategy's chunks, then (with a parent) their parents beside them.
                results = [x for v in variants for x in by_label[v.label].levels()]
    finally:
        for e in embedders.values():
            e.close()
        if reranker is not None:
            reranker.close()
    for metric in bars:
        if results and metric not in results[0].metrics:
            raise ParamError(f"--fail-under: unknown metric {metric!r} (have {', '.join(results[0].metrics)})")
    failed = [(r.strategy_label, m, r.metrics[m], bar) for r in results for m, bar in bars.items() if r.metrics[m] < bar]
    comparison = baseline.compare(results, args.tolerance) if baseline is not None else None
    regressions = comparison.regressions if comparison is not None else []
    if args.json:
        out = {"results": [r.to_dict() for r in results],
               "failed": [{"strategy": label, "metric": m, "value": value, "bar": bar}
                          for label, m, value, bar in failed],
               "baseline": comparison.to_dict() if comparison is not None else None}
        print(json_line(out))
    else:
        print_eval(results, ks, comparison)
        for label, m, value, bar in failed:
            print(f"chunkscope: {visible(label, oneline=True)}: {m} = {value:.3f} is under --fail-under {bar}",
                  file=sys.stderr)
        for c in regressions:
            print(f"chunkscope: {visible(c.strategy, oneline=True)}: {c.metric} fell from {c.before:.3f} to "
                  f"{c.after:.3f} ({c.delta:+.3f}), more than --tolerance {args.tolerance}", file=sys.stderr)
    if args.save_baseline and results:
        # After the output: a path that cannot be written loses the file, not the run's report.
        Baseline.of(results).save(args.save_baseline)
        if not args.json:
            print(f"chunkscope: baseline of {len(results)} strategies saved to {args.save_baseline}", file=sys.stderr)
    # A stop (Ctrl-C) raised `Cancelled` out of evaluate(): the command line's one handler makes it exit 130.
    return EXIT_FINDINGS if failed or regressions else documents_exit(ctx.tree)


@dataclass(frozen=True)
class EvalVariant:
    """One column of ``eval``: a configured strategy, how questions are matched, and which embedder."""

    label: str
    strategy: Any
    search: str
    embedder: str | None  # None: the command's embedder (--embedder or [embedder])
    rerank: bool = False  # the command's reranker (--rerank or [rerank]) follows the search
    parent: str = "none"  # what hits return (--parent, the preset's, [retrieval] parent): scored beside the chunks


def eval_variants(args: argparse.Namespace, config: Config, resolved: Sequence[ResolvedStrategy],
                  rerank_label: str | None = None) -> list[EvalVariant]:
    """Each strategy once per combination of --search modes and --grid values, labelled by what varies; with a
    reranker (``rerank_label``, e.g. ``rerank=ms-marco``), each twice: without it, then with it beside."""

    given = parse_search(getattr(args, "search", None), several=True)
    out: list[EvalVariant] = []
    for r in resolved:
        modes = given or [r.search or config.search_mode]  # a preset's own search mode (what tune chose)
        parent = retrieval_setup.parent_spec(args, config, r.parent).label
        grid = parse_grid(args.grid, r.strategy.name) if getattr(args, "grid", None) else {}
        if "search" in grid and getattr(args, "search", None):
            raise ParamError("give the search modes with --search or --grid search=…, not both")
        if "parent" in grid:  # a pipeline key of the sweep's grid; eval puts the parents beside the chunks
            raise ParamError("eval shows each strategy's parents beside its chunks: give --parent KIND, "
                             "not --grid parent=…")
        axes = {"search": grid.pop("search", modes), **grid}
        names = list(axes)
        for combo in itertools.product(*(axes[n] for n in names)):
            point = dict(zip(names, combo))
            params = {n: v for n, v in point.items() if n not in PIPELINE_KEYS}
            strategy = r.strategy if not params else type(r.strategy)(**{**r.strategy.params, **params})
            varied = [f"{n}={v}" for n, v in point.items() if len(axes[n]) > 1]
            label = " · ".join([r.label, *varied])
            out.append(EvalVariant(label, strategy, str(point["search"]), point.get("embedder"), parent=parent))
            if rerank_label is not None:
                out.append(EvalVariant(f"{label} · {rerank_label}", strategy, str(point["search"]),
                                       point.get("embedder"), rerank=True, parent=parent))
    return out


def _delta_cell(change) -> Any:
    """A metric's change since the baseline: ▼ in red for a regression, a smaller drop in yellow."""
    from rich.text import Text

    if change is None or change.before is None:
        return Text("new", style="dim")
    if change.after is None:
        return Text("—", style="dim")
    d = change.delta
    if change.regression:
        return Text(f"{d:+.3f} ▼", style="bold red")
    if d == 0:
        return Text("=", style="dim")
    return Text(f"{d:+.3f}", style="green" if d > 0 else "yellow")


def eval_table(results, width: int, comparison=None, **table_kw: Any) -> Any:
    """Metrics down, strategies across (a dozen metrics never fit side by side, two strategies always do); the
    best of several strategies in bold green; with a baseline, each strategy's change beside it."""
    from rich.text import Text

    metrics = list(results[0].metrics)
    several = len(results) > 1
    cols = [Col("metric", [*metrics, f"misses (top {results[0].miss_k})"])]
    for r in results:
        cells: list[Any] = []
        for m in metrics:
            best = max(x.metrics[m] for x in results)
            cells.append(Text(f"{r.metrics[m]:.3f}", style="bold green" if several and r.metrics[m] == best else ""))
        cells.append(", ".join(f"{n} {k}" for k, n in r.reasons.items() if n) or "—")
        cols.append(Col(visible(r.strategy_label, oneline=True), cells, justify="right", overflow="fold"))
        if comparison is not None:
            deltas = [_delta_cell(comparison.change(r.strategy_label, m))
                      if r.strategy_label in comparison.baseline.strategies else Text("new", style="dim")
                      for m in metrics]
            cols.append(Col("Δ", [*deltas, ""], justify="right"))
    steps = [(c.header, 12) for c in cols[1:] if c.header != "Δ"]
    return fit_table(cols, width, steps, **table_kw)[0]


def print_eval(results, ks: list[int], comparison=None) -> None:
    from rich.text import Text

    con = console()
    if not results:
        return
    title = f"retrieval on {len(results[0].per_query)} queries"
    if comparison is not None:
        title += f", change since {comparison.baseline.source}"
    con.print(eval_table(results, con.width, comparison, title=visible(title, oneline=True), title_justify="left"))
    unit = "characters" if results[0].passage_unit == "chars" else "the model's word pieces"
    con.print(Text(f"passage metrics in {unit}; text shared by overlapping chunks counted once", style="dim"))
    if comparison is not None:
        print_baseline_notes(con, comparison)
    for r in results:
        if r.carried:
            con.print(Text(f"{visible(r.strategy_label, oneline=True)}: {r.carried} question"
                           f"{'s' if r.carried != 1 else ''} the chunks missed, carried by the parent", style="dim"))
    for r in results:
        misses = [q for q in r.per_query if q.reason]
        if not misses:
            continue
        con.print()
        con.print(Text(f"{visible(r.strategy_label, oneline=True)}: {len(misses)} missed", style="bold"))
        for q in misses:
            line = Text(f"{q.reason:<10} ", style="yellow")
            line += Text(visible(q.query, oneline=True))
            if q.detail:
                line += Text(f"  — {visible(q.detail, oneline=True)}", style="dim")
            print_wrapped(con, line, 2)  # wrapped under its indent, never inside a path:line
            print_miss_chunks(con, q, indent=4)


def print_baseline_notes(con, comparison) -> None:
    """What the baseline comparison could not compare, and how many regressions it found."""
    from rich.text import Text

    b = comparison.baseline
    if b.queries != comparison.queries:
        con.print(Text(f"the baseline was measured on {b.queries} queries, this run on {comparison.queries}: "
                       f"the changes include the questions added or removed", style="yellow"))
    for label in comparison.missing:
        con.print(Text(f"{visible(label, oneline=True)}: in the baseline, not in this run", style="yellow"))
    for label in comparison.new:
        con.print(Text(f"{visible(label, oneline=True)}: not in the baseline (nothing to compare)", style="dim"))
    n = len(comparison.regressions)
    if n:
        con.print(Text(f"{n} regression{'s' if n != 1 else ''} (▼): a drop of more than {comparison.tolerance}",
                       style="bold red"))
    else:
        con.print(Text(f"no metric dropped by more than {comparison.tolerance}", style="green"))
