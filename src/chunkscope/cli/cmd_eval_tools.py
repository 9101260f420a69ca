"""``eval``, ``probe`` and ``sweep``: strategies scored on labelled questions (against a saved baseline too), a
retrieval check that needs no labels, and a parameter grid scored end to end.

Registered by ``cmd_tuning.register`` (after ``compare``). The work is done by `chunkscope.evaluation.evaluate` and
`chunkscope.evaluation.tuning`; this module parses arguments, shows progress on stderr and prints tables, every miss with
the chunks that outranked it, JSON, baseline changes and the winning preset.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
import sys
from typing import Any

from chunkscope.chunking.chunk import ParamError
from chunkscope.evaluation.evaluate import PASSAGE_UNITS
from chunkscope.cli import Interrupted
from chunkscope.cli.cmd_core import documents_exit
from chunkscope.cli.cmd_retrieval import (
    _add_store_args,
    add_search_arg,
    make_embedder,
    open_store,
    search_mode,
)
from chunkscope.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    add_docs_arg,
    add_strategy_args,
    console,
    error,
    human_bytes,
    json_line,
    load_context,
    strategies_from_args,
    visible,
)
from chunkscope.cli.parsing import parse_grid
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar
from chunkscope.cli.table_layout import DROP, Col, fit_table, wrap_items

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

miss reasons: absent, truncated, threshold, shadowed (a near-duplicate elsewhere in the tree, cosine >= 0.95 or
the same text, took its place), split, below-k. Each miss names the chunk holding the passage (rank, score,
path:line) and the chunks ranked above it.

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
    _add_store_args(p)
    add_search_arg(p, several=True)
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
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("probe", help="label-free retrieval check: does each section heading find its own section?")
    add_docs_arg(p)
    p.add_argument("--strategy", "-s", action="append", metavar="NAME",
                   help="strategy or preset (repeat to compare); default from config, else recursive")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="override a strategy parameter (repeatable)")
    p.add_argument("--config", metavar="FILE", help="config file (default: chunkscope.toml or pyproject.toml nearest the docs)")
    _add_store_args(p)
    _add_probe_args(p)
    add_search_arg(p)
    p.add_argument("-k", type=int, default=5, help="a heading is answered when its section ranks within k (default 5)")
    p.add_argument("--show", type=int, default=30, metavar="N", help="list at most N missed sections per list (0: all)")
    p.add_argument("--json", action="store_true", help="machine-readable output, with every section's result")
    p.set_defaults(func=cmd_probe)

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
                   help="values of one parameter (repeat for more parameters; every combination is scored)")
    p.add_argument("-k", type=int, default=5, help="cut-off of the default metric hit@k and of MRR (default 5)")
    p.add_argument("--metric", metavar="METRIC",
                   help="what ranks the points: hit@N, mrr, recall@N, ndcg@N, passage_recall@N, "
                        "passage_precision@N, passage_iou@N, precision_omega (passages in characters; default hit@k)")
    p.add_argument("--probe", action="store_true", help="score on the section headings instead of QUERIES")
    _add_probe_args(p)
    p.add_argument("--threshold", type=float, default=None, help="score threshold for QUERIES (default from config, else none)")
    add_search_arg(p)
    p.add_argument("--keep", action="store_true", help="keep the sweep's collections in the store afterwards")
    p.add_argument("--preset-name", default="sweep-best", metavar="NAME", help="name of the printed preset (default sweep-best)")
    _add_store_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_sweep)


def _add_probe_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--levels", default="2-4", metavar="A-B", help="heading levels that become questions (default 2-4)")
    p.add_argument("--max-queries", type=int, default=None, metavar="N",
                   help="use N questions spread evenly over the tree (deterministic)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="also ask headings whose text occurs more than once in the tree (e.g. every 'Summary')")


def _max_queries(n: int | None) -> int | None:
    if n is not None and n < 1:
        raise ParamError(f"--max-queries must be at least 1, got {n}")
    return n


def _check_k(k: int) -> int:
    if k < 1:
        raise ParamError(f"-k must be positive, got {k}")
    return k


# --- eval -----------------------------------------------------------------------------------------------------


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
    from chunkscope.evaluation.evaluate import Baseline, evaluate, load_queries

    ks = _parse_ks(args.k)
    bars = _parse_bars(args.fail_under)
    if not args.tolerance >= 0:
        raise ParamError(f"--tolerance must be 0 or more (a drop in the metrics' 0-1 units), got {args.tolerance}")
    # A missing or damaged baseline fails in a second, not after indexing the tree.
    baseline = Baseline.load(args.baseline) if args.baseline else None
    if baseline is not None:
        baseline.check_unit(args.passage_unit)
    ctx = load_context(args)
    queries = load_queries(args.queries)
    resolved = strategies_from_args(args, ctx.config)
    threshold = args.threshold if args.threshold is not None else ctx.config.query.get("threshold")
    variants = eval_variants(args, ctx.config, resolved)
    embedders: dict[str | None, Any] = {}
    results = []
    try:
        with open_store(ctx, args) as store:
            with graceful_interrupt() as cancel, progress_bar("eval", quiet=args.json) as on_progress:
                # One evaluate() per (search mode, embedder): the strategies of a group share its question vectors.
                groups: dict[tuple[str, str | None], list[tuple[str, Any]]] = {}
                for v in variants:
                    groups.setdefault((v.search, v.embedder), []).append((v.label, v.strategy))
                by_label = {}
                for (mode, emb_name), pairs in groups.items():
                    if emb_name not in embedders:
                        embedders[emb_name] = make_embedder(ctx, args, emb_name)
                    for r in evaluate(
                        ctx.tree, pairs, queries, ks=ks, threshold=threshold if mode == "dense" else None,
                        embedder=embedders[emb_name], store_factory=lambda label, strategy: _SharedStore(store),
                        on_progress=on_progress, cancel=cancel, site_url=ctx.config.site_url or None,
                        passage_unit=args.passage_unit, search_mode=mode,
                    ):
                        by_label[r.strategy_label] = r
                results = [by_label[v.label] for v in variants]
    finally:
        for e in embedders.values():
            e.close()
    for metric in bars:
        if results and metric not in results[0].metrics:
            raise ParamError(f"--fail-under: unknown metric {metric!r} (have {', '.join(results[0].metrics)})")
    failed = [(r.strategy_label, m, r.metrics[m], bar) for r in results for m, bar in bars.items() if r.metrics[m] < bar]
    comparison = baseline.compare(results, args.tolerance) if baseline is not None else None
    regressions = comparison.regressions if comparison is not None else []
    if args.json:
        out = {"results": [r.to_dict() for r in results],
               "failed": [{"strategy": s, "metric": m, "value": v, "bar": b} for s, m, v, b in failed],
               "baseline": comparison.to_dict() if comparison is not None else None}
        print(json_line(out))
    else:
        print_eval(results, ks, comparison)
        for s, m, v, b in failed:
            print(f"chunkscope: {s}: {m} = {v:.3f} is under --fail-under {b}", file=sys.stderr)
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


def eval_variants(args: argparse.Namespace, config, resolved) -> list[EvalVariant]:
    """Each strategy once per combination of --search modes and --grid values, labelled by what varies."""
    import itertools

    from chunkscope.retrieval.search_modes import PIPELINE_KEYS
    from chunkscope.cli.parsing import parse_search

    given = parse_search(getattr(args, "search", None), several=True)
    out: list[EvalVariant] = []
    for r in resolved:
        modes = given or [r.search or config.search_mode]  # a preset's own search mode (what tune chose)
        grid = parse_grid(args.grid, r.strategy.name) if getattr(args, "grid", None) else {}
        if "search" in grid and getattr(args, "search", None):
            raise ParamError("give the search modes with --search or --grid search=…, not both")
        axes = {"search": grid.pop("search", modes), **grid}
        names = list(axes)
        for combo in itertools.product(*(axes[n] for n in names)):
            point = dict(zip(names, combo))
            params = {n: v for n, v in point.items() if n not in PIPELINE_KEYS}
            strategy = r.strategy if not params else type(r.strategy)(**{**r.strategy.params, **params})
            varied = [f"{n}={v}" for n, v in point.items() if len(axes[n]) > 1]
            label = " · ".join([r.label, *varied])
            out.append(EvalVariant(label, strategy, str(point["search"]), point.get("embedder")))
    return out


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
        misses = [q for q in r.per_query if q.reason]
        if not misses:
            continue
        con.print()
        con.print(Text(f"{visible(r.strategy_label, oneline=True)}: {len(misses)} missed", style="bold"))
        for q in misses:
            line = Text(f"  {q.reason:<10} ", style="yellow")
            line += Text(visible(q.query, oneline=True))
            if q.detail:
                line += Text(f"  — {visible(q.detail, oneline=True)}", style="dim")
            con.print(line)
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


def chunk_words(c) -> str:
    """``#3 0.612 path:line``; an unranked chunk by its score alone (when known)."""
    where = visible(c.where, oneline=True)
    if c.rank is not None:
        return f"#{c.rank} {c.score:.3f} {where}"
    return f"unranked {c.score:.3f} {where}" if c.score is not None else f"unranked {where}"


def print_miss_chunks(con, q, indent: int = 4) -> None:
    """A miss's expected chunk (rank, score, path:line) and the chunks that outranked it, each on wrapped lines
    that never cut a ``path:line``."""
    from rich.text import Text

    pad = " " * indent
    if q.expected is not None:
        holds = "(holds the passage)" if q.expected_whole else "(holds part of the passage)"
        for line in wrap_items(f"{pad}expected  ", [chunk_words(q.expected), holds], con.width, sep=" "):
            con.print(Text(line, style="dim"), overflow="fold")
    if not q.outranked_by:
        return
    items = []
    for o in q.outranked_by:
        word = chunk_words(o)
        if o.duplicate:
            alike = f"cosine {o.similarity:.3f}" if o.similarity is not None else "same text"
            word += f" (near-duplicate, {alike})"
        items.append(word)
    more = (q.outranked_count - len(q.outranked_by)) if q.outranked_count is not None else None
    if more:
        items.append(f"and {more} more")
    elif more is None:
        items.append("and every other chunk searched")
    for line in wrap_items(f"{pad}above it  ", items, con.width):
        con.print(Text(line, style="dim"), overflow="fold")


# --- probe ----------------------------------------------------------------------------------------------------


def cmd_probe(args: argparse.Namespace) -> int:
    from chunkscope.evaluation.tuning import probe, probe_sections
    from chunkscope.cli.parsing import parse_levels

    ctx = load_context(args)
    k = _check_k(args.k)
    lo, hi = parse_levels(args.levels)
    resolved = strategies_from_args(args, ctx.config)
    pset = probe_sections(ctx.tree, min_level=lo, max_level=hi, max_queries=_max_queries(args.max_queries),
                          unique=not args.keep_duplicates)
    if not pset.sections:
        error(f"nothing to probe: no heading at levels {lo}-{hi} has a body ({pset.headings} headings found)")
        return EXIT_OK
    # As eval does: one probe() per search mode, since each preset may name its own (what tune chose); the
    # strategies keep the order given in the one table.
    groups: dict[str, list[tuple[str, Any]]] = {}
    for r in resolved:
        groups.setdefault(search_mode(args, ctx.config, r.search), []).append((r.label, r.strategy))
    embedder = make_embedder(ctx, args)
    parts = []
    with open_store(ctx, args) as store:
        with graceful_interrupt() as cancel, progress_bar("probe", quiet=args.json) as on_progress:
            for mode, pairs in groups.items():
                part = probe(ctx.tree, pairs, k=k, probe_set=pset, embedder=embedder, store=store,
                             on_progress=on_progress, cancel=cancel, site_url=ctx.config.site_url or None,
                             search_mode=mode)
                parts.append(part)
                if part.cancelled:
                    break  # a stop covers the rest: what finished is reported
    result = _merged_probe(parts, [r.label for r in resolved])
    if args.json:
        print(json_line(result.to_dict()))
    else:
        print_probe(result, args.show)
    if result.cancelled:
        raise Interrupted("the results above cover only the strategies that finished")
    return documents_exit(ctx.tree)


def _merged_probe(parts: list[Any], order: list[str]) -> Any:
    """One `ProbeResult` of the probes run per search mode (same questions), strategies in the order given."""
    from chunkscope.evaluation.tuning import ProbeResult

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


def print_probe(result, show: int = 30) -> None:
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


def probe_table(result, width: int, **table_kw: Any) -> Any:
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


def print_missed(con, result, title: str, sections, show: int, outcome=None) -> None:
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
        line = Text(f"  {visible(s.where, oneline=True)}  ", style="cyan") + Text(visible(s.heading, oneline=True))
        notes = []
        judged = [outcome] if outcome is not None else result.outcomes
        for o in judged:
            i = index[id(s)]
            why = "heading cut off" if o.cut_off[i] else (o.reasons[i] or "")
            if o.ranks[i] is not None:
                why += f", rank {o.ranks[i]}"
            notes.append(why if outcome is not None or not several else f"{visible(o.label, oneline=True)}: {why}")
        why = Text("  — " + visible("; ".join(notes), oneline=True), style="dim")
        if line.cell_len + why.cell_len <= con.width:
            con.print(line + why)
        else:
            con.print(line)
            con.print(Text("    ") + why)
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


# --- sweep ----------------------------------------------------------------------------------------------------


def _sweep_target(args: argparse.Namespace, cfg) -> tuple[str, dict[str, Any], str | None]:
    """The strategy to sweep, the parameters every point shares (config defaults, a preset's, --param), and the
    swept preset's search mode (None for a strategy, or a preset naming none): the points run in the mode the
    preset is used in, unless --search or a grid says."""
    from chunkscope.chunking.chunk import strategy_class
    from chunkscope.cli.parsing import parse_param_args

    name = args.strategy[0] if args.strategy else cfg.strategy
    cli = parse_param_args(args.param)
    preset_search = None
    if name in cfg.presets:
        preset = dict(cfg.presets[name])
        strat = preset.pop("strategy")
        preset_search = preset.pop("search", None)  # no parameter: how the points are searched
        base = {**cfg.strategies.get(strat, {}), **preset, **cli}
    else:
        strat = name
        base = {**cfg.strategies.get(strat, {}), **cli}
    cls = strategy_class(strat)  # UnknownStrategy lists the names
    declared = [p.name for p in cls.parameters]
    for key in base:
        if key not in declared:
            raise ParamError(f"{strat}: unknown parameter {key!r} (parameters: {', '.join(declared) or 'none'})")
    return strat, base, preset_search


def check_one_strategy(args: argparse.Namespace) -> None:
    """A sweep's grid names one strategy's parameters: refuse several -s before any work (the last would win)."""
    if args.strategy and len(args.strategy) > 1:
        raise ParamError(f"sweep takes one strategy, got {len(args.strategy)} ({', '.join(args.strategy)}); "
                         f"run one sweep per strategy, or `chunkscope probe DOCS -s A -s B` to compare strategies")


def cmd_sweep(args: argparse.Namespace) -> int:
    from chunkscope.evaluation.evaluate import load_queries
    from chunkscope.evaluation.tuning import parse_metric, probe_sections, sweep
    from chunkscope.cli.parsing import parse_levels

    check_one_strategy(args)
    ctx = load_context(args)
    strat, base, preset_mode = _sweep_target(args, ctx.config)
    if not args.grid:
        raise ParamError("sweep needs at least one --grid NAME=V1,V2,... (e.g. --grid chunk_size=256,384,512)")
    grid = parse_grid(args.grid, strat)
    k = _check_k(args.k)
    parse_metric(args.metric, k)  # a bad metric fails before any work
    if args.probe and args.queries:
        raise ParamError("sweep takes QUERIES or --probe, not both")
    if not args.probe and not args.queries:
        raise ParamError("sweep needs a QUERIES file, or --probe to ask the section headings instead")
    max_q = _max_queries(args.max_queries)
    if args.probe:
        lo, hi = parse_levels(args.levels)
        queries: Any = probe_sections(ctx.tree, min_level=lo, max_level=hi, max_queries=max_q,
                                      unique=not args.keep_duplicates)
        threshold = None
    else:
        queries = load_queries(args.queries)
        threshold = args.threshold if args.threshold is not None else ctx.config.query.get("threshold")
    mode = search_mode(args, ctx.config, preset_mode)
    embedder = make_embedder(ctx, args)
    with open_store(ctx, args) as store:
        with graceful_interrupt() as cancel, progress_bar(f"sweep {strat}", quiet=args.json) as on_progress:
            result = sweep(ctx.tree, strat, grid, queries, base_params=base, k=k, metric=args.metric,
                           threshold=threshold, max_queries=None if args.probe else max_q, embedder=embedder,
                           store=store, keep=args.keep, on_progress=on_progress, cancel=cancel,
                           site_url=ctx.config.site_url or None, search_mode=mode,
                           embedder_factory=lambda name: make_embedder(ctx, args, name))
    if args.json:
        print(json_line(result.to_dict()))
    else:
        # The swept preset's mode goes into the printed one too (unless the grid chose a mode): a preset found
        # best in hybrid search and used in dense would not be the one that was scored.
        keep_mode = mode if preset_mode is not None and "search" not in grid else None
        print_sweep(result, args.preset_name, keep_mode)
    if result.cancelled:
        raise Interrupted("the table covers the points that finished")
    if result.best is None:
        error(f"no grid point could be scored ({len(result.skipped)} of {len(result.points)} skipped)")
        return EXIT_USAGE
    return documents_exit(ctx.tree)


def print_sweep(result, preset_name: str = "sweep-best", search: str | None = None) -> None:
    """The ranked table, what was skipped, and the best point as a preset (with ``search`` when given)."""
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
        con.print()
        con.print(Text("add to chunkscope.toml, then use -s " + preset_name + ":", style="bold"))
        # Printed raw (no rich wrapping) so it can be copied as is; values went through the TOML writer.
        sys.stdout.flush()
        print(visible(snippet), end="")


def sweep_table(result, width: int, **table_kw: Any) -> tuple[Any, list[str]]:
    """The ranked grid points (the best in green): rank, parameter values, metrics, chunks, storage, embedding
    work and time. Names and numbers are never cut; on a narrow terminal the per-point embedding counts are
    left out first (the cache line below the table sums them), then the time, then storage."""
    from chunkscope.evaluation.tuning import _fmt_value

    ranked = result.ranked()
    extra = [m for m in ("hit@1", f"hit@{result.k}", "mrr") if m != result.metric]
    cols = [Col("#", [str(rank) for rank in range(1, len(ranked) + 1)], justify="right")]
    # A value (a list of separators, say) may wrap; the parameter's name above it stays whole.
    cols += [Col(name, [visible(_fmt_value(p.params[name]), oneline=True) for p in ranked], justify="right",
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
