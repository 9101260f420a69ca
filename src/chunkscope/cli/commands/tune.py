"""``tune``: search strategies, their parameters, ``embed_prefix`` and the search mode within a time budget, print
the ranking with the evidence for the winner, and with ``--write`` store it as ``[presets.tuned]``.

The work is `chunkscope.evaluation.tune.search`'s; this module parses the arguments (the budget's ``10m``), shows progress on
stderr, words the tables and the evidence, and decides which configuration file the preset goes to.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import strategy_class
from chunkscope.progress import format_seconds
from chunkscope.safe_text import json_line, visible
from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import Context, load_context
from chunkscope.cli.exits import EXIT_USAGE, Interrupted, documents_exit
from chunkscope.cli.options import add_docs_arg, add_json_arg, add_rerank_args, add_store_args
from chunkscope.cli.output import console, error
from chunkscope.cli.parsing import parse_levels, parse_search
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar
from chunkscope.cli.table_layout import DROP, Col, fit_table


#: What tune does without questions, for ``tune --help``.
TUNE_EPILOG = """\
Without QUERIES the search is label-free: each configuration is scored on the probe (every section heading
asked; the answer is that section's body) together with what needs no questions: the share of text the
embedding model never reads, chunks over or under the strategy's limits, lint errors, and chunks lint marks as
hubs or orphans. The weights are printed with the results. Label-free, the search modes are dense and hybrid
(headings are their answers' own words, which flatters keyword search alone); give --search to choose.
With QUERIES the score is 0.7 x hit@k + 0.3 x MRR on them, over every search mode.

Each configuration is also tried with each --parent (default none,section: the parents' metrics score it) and,
when a reranker is configured ([rerank] or --rerank), without and with it. A stage wins only when it answers
more: a tie keeps the plain search. A preset names no reranker: the written preset's comment says whether the
winner had it on (then keep [rerank] when you use the preset). Strategies that embed as they chunk (semantic)
are searched when named with -s, or when the configuration has a [strategies.NAME] table or a preset of them.

The search is successive halving: every configuration on a small part of the tree, the best third of them on a
bigger part, the best of those on the whole tree, within --budget (wall time). Vectors come from the cache
wherever they are: a second run is mostly questions. Ctrl-C stops after the current batch and prints the best
so far.
"""

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?:in)?)?(?:(\d+(?:\.\d+)?)s)?")


def parse_budget(text: str) -> float | None:
    """``10m`` → 600.0; ``90s``, ``1h30m``, ``2.5m``, a bare number of seconds; ``none``/``0`` → no limit."""
    t = (text or "").strip().lower().replace(" ", "")
    if t in ("none", "0", "off", "unlimited"):
        return None
    try:
        return float(t) if t else _bad_budget(text)
    except ValueError:
        pass
    m = _DURATION.fullmatch(t)
    if not m or not any(m.groups()):
        return _bad_budget(text)
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    seconds = h * 3600 + mi * 60 + s
    if seconds <= 0:
        return _bad_budget(text)
    return seconds


def _bad_budget(text: str) -> float:
    raise ParamError(f"--budget {text!r}: expected a duration like 90s, 10m or 1h30m (or none for no limit)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="search strategies, parameters, embed_prefix and search mode within a time "
                                    "budget; --write stores the winner as [presets.tuned]",
                       epilog=TUNE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_docs_arg(p)
    p.add_argument("queries", nargs="?", metavar="QUERIES",
                   help="JSONL or YAML queries as for eval (default: label-free)")
    p.add_argument("--budget", default="10m", metavar="TIME",
                   help="wall time for the whole search: 90s, 10m, 1h (default 10m; none: no limit)")
    p.add_argument("--write", action="store_true",
                   help="store the winner as [presets.NAME] in the tree's configuration file (created if there is "
                        "none; every other line is left as it was)")
    p.add_argument("--write-best-so-far", action="store_true",
                   help="with --write: store the best so far even when tune has no answer (the budget ended before "
                        "the best configurations were measured on the whole tree, or a seed at its defaults won)")
    p.add_argument("--preset-name", default="tuned", metavar="NAME", help="the preset's name (default tuned)")
    p.add_argument("--strategy", "-s", action="append", metavar="NAME",
                   help="a strategy to search (repeatable; default: every one that declares a search space)")
    p.add_argument("--prefix", metavar="P,P,...",
                   help="embed_prefix values to search (default none,title,heading,breadcrumb)")
    p.add_argument("--search", metavar="MODES",
                   help="search modes to search, comma-separated (default: dense,hybrid label-free; "
                        "dense,keyword,hybrid with QUERIES)")
    p.add_argument("--parent", default="none,section", metavar="P,P,...",
                   help="what hits return, each tried: none, section, window:N, page (default none,section)")
    add_rerank_args(p)
    p.add_argument("-k", type=int, default=5, help="a question is answered within the top k (default 5)")
    p.add_argument("--levels", default="2-4", metavar="A-B", help="heading levels the probe asks (default 2-4)")
    p.add_argument("--threshold", type=float, default=None,
                   help="score threshold of dense search on QUERIES (default from config, else none)")
    p.add_argument("--keep", action="store_true", help="keep every collection tune made (default: the winner's)")
    p.add_argument("--show", type=int, default=10, metavar="N", help="rows of the ranking to print (0: all)")
    p.add_argument("--config", metavar="FILE", help="config file (default: chunkscope.toml or pyproject.toml "
                                                    "nearest the docs); --write writes into it")
    add_store_args(p)
    add_json_arg(p)
    p.set_defaults(func=cmd_tune)


def parse_parents(text: str) -> list[str]:
    """``--parent none,section`` → the parents, checked (one spelling each)."""
    from chunkscope.retrieval.parents import ParentError, parse_parent

    out: list[str] = []
    for item in (x.strip() for x in (text or "").split(",")):
        if not item:
            continue
        try:
            label = parse_parent(item).label
        except ParentError as exc:
            raise ParamError(f"--parent {text!r}: {exc}") from None
        if label not in out:
            out.append(label)
    if not out:
        raise ParamError(f"--parent {text!r}: no value given (e.g. none,section)")
    return out


def configured_strategies(config: Any) -> list[str]:
    """The strategies the configuration names: ``[strategies.NAME]`` tables and the presets' strategies."""
    named = list(config.strategies)
    named += [str(p["strategy"]) for p in config.presets.values() if isinstance(p, dict) and "strategy" in p]
    return list(dict.fromkeys(named))


def _check(args: argparse.Namespace) -> tuple[float | None, list[str] | None, list[str] | None, list[str] | None]:
    """Everything the command line says that can be refused before any work."""

    budget = parse_budget(args.budget)
    if args.k < 1:
        raise ParamError(f"-k must be positive, got {args.k}")
    if args.show < 0:
        raise ParamError(f"--show must be 0 or more, got {args.show}")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.preset_name or ""):
        raise ParamError(f"--preset-name {args.preset_name!r}: use letters, digits, '-' and '_'")
    strategies = None
    if args.strategy:
        strategies = list(dict.fromkeys(args.strategy))
        for name in strategies:
            strategy_class(name)  # UnknownStrategy lists the names
    modes = parse_search(args.search, several=True) if args.search else None
    prefixes = None
    if args.prefix is not None:
        prefixes = [x.strip() for x in args.prefix.split(",") if x.strip()]
        if not prefixes:
            raise ParamError(f"--prefix {args.prefix!r}: no value given")
    return budget, strategies, modes, prefixes


def config_target(ctx: Context, args: argparse.Namespace) -> tuple[Path, tuple[str, ...]]:
    """Where ``--write`` writes: --config, else the file the tree's configuration came from, else a new
    ``chunkscope.toml`` in the docs root; with the table prefix of a pyproject.toml."""
    if args.config:
        path = Path(args.config)
    elif ctx.config.source is not None:
        path = Path(ctx.config.source)
    else:
        from chunkscope.config.reader import CONFIG_NAME

        path = Path(ctx.tree.root) / CONFIG_NAME
    return path, (("tool", "chunkscope") if path.name == "pyproject.toml" else ())


def cmd_tune(args: argparse.Namespace) -> int:
    from chunkscope.evaluation.queries import load_queries
    from chunkscope.evaluation.tune.search import tune

    budget, strategies, modes, prefixes = _check(args)
    parents = parse_parents(args.parent)
    lo, hi = parse_levels(args.levels)
    queries = load_queries(args.queries) if args.queries else None  # before the tree is read or the store opened
    ctx = load_context(args)
    threshold = args.threshold if args.threshold is not None else ctx.config.query.get("threshold")
    target = config_target(ctx, args) if args.write or args.write_best_so_far else None
    kw: dict[str, Any] = {}
    if prefixes is not None:
        kw["prefixes"] = prefixes
    if strategies is None:
        from chunkscope.evaluation.tune.space import default_strategies

        # A strategy that embeds as it chunks (semantic) joins the default space when the configuration uses it.
        strategies = default_strategies(configured_strategies(ctx.config))
    reranker = retrieval_setup.make_reranker(ctx.config, args)
    # The store first: a tree in use by another process is said at once, before the model loads.
    try:
        with retrieval_setup.open_store(ctx, args) as store:
            embedder = retrieval_setup.make_embedder(ctx, args)
            with graceful_interrupt() as cancel, progress_bar("tune", quiet=args.json) as on_progress:
                result = tune(ctx.tree, queries, budget=budget, k=args.k, strategies=strategies, modes=modes,
                              config=ctx.config, embedder=embedder, store=store, on_progress=on_progress,
                              cancel=cancel, threshold=threshold, site_url=ctx.config.site_url or None,
                              min_level=lo, max_level=hi, keep=args.keep, reranker=reranker, parents=parents, **kw)
    finally:
        if reranker is not None:
            reranker.close()
    written = None
    # No answer (budget ended early, or a seed at its defaults won): nothing is written unless asked for.
    if target is not None and result.best is not None and not result.cancelled and (
            not result.no_answer or args.write_best_so_far):
        from chunkscope.config.presets import write_preset

        written = write_preset(target[0], args.preset_name, result.preset(), comment=result.describe_best(),
                               table_prefix=target[1])
    if args.json:
        out = result.to_dict()
        out["written"] = ({"path": str(written.path), "table": written.table, "created_file": written.created_file,
                           "replaced": written.replaced} if written is not None else None)
        print(json_line(out))
    else:
        print_tune(result, args, written, target)
    if result.cancelled:
        raise Interrupted("the ranking covers what was measured" + (" (nothing written)" if args.write else ""))
    if result.best is None:
        error("nothing was measured within the budget"
              + (f" ({len(result.skipped)} configurations skipped)" if result.skipped else "")
              + "; give a larger --budget")
        return EXIT_USAGE
    return documents_exit(ctx.tree)


#: Short names of the parts, for table headers.
_SHORT = {"probe_hit": "hit@{k}", "probe_mrr": "MRR", "read": "read", "limits": "limits", "lint": "lint",
          "graph": "hub/orph", "hit": "hit@{k}", "mrr": "MRR"}


_WORDS = {"probe_hit": "probe hit@{k}", "probe_mrr": "probe MRR", "read": "text read", "limits": "within limits",
          "lint": "lint-clean", "graph": "no hubs/orphans", "hit": "hit@{k}", "mrr": "MRR"}


def weights_line(result) -> str:
    """How the score is made, in one line: ``score = 0.45 × probe hit@5 + …``."""
    k = result.k
    terms = [f"{w:.2f} × {_WORDS[p].format(k=k)}" for p, w in result.weights.items() if w > 0]
    return "score = " + " + ".join(terms)


def _unmeasured(result) -> list[str]:
    """Parts of the score no trial could measure (their weight went to the others)."""
    if not result.trials:
        return []
    return [p for p in result.weights if all(t.parts.get(p) is None for t in result.trials)]


def _part_cell(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _fraction(rung) -> str:
    return "all" if rung.whole else f"{rung.fraction:.0%}"


def print_tune(result, args, written, target) -> None:
    from rich.text import Text

    con = console()
    k = result.k
    if result.source == "probe":
        ps = result.probe
        lo, hi = ps.levels if ps is not None else (2, 4)
        what = (f"label-free: {result.queries} probe questions (section headings, levels {lo}-{hi}) and what needs "
                f"no questions")
    else:
        what = f"on {result.queries} labelled questions"
    budget = f"budget {format_seconds(result.budget)}" if result.budget is not None else "no budget"
    stages = f" × parent {', '.join(result.parents)}" if result.parents != ("none",) else ""
    if result.rerank:
        stages += f" × reranker {visible(result.rerank, oneline=True)} off/on"
    con.print(Text(f"tune {what} · {budget} · {result.chunkings} chunkings × {len(result.modes)} search modes "
                   f"({', '.join(result.modes)}){stages}", style="bold"))
    con.print(Text(weights_line(result) + "  (each part 0-1, higher is better)", style="dim"))
    gone = _unmeasured(result)
    if gone:
        names = ", ".join(_WORDS[p].format(k=k) for p in gone)
        con.print(Text(f"not measured: {names} (no lint rule, or no tokenizer); the other parts share its weight",
                       style="dim"))
    con.print()
    con.print(rungs_table(result, con.width, title="successive halving", title_justify="left"))
    best = result.best
    if best is None:
        return
    rung = result.rungs[best.rung]
    where = "the whole tree" if rung.whole else f"{_fraction(rung)} of the tree (the search stopped before the whole)"
    con.print()
    table, dropped = ranking_table(result, con.width, args.show, title=f"ranking on {where}, {rung.questions} "
                                   f"{'probe ' if result.source == 'probe' else ''}questions", title_justify="left")
    con.print(table)
    if dropped:
        con.print(Text(f"({', '.join(dropped)} left out at this width; --json has them)", style="dim"))
    con.print()
    for line in evidence_title(result):
        con.print(Text(line, style="bold" if line.startswith("evidence") else ""))
    con.print(evidence_table(result, con.width))
    if best.misses:
        shown = best.misses[:5]
        why = ", ".join(f"{n} {r}" for r, n in best.reasons.items())
        con.print(Text(f"the winner misses {best.missed} of {best.questions} questions"
                       + (f" ({why})" if why else "") + ", e.g.:", style="dim"))
        for m in shown:
            con.print(Text("  " + visible(m, oneline=True), style="dim"))
    if result.skipped:
        con.print(Text(f"skipped ({len(result.skipped)}): " + "; ".join(visible(f"{c}: {r}", oneline=True)
                                                                         for c, r in result.skipped[:3])
                       + (" …" if len(result.skipped) > 3 else ""), style="yellow"))
    con.print()
    if result.no_answer:
        for line in no_answer_lines(result):
            con.print(Text(line, style="bold yellow"))
    # The best so far; its comment says when it is no answer.
    snippet = result.preset_toml(args.preset_name)
    sys.stdout.flush()
    print(visible(snippet), end="")
    if written is not None:
        how = "replaced" if written.replaced else ("added to a new file" if written.created_file else "added")
        con.print(Text(f"[{written.table}] {how}: {written.path}", style="green"))
        con.print(Text(f"use it: chunkscope eval DOCS QUERIES -s {args.preset_name}, or choose it in the app", style="dim"))
    elif result.no_answer and target is not None and not result.cancelled:
        con.print(Text("nothing written: this is no answer (--write-best-so-far writes the best so far)",
                       style="yellow"))
    elif result.cancelled and args.write:
        con.print(Text("stopped: nothing written (run again with --write; measured vectors are cached)", style="yellow"))
    elif target is None:
        con.print(Text(f"--write stores it as [presets.{args.preset_name}] in the tree's chunkscope.toml", style="dim"))
    stop = " (budget spent)" if result.budget_spent else (" (stopped)" if result.cancelled else "")
    budget_words = f" of a {format_seconds(result.budget)} budget" if result.budget is not None else ""
    con.print(Text(f"tune took {format_seconds(result.seconds)}{budget_words}{stop}; {len(result.trials)} trials; "
                   f"embedded {result.embedded:,} texts, {result.cached:,} from the cache"
                   + ("; kept the winner's collection" if result.kept else ""), style="dim"))


def no_answer_lines(result) -> list[str]:
    """Why the best so far is no recommendation, and the budget a search of the whole tree needs here."""
    lines = [f"no answer: {result.no_answer}"]
    need = result.needed_budget()
    if not result.ended_early:  # a seed at its defaults won on the whole tree
        lines.append("keep the strategy's defaults, or search other strategies or values (--strategy, --prefix)")
    elif need is not None:
        lines.append(f"the whole search needs about {format_seconds(need)} on this tree (from the measured cost "
                     f"per configuration): run again with --budget {max(1, math.ceil(need / 60))}m; measured "
                     f"vectors are cached")
    return lines


def rungs_table(result, width: int, **kw: Any) -> Any:
    rows = [r for r in result.rungs]
    total_docs = len(rows[-1].paths) if rows else 0
    cols = [Col("rung", [str(r.index + 1) for r in rows], justify="right"),
            Col("part of the tree", [f"{_fraction(r)} ({len(r.paths)} of {total_docs} files)" for r in rows]),
            Col("questions", [str(r.questions) for r in rows], justify="right"),
            Col("measured", [f"{r.measured} of {r.planned}" if r.planned else "—" for r in rows], justify="right"),
            Col("time", [format_seconds(r.seconds) if r.planned else "—" for r in rows], justify="right")]
    if any(r.stopped for r in rows):
        cols.append(Col("", [{"budget": "budget share spent", "cancelled": "stopped"}.get(r.stopped, "")
                             for r in rows]))
    return fit_table(cols, width, [("", DROP)], **kw)[0]


def ranking_table(result, width: int, show: int, **kw: Any) -> tuple[Any, list[str]]:
    from rich.text import Text

    best = result.best
    ranked = result.on_rung(best.rung)
    if show:
        ranked = ranked[:show]
    k = result.k
    parts = [p for p in result.weights if result.weights[p] > 0]
    cols = [Col("#", [str(i) for i in range(1, len(ranked) + 1)], justify="right"),
            Col("configuration", [Text(visible(t.label, oneline=True)) for t in ranked], overflow="fold"),
            Col("score", [f"{t.score:.3f}" for t in ranked], justify="right", style="bold")]
    cols += [Col(_SHORT[p].format(k=k), [_part_cell(t.parts.get(p)) for t in ranked], justify="right")
             for p in parts]
    cols += [Col("chunks", [str(t.chunks) for t in ranked], justify="right"),
             Col("time", [f"{t.seconds:.0f}s" for t in ranked], justify="right")]
    steps = [("configuration", 30), ("time", DROP), *((_SHORT[p].format(k=k), DROP) for p in reversed(parts[2:])),
             ("configuration", 16)]
    styles = ["green" if i == 0 else None for i in range(len(ranked))]
    return fit_table(cols, width, steps, row_styles=styles, **kw)


def evidence_table(result, width: int, **kw: Any) -> Any:
    """The winner's parts and metrics beside the best seed's, measured on the same rung and questions."""
    pair = result.comparison()
    best = result.best
    k = result.k
    trials = list(pair) if pair is not None else [best]
    rows: list[list[str]] = []
    for p in result.weights:
        rows.append([_WORDS[p].format(k=k), *(_part_cell(t.parts.get(p)) for t in trials)])
    extra = ([("hit@1", "hit@1")] if k != 1 else []) + [(f"passage_iou@{k}", f"passage IoU@{k}")]
    for m, name in extra:
        label = f"probe {name}" if result.source == "probe" else name
        rows.append([label, *(f"{t.metrics.get(m, 0.0):.3f}" for t in trials)])
    rows.append(["chunks", *(str(t.chunks) for t in trials)])
    rows.append(["score", *(f"{t.score:.3f}" for t in trials)])
    cols = [Col("", [r[0] for r in rows]), Col("winner", [r[1] for r in rows], justify="right", style="bold")]
    cols.append(Col("best seed", [r[2] if len(r) > 2 else "—" for r in rows], justify="right"))
    return fit_table(cols, width, (), **kw)[0]


def evidence_title(result) -> list[str]:
    """Who the evidence table compares, and on which questions."""
    pair = result.comparison()
    best = result.best
    if best.candidate.chunking.seed:
        return [f"evidence: the winner is a seed strategy at its defaults ({visible(best.label, oneline=True)}); "
                f"nothing to compare it with"]
    if pair is None:
        return [f"evidence: the winner ({visible(best.label, oneline=True)}); no seed was measured"]
    mine, seed = pair
    rung = result.rungs[mine.rung]
    where = "the whole tree" if rung.whole else f"{_fraction(rung)} of the tree"
    what = "probe questions" if result.source == "probe" else "questions"
    return [f"evidence: the winner against the best seed strategy, on the same {rung.questions} {what} ({where})",
            f"  winner:    {visible(best.label, oneline=True)}",
            f"  best seed: {visible(seed.label, oneline=True)}"]
