"""``chunkscope report``: a tree's chunks, token counts and lint findings as one self-contained HTML page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chunkscope.lint import lint_tree
from chunkscope.report import build_report, render_report
from chunkscope.safe_text import visible
from chunkscope.wording import plural
from chunkscope.cli.context import chunk_tree, load_context, require_chunked, strategies_from_args
from chunkscope.cli.exits import EXIT_USAGE, documents_exit
from chunkscope.cli.options import add_docs_arg, add_strategy_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write the chunks, token counts and lint findings as one HTML page")
    add_docs_arg(p)
    add_strategy_args(p)
    p.add_argument("--html", metavar="FILE", required=True,
                   help="the page to write: self-contained (no network when viewed), for a CI artifact or a PR")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    results = chunk_tree(ctx.tree, resolved, ctx.config, lint=False)
    require_chunked(results, args.docs, resolved.label)
    # The same findings `chunkscope lint` reports, made from these very chunks.
    lint = lint_tree(ctx.tree, resolved, ctx.config, results=results)
    for note in lint.notes:
        print(visible(note, oneline=True), file=sys.stderr)
    lim = resolved.strategy.limits()
    data = build_report(ctx.tree, results, lint, label=resolved.label, tokenizer=lim.tokenizer, limit=lim.max,
                        minimum=lim.min)
    page = render_report(data)
    out = Path(args.html)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        print(visible(f"chunkscope: {args.html}: cannot write the report: {exc.strerror or exc}", oneline=True),
              file=sys.stderr)
        return EXIT_USAGE
    print(visible(f"{args.html}: {plural(len(data.files), 'file')}, {plural(data.chunk_count, 'chunk')}, "
                  f"{plural(data.errors, 'lint error')}, {plural(data.warnings, 'lint warning')}", oneline=True))
    return documents_exit(ctx.tree, results)
