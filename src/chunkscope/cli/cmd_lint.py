"""``chunkscope lint DOCS``: the seeds' validation checklists as rules, for authors and CI.

Exit codes (the table every command follows, see ``chunkscope.cli``): 0 when no finding is an error; 1 when at
least one is, and a file lint could not check is one: a file that could not be read (or whose front matter is
malformed) or that the strategy failed to chunk is reported in every format as a ``load-problem`` or
``not-chunked`` error, the other files are checked all the same. 2 when the docs, config or parameters cannot be
used, or no file could be checked at all. A CI job never passes on docs it did not look at: 1 and 2 both fail it;
1 says "fix the docs", 2 "fix the command or its setup". The first Ctrl-C stops the run after the file being
linted (exit 130, nothing printed: a partial report would read as a clean one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable

from ..lint import ERROR, RULES, Finding, LintReport, lint_settings, lint_tree
from ..wording import plural
from .cmd_core import chunk_tree, require_chunked
from .common import (
    EXIT_FINDINGS,
    EXIT_OK,
    add_docs_arg,
    add_strategy_args,
    console,
    load_context,
    strategies_from_args,
    visible,
)
from .progress_bar import graceful_interrupt, progress_bar

FORMATS = ("text", "json", "github")


def _rules_epilog() -> str:
    width = max(len(r) for r in RULES)
    lines = ["rules (id, default severity, what it finds):"]
    for r in RULES.values():
        lines.append(f"  {r.id:<{width}}  {r.severity:<7}  {r.summary}")
    lines.append("")
    lines.append("Silence a rule for the next block with <!-- chunkscope: ignore RULE[, RULE] --> (or 'all'),")
    lines.append("for a whole file with <!-- chunkscope: ignore-file RULE -->, or per path in [lint] per_path_ignores.")
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lint", help="find sections that chunk badly (exit 1 on errors)",
        description="Check every chunk against the strategy's limits and the document's structure.",
        epilog=_rules_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_docs_arg(p)
    add_strategy_args(p)
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (path:line:col: severity rule message), json, or github (workflow annotations)")
    p.add_argument("--select", action="append", metavar="RULE,...", help="only these rules (repeatable)")
    p.add_argument("--ignore", action="append", metavar="RULE,...", help="skip these rules (repeatable)")
    p.set_defaults(func=cmd_lint)


def display_paths(args: argparse.Namespace, tree) -> Callable[[str], str]:
    """Paths as the user gave them: the docs argument joined with the document's path, so editors and GitHub
    annotations find the file from the working directory."""
    if tree.single_file:
        # The file as given; another page of its tree (named by a duplicate finding) the way the user would reach
        # it: the given path with the file's own tree-relative path swapped for the other's.
        given = args.docs
        own = tree.documents[0].path if tree.documents else ""
        typed = Path(given).as_posix()
        prefix = typed[: len(typed) - len(own)] if own and typed.endswith(own) else None
        return lambda p: given if p == own else (prefix + p if prefix is not None else os.path.join(str(tree.root), p))
    root = args.docs
    return lambda p: os.path.join(root, p) if root not in ("", ".") else p


#: Pseudo-rules for files lint could not check (always errors, so the exit code is at least 1).
LOAD_PROBLEM, NOT_CHUNKED = "load-problem", "not-chunked"


def cmd_lint(args: argparse.Namespace) -> int:
    ctx = load_context(args, report_problems=False, require_documents=True)
    resolved = strategies_from_args(args, ctx.config)[0]
    lint_settings(ctx.config, args.select, args.ignore)  # a typo in [lint] fails before the (longer) chunking
    results = chunk_tree(ctx.tree, resolved, ctx.config, lint=False)
    display = display_paths(args, ctx.tree)
    with graceful_interrupt() as cancel, progress_bar("lint") as on_progress:
        report = lint_tree(ctx.tree, resolved, ctx.config, args.select, args.ignore, results=results,
                           display=display, cancel=cancel, on_progress=on_progress)
    unchecked = unchecked_files(ctx.tree, report, display)
    for note in report.notes:
        print(visible(note, oneline=True), file=sys.stderr)
    if args.format == "json":
        write_json(report, unchecked)
    elif args.format == "github":
        write_github(report, unchecked)
    else:
        write_text(report, resolved.label, unchecked)
    # After the output, which lists every file that could not be checked.
    require_chunked(results, args.docs, resolved.label)
    return EXIT_FINDINGS if report.errors or unchecked else EXIT_OK


def unchecked_files(tree, report: LintReport, display: Callable[[str], str]) -> list[Finding]:
    """The files lint could not check fully, as findings of the two pseudo-rules (line 1: the whole file)."""
    out = [Finding(display(p.path), 1, 1, LOAD_PROBLEM, ERROR, f"{p.code}: {p.message}", None) for p in tree.problems]
    out += [Finding(display(path), 1, 1, NOT_CHUNKED, ERROR, reason, None) for path, reason in report.failed.items()]
    return out


# --- output ---------------------------------------------------------------------------------------------------


def write_text(report: LintReport, label: str, unchecked: list[Finding]) -> None:
    from rich.text import Text

    con = console()
    for f in [*unchecked, *report.findings]:
        line = Text(visible(f"{f.path}:{f.line}:{f.column}: ", oneline=True))
        line.append(f.severity, style="bold red" if f.severity == ERROR else "yellow")
        line.append(f" {f.rule} ", style="cyan")
        line.append(visible(f.message, oneline=True))
        con.print(line, soft_wrap=True)
    files = len(report.chunks_by_path)
    chunks = sum(len(c) for c in report.chunks_by_path.values())
    if report.findings:
        con.print()
        width = max(len(r) for r in report.by_rule)
        for rid, n in report.by_rule.items():
            sev = {f.severity for f in report.findings if f.rule == rid}
            con.print(Text(f"  {n:>5}  {rid:<{width}}  {'/'.join(sorted(sev))}"), soft_wrap=True)
    summary = (f"{visible(label, oneline=True)}: {plural(files, 'file')}, {plural(chunks, 'chunk')}: "
               f"{plural(report.errors, 'error')}, {plural(report.warnings, 'warning')}")
    problems = sum(1 for f in unchecked if f.rule == LOAD_PROBLEM)
    if problems:
        summary += f", {plural(problems, 'file')} with load problems"
    if report.failed:
        summary += f", {len(report.failed)} not chunked"
    con.print(Text(summary, style="bold red" if report.errors or unchecked else "bold"), soft_wrap=True)


def write_json(report: LintReport, unchecked: list[Finding]) -> None:
    # ensure_ascii: every non-ASCII character is escaped, so no control or bidi character reaches a terminal.
    out = [f.to_dict() for f in [*unchecked, *report.findings]]
    sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=True) + "\n")


def _gh_data(s: str) -> str:
    """Escape a workflow command's message (GitHub's rules: %, CR, LF)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    """Escape a workflow command's property value (also ':' and ',')."""
    return _gh_data(s).replace(":", "%3A").replace(",", "%2C")


def github_line(f: Finding) -> str:
    kind = "error" if f.severity == ERROR else "warning"
    msg = visible(f.message, oneline=True)
    if f.hint:
        msg += f" (fix: {f.hint})"
    props = f"file={_gh_prop(visible(f.path, oneline=True))},line={f.line},col={f.column},title={_gh_prop(f.rule)}"
    return f"::{kind} {props}::{_gh_data(msg)}"


def write_github(report: LintReport, unchecked: list[Finding]) -> None:
    for f in [*unchecked, *report.findings]:
        sys.stdout.write(github_line(f) + "\n")
    tail = f", {plural(len(unchecked), 'file')} not checked" if unchecked else ""
    sys.stdout.write(f"chunkscope lint: {plural(report.errors, 'error')}, {plural(report.warnings, 'warning')}{tail}\n")
