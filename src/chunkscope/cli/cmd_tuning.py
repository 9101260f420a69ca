"""``compare``: how two strategies (or parameter sets) cut the same tree differently, with stats side by side."""

from __future__ import annotations

import argparse
import json
import statistics

from ..compare import diff_trees
from ..config import parse_param_args, resolve_strategy
from .cmd_core import chunk_tree, embed_dim, tree_stats
from .common import EXIT_OK, add_docs_arg, console, human_bytes, load_context, visible


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="where two strategies or parameter sets cut differently, file by file")
    add_docs_arg(p)
    p.add_argument("--strategy", "-s", action="append", metavar="NAME", required=True,
                   help="strategy or preset; give two (or one with --param-b to compare parameter sets)")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="parameter for A (and B when B is the same strategy)")
    p.add_argument("--param-b", action="append", metavar="KEY=VALUE", help="parameter for B only")
    p.add_argument("--config", metavar="FILE", help="config file")
    p.add_argument("--files", type=int, default=20, metavar="N", help="show at most N changed files (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compare)
    try:
        from . import cmd_eval_tools
    except ImportError:
        return
    cmd_eval_tools.register(sub)


def _resolve_pair(args: argparse.Namespace, cfg):
    names = args.strategy
    if len(names) > 2:
        raise ValueError("compare takes two strategies")
    params_a = parse_param_args(args.param)
    params_b_only = parse_param_args(args.param_b)
    a = resolve_strategy(cfg, names[0], params_a)
    if len(names) == 1:
        if not params_b_only:
            from ..chunk import ParamError

            raise ParamError("compare needs two strategies (-s A -s B) or one strategy with --param-b k=v")
        b = resolve_strategy(cfg, names[0], {**params_a, **params_b_only})
    else:
        b = resolve_strategy(cfg, names[1], params_b_only)
    return a, b


def _lint_counts(ctx, resolved, results) -> tuple[int, int] | None:
    try:
        from ..lint import annotate_chunks
    except ImportError:
        return None
    errors = warnings = 0
    for r in results:
        for f in annotate_chunks(r.doc, r.chunks, resolved.strategy, ctx.config):
            if f.severity == "error":
                errors += 1
            else:
                warnings += 1
    return errors, warnings


def cmd_compare(args: argparse.Namespace) -> int:
    ctx = load_context(args)
    a, b = _resolve_pair(args, ctx.config)
    res_a = chunk_tree(ctx.tree, a, ctx.config, lint=False)
    res_b = chunk_tree(ctx.tree, b, ctx.config, lint=False)
    diff = diff_trees(a.label, res_a, b.label, res_b)
    dim = embed_dim(ctx.config.embed_model)
    stats = [tree_stats(ctx.tree, a, res_a, dim), tree_stats(ctx.tree, b, res_b, dim)]
    lints = [_lint_counts(ctx, a, res_a), _lint_counts(ctx, b, res_b)]
    if args.json:
        out = diff.to_dict()
        out["stats"] = [s.to_dict() for s in stats]
        out["lint"] = [{"errors": x[0], "warnings": x[1]} if x else None for x in lints]
        print(json.dumps(out, indent=2))
        return EXIT_OK
    from rich.table import Table
    from rich.text import Text

    con = console()
    con.print(Text(diff.headline(), style="bold"))
    con.print(Text(f"A = {a.label}, B = {b.label}", style="dim"))
    con.print()
    t = Table(title="side by side", title_justify="left")
    t.add_column("")
    t.add_column(a.label, justify="right")
    t.add_column(b.label, justify="right")
    rows = [
        ("chunks", lambda s: str(s.chunks)),
        ("tokens median", lambda s: f"{statistics.median(s.counts):.0f}" if s.counts else "0"),
        ("tokens p95", lambda s: str(s.percentile(0.95))),
        ("tokens max", lambda s: str(max(s.counts, default=0))),
        ("over limit", lambda s: str(s.over_limit)),
        ("storage estimate", lambda s: human_bytes(s.vector_bytes + s.payload_bytes)),
    ]
    for name, f in rows:
        t.add_row(name, *[f(s) for s in stats])
    t.add_row("tokenizer", *[s.tokenizer for s in stats])
    if all(lints):
        t.add_row("lint errors / warnings", *[f"{x[0]} / {x[1]}" for x in lints])
    con.print(t)
    changed = diff.changed_files
    if changed:
        con.print()
        ft = Table(title=f"changed files ({len(changed)})", title_justify="left")
        ft.add_column("file", no_wrap=True, min_width=min(40, max(len(f.path) for f in changed)))
        for col in ("A", "B", "same", "only A", "only B"):
            ft.add_column(col, justify="right")
        ft.add_column("cuts only in B (lines)", overflow="fold")
        for f in changed[: args.files]:
            lines = ", ".join(map(str, f.boundaries_only_b[:8])) + (" …" if len(f.boundaries_only_b) > 8 else "")
            ft.add_row(Text(visible(f.path, oneline=True)), str(f.a_chunks), str(f.b_chunks), str(f.identical),
                       str(len(f.only_a)), str(len(f.only_b)), lines)
        con.print(ft)
        if len(changed) > args.files:
            con.print(Text(f"… and {len(changed) - args.files} more files (--files N to show more)", style="dim"))
    return EXIT_OK
