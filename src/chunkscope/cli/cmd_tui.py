"""``chunkscope [DOCS]``: open the explorer app (Textual is imported only here and in ``chunkscope.tui``)."""

from __future__ import annotations

import argparse

from .common import add_docs_arg, add_strategy_args, load_context, strategies_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the explorer (the default: `chunkscope DOCS`)")
    add_docs_arg(p, optional=True)
    add_strategy_args(p)
    p.set_defaults(func=cmd_tui)


def cmd_tui(args: argparse.Namespace) -> int:
    ctx = load_context(args, report_problems=False, require_documents=False)
    resolved = strategies_from_args(args, ctx.config)[0]
    from ..tui.app import run_app

    return run_app(ctx.tree, ctx.config, resolved)
