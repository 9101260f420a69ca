"""``chunkscope compare``: how two strategies (or parameter sets) cut the same tree differently, with stats side by
side."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from typing import Any

from chunkscope.chunking.model import ChunkedDoc
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.compare import diff_trees
from chunkscope.config.reader import Config, ResolvedStrategy, resolve_strategy
from chunkscope.safe_text import visible
from chunkscope.cli.context import Context, chunk_tree, load_context, require_chunked
from chunkscope.cli.exits import documents_exit
from chunkscope.cli.options import add_docs_arg, add_json_arg
from chunkscope.cli.output import console, human_bytes
from chunkscope.cli.parsing import parse_param_args
from chunkscope.cli.side_by_side import print_side_by_side
from chunkscope.cli.table_layout import Col, fit_table
from chunkscope.cli.tree_figures import embed_dim, tree_stats_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="where two strategies or parameter sets cut differently, file by file")
    add_docs_arg(p)
    p.add_argument("--strategy", "-s", action="append", metavar="NAME", required=True,
                   help="strategy or preset; give two (or one with --param-b to compare parameter sets)")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE",
                   help="parameter for A (and B when B is the same strategy)")
    p.add_argument("--param-b", action="append", metavar="KEY=VALUE", help="parameter for B only")
    p.add_argument("--config", metavar="FILE", help="config file")
    p.add_argument("--files", type=int, default=20, metavar="N", help="show at most N changed files (default 20)")
    add_json_arg(p)
    p.set_defaults(func=cmd_compare)


def check_pair(args: argparse.Namespace) -> None:
    """Refuse, before any work, a command line that does not name exactly two configurations to compare."""
    names = args.strategy
    if len(names) > 2:
        raise ParamError(f"compare takes two strategies, got {len(names)} ({', '.join(names)}); "
                         f"`chunkscope stats DOCS -s A -s B -s C` shows any number side by side")
    if len(names) == 1 and not args.param_b:
        raise ParamError("compare needs two strategies (-s A -s B) or one strategy with --param-b k=v")


def _resolve_pair(args: argparse.Namespace, cfg: Config) -> tuple[ResolvedStrategy, ResolvedStrategy]:
    """The two configurations to compare (`check_pair` has vetted the command line)."""
    names = args.strategy
    params_a = parse_param_args(args.param)
    params_b_only = parse_param_args(args.param_b)
    a = resolve_strategy(cfg, names[0], params_a)
    if len(names) == 1:
        b = resolve_strategy(cfg, names[0], {**params_a, **params_b_only})
    else:
        b = resolve_strategy(cfg, names[1], params_b_only)
    return a, b


def _lint_counts(ctx: Context, resolved: ResolvedStrategy, results: Sequence[ChunkedDoc]) -> tuple[int, int]:
    """(errors, warnings) as `chunkscope lint` counts them: every rule, duplicates across files included (a
    per-document pass sees only a file's own duplicates)."""
    from chunkscope.lint import lint_tree

    report = lint_tree(ctx.tree, resolved, ctx.config, results=results)
    return report.errors, report.warnings


def cmd_compare(args: argparse.Namespace) -> int:
    check_pair(args)
    ctx = load_context(args)
    a, b = _resolve_pair(args, ctx.config)
    res_a = chunk_tree(ctx.tree, a, ctx.config, lint=False)
    res_b = chunk_tree(ctx.tree, b, ctx.config, lint=False)
    require_chunked(res_a, args.docs, a.label)
    require_chunked(res_b, args.docs, b.label)
    code = documents_exit(ctx.tree, [*res_a, *res_b])
    diff = diff_trees(a.label, res_a, b.label, res_b)
    spec = ctx.config.embedder_spec()
    dim = embed_dim(spec)
    stats = [tree_stats_of(ctx.tree, a, res_a, dim, spec),
             tree_stats_of(ctx.tree, b, res_b, dim, spec)]
    lints = [_lint_counts(ctx, a, res_a), _lint_counts(ctx, b, res_b)]
    if args.json:
        out = diff.to_dict()
        out["stats"] = [s.to_dict() for s in stats]
        out["lint"] = [{"errors": x[0], "warnings": x[1]} for x in lints]
        print(json.dumps(out, indent=2))
        return code
    from rich.text import Text

    con = console()
    con.print(Text(diff.headline(), style="bold"))
    con.print(Text(f"A = {visible(a.label, oneline=True)}, B = {visible(b.label, oneline=True)}", style="dim"))
    con.print()
    rows = [
        ("chunks", lambda s: str(s.chunks)),
        ("tokens median", lambda s: f"{statistics.median(s.counts):.0f}" if s.counts else "0"),
        ("tokens p95", lambda s: str(s.percentile(0.95))),
        ("tokens max", lambda s: str(max(s.counts, default=0))),
        ("over limit", lambda s: str(s.over_limit)),
        ("storage estimate", lambda s: human_bytes(s.storage.total_bytes)),
        ("tokenizer", lambda s: s.tokenizer),
    ]
    table_rows = [(name, [f(s) for s in stats]) for name, f in rows]
    table_rows.append(("lint errors / warnings", [f"{x[0]} / {x[1]}" for x in lints]))
    print_side_by_side(con, "side by side", [a.label, b.label], table_rows)
    changed = diff.changed_files
    if changed:
        con.print()
        shown = changed[: args.files]
        title = f"changed files ({len(changed)})"
        con.print(changed_files_table(shown, con.width, title=title, title_justify="left"))
        con.print(Text(CHANGED_FILES_LEGEND, style="dim"))
        if len(changed) > args.files:
            con.print(Text(f"… and {len(changed) - args.files} more files (--files N to show more)", style="dim"))
    return code


#: What the short headers of the changed-files table mean (they are short so the table fits 80 columns).
CHANGED_FILES_LEGEND = ("A, B: chunks in each; same: chunks identical in both; -A: only in A; +B: only in B; "
                        "new cuts: lines where B cuts and A does not")


def changed_files_table(changed: Sequence[Any], width: int, **table_kw: Any) -> Any:
    """One row per changed file: the path (shortened by `shorten_path` when narrow), the counts (always whole) and the
    lines of B's new cuts (wrapped)."""
    def new_cuts(f: Any) -> str:
        return ", ".join(map(str, f.boundaries_only_b[:8])) + (" …" if len(f.boundaries_only_b) > 8 else "")

    cols = [
        Col("file", [visible(f.path, oneline=True) for f in changed], overflow="path"),
        Col("A", [str(f.a_chunks) for f in changed], justify="right"),
        Col("B", [str(f.b_chunks) for f in changed], justify="right"),
        Col("same", [str(f.identical) for f in changed], justify="right"),
        Col("-A", [str(len(f.only_a)) for f in changed], justify="right"),
        Col("+B", [str(len(f.only_b)) for f in changed], justify="right"),
        Col("new cuts", [new_cuts(f) for f in changed], overflow="fold"),
    ]
    steps = [("new cuts", 24), ("file", 28), ("new cuts", 14), ("file", 16), ("new cuts", 8), ("file", 10)]
    return fit_table(cols, width, steps, **table_kw)[0]
