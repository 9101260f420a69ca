"""What every command shares: common arguments, loading the tree and strategies, safe terminal output."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from typing import Any, TextIO

from ..config import Config, ResolvedStrategy, load_config, parse_param_args, resolve_strategy
from ..docs import DocsTree, load_docs

#: Exit codes, as CI reads them.
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# Control characters are shown as Unicode control pictures (or escapes), never written raw: a document holding
# an ESC or OSC sequence must not drive the user's terminal. Bidi overrides could reorder what is shown.
_CONTROL_MAP = {c: chr(0x2400 + c) for c in range(0x20)}
_CONTROL_MAP[0x7F] = "\u2421"
for _c in range(0x80, 0xA0):
    _CONTROL_MAP[_c] = f"\\x{_c:02x}"
for _c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C):
    _CONTROL_MAP[_c] = f"\\u{_c:04x}"
_MULTILINE_MAP = dict(_CONTROL_MAP)
_MULTILINE_MAP[0x0A] = "\n"
_MULTILINE_MAP[0x09] = "\t"
_ONELINE_MAP = dict(_CONTROL_MAP)
_ONELINE_MAP[0x0A] = "\u21b5"
_ONELINE_MAP[0x09] = "\u2192"


def visible(text: str, *, oneline: bool = False) -> str:
    """Document text made safe for a terminal: every control character shown, none executed."""
    return text.translate(_ONELINE_MAP if oneline else _MULTILINE_MAP)


def snippet(text: str, width: int = 80) -> str:
    """A one-line preview of a chunk, whitespace folded, safe for a terminal."""
    flat = " ".join(text.split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return visible(flat, oneline=True)


_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def json_line(obj: Any) -> str:
    """One JSON line; C1 controls and bidi overrides escaped too (json leaves them raw, terminals obey them)."""
    return json.dumps(obj, ensure_ascii=False, default=str).translate(_JSON_ESCAPES)


def error(msg: str, stream: TextIO | None = None) -> None:
    """A one-line error for the user (never a traceback)."""
    print(f"chunkscope: error: {visible(msg, oneline=True)}", file=stream or sys.stderr)


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
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", help="override a strategy parameter (repeatable)")
    p.add_argument("--config", metavar="FILE", help="config file (default: chunkscope.toml or pyproject.toml nearest the docs)")


@dataclass
class Context:
    """A command's loaded inputs."""

    config: Config
    tree: DocsTree


def load_context(args: argparse.Namespace, *, report_problems: bool = True) -> Context:
    """Config + docs tree; per-file problems go to stderr as ``path: code: message`` and work goes on."""
    cfg = load_config(args.docs, getattr(args, "config", None))
    tree = load_docs(args.docs, ignore=cfg.ignore, max_bytes=cfg.max_file_bytes)
    if report_problems:
        print_problems(tree)
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
