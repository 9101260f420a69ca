"""What every command shares: common arguments, loading the tree and strategies, safe terminal output."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from chunkscope.config.reader import Config, ResolvedStrategy, load_config, resolve_strategy
from chunkscope.document.loader import DocsError, DocsTree, load_docs
from chunkscope.safe_text import json_line, snippet, visible  # noqa: F401 - the commands import them from here
from chunkscope.wording import install_hint
from chunkscope.cli.parsing import parse_param_args

#: Exit codes, as CI reads them.
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

def error(msg: str, stream: TextIO | None = None) -> None:
    """A one-line error for the user (never a traceback)."""
    print(f"chunkscope: error: {visible(msg, oneline=True)}", file=stream or sys.stderr)


def user_message(exc: BaseException) -> str:
    """The line a known error shows; a missing optional part says what to install."""
    from chunkscope.embedding.spec import EmbedderSpecError
    from chunkscope.extras import MissingExtra
    from chunkscope.lint import UnknownRule
    from chunkscope.evaluation.tuning import UnknownMetric

    if isinstance(exc, MissingExtra):
        return install_hint("this command", exc.extra, exc.package)
    # The core names what was wrong; the command line names the flag it came from.
    if isinstance(exc, UnknownMetric):
        return f"--metric {exc.metric!r}: {exc.expected}"
    if isinstance(exc, EmbedderSpecError):
        return f"--embedder: {exc}"
    if isinstance(exc, UnknownRule) and exc.source in ("select", "ignore"):
        return f"--{exc.source}: unknown rule {exc.rule!r} ({exc.known()})"
    return str(exc)


def add_docs_arg(p: argparse.ArgumentParser, optional: bool = False) -> None:
    if optional:
        p.add_argument("docs", nargs="?", default=".", metavar="DOCS", help="docs folder or Markdown file (default: .)")
    else:
        p.add_argument("docs", metavar="DOCS", help="docs folder or a single Markdown/MDX file")


def add_strategy_args(p: argparse.ArgumentParser, multiple: bool = False) -> None:
    if multiple:
        p.add_argument("--strategy", "-s", action="append", metavar="NAME",
                       help="strategy or preset (repeat to compare); default from config, else recursive")
    else:
        p.add_argument("--strategy", "-s", metavar="NAME", help="strategy or preset (default from config, else recursive)")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE",
                   help="override a strategy parameter (repeatable); lists as JSON, e.g. 'separators=[\"\\n\\n\", \" \"]'")
    p.add_argument("--config", metavar="FILE", help="config file (default: chunkscope.toml or pyproject.toml nearest the docs)")


@dataclass
class Context:
    """A command's loaded inputs."""

    config: Config
    tree: DocsTree


def load_context(args: argparse.Namespace, *, report_problems: bool = True, require_documents: bool = True) -> Context:
    """Config + docs tree; per-file problems go to stderr as ``path: code: message`` and work goes on.

    With ``require_documents``, a tree without a single readable Markdown file is a usage error (a mistyped docs
    folder must not pass a CI job as "0 files, 0 errors").
    """
    cfg = load_config(args.docs, getattr(args, "config", None))
    tree = load_docs(args.docs, ignore=cfg.ignore, max_bytes=cfg.max_file_bytes)
    if report_problems:
        print_problems(tree)
    if require_documents and not tree.documents:
        if not report_problems:
            print_problems(tree)  # the reasons, before the one-line verdict
        what = "no file could be read" if tree.problems else "no .md or .mdx files found"
        raise DocsError(f"{args.docs}: {what}")
    return Context(cfg, tree)


def print_problems(tree: DocsTree) -> None:
    for p in tree.problems:
        print(visible(str(p), oneline=True), file=sys.stderr)


def strategies_from_args(args: argparse.Namespace, cfg: Config) -> list[ResolvedStrategy]:
    names = args.strategy if isinstance(args.strategy, list) else [args.strategy]
    names = [n for n in names if n] or [None]
    params = parse_param_args(getattr(args, "param", None))
    return [resolve_strategy(cfg, n, params) for n in names]


def console(stream: TextIO | None = None):
    """A rich console that never interprets document text as markup and never emits raw control codes."""
    from rich.console import Console

    return Console(file=stream or sys.stdout, highlight=False, markup=False, emoji=False, soft_wrap=False)


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
