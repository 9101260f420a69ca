"""``chunkscope lint DOCS``: the seeds' validation checklists as rules, for authors and CI.

Exit codes (the table every command follows, see ``chunkscope.cli``): 0 when no finding is an error; 1 when at
least one is, and a file lint could not check is one: a file that could not be read (or whose front matter is
malformed) or that the strategy failed to chunk is reported in every format as a ``load-problem`` or
``not-chunked`` error, the other files are checked all the same. 2 when the docs, config or parameters cannot be
used, or no file could be checked at all. A CI job never passes on docs it did not look at: 1 and 2 both fail it;
1 says "fix the docs", 2 "fix the command or its setup". The first Ctrl-C stops the run after the file being
linted (exit 130, nothing printed: a partial report would read as a clean one).

``--embeddings`` adds the rules that read the chunks' vectors (``hub``, ``orphan``, ``near-duplicate``): the tree
is indexed as ``index`` does (only what changed is embedded), every chunk's nearest chunks are asked of the store,
and the report ends with the tree's hubness (the k-occurrence skewness of Radovanović et al., JMLR 2010).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from chunkscope.lint import ERROR, RULES, Finding, LintReport, embedding_rules, lint_settings, lint_tree
from chunkscope.safe_text import visible
from chunkscope.wording import install_hint, plural
from chunkscope.cli import retrieval_setup
from chunkscope.cli.context import chunk_tree, load_context, require_chunked, strategies_from_args
from chunkscope.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Interrupted
from chunkscope.cli.options import add_docs_arg, add_store_args, add_strategy_args
from chunkscope.cli.output import console, error
from chunkscope.cli.progress_bar import graceful_interrupt, progress_bar

if TYPE_CHECKING:
    from chunkscope.chunking.model import ChunkedDoc
    from chunkscope.config.reader import Config, ResolvedStrategy
    from chunkscope.document.loader import DocsTree
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.neighbours import Neighbourhoods, StoredEmbeddings
    from chunkscope.retrieval.store import Store
    from chunkscope.cli.context import Context

FORMATS = ("text", "json", "github")


def _rules_epilog() -> str:
    width = max(len(r) for r in RULES)
    lines = ["rules (id, default severity, what it finds):"]
    for r in RULES.values():
        lines.append(f"  {r.id:<{width}}  {r.severity:<7}  {r.summary}")
    lines.append("")
    lines.append(f"With --embeddings: {', '.join(embedding_rules())} (the tree is indexed first, as `index` does).")
    lines.append("Silence a rule for the next block with <!-- chunkscope: ignore RULE[, RULE] --> (or 'all'),")
    lines.append("for a whole file with <!-- chunkscope: ignore-file RULE -->, or per path in [lint] per_path_ignores.")
    lines.append("In .mdx files, which cannot hold <!-- -->, write {/* chunkscope: ignore RULE */} (and ignore-file).")
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
    p.add_argument("--embeddings", action="store_true",
                   help=f"also run the rules that read the chunks' vectors ({', '.join(embedding_rules())}): "
                        "indexes the tree first, as index does (needs the retrieval extra)")
    add_store_args(p)
    p.set_defaults(func=cmd_lint)


def display_paths(args: argparse.Namespace, tree: DocsTree) -> Callable[[str], str]:
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
    if Path(root).resolve() != Path(tree.root).resolve():
        # A site root given as DOCS is read through its docs folder (`docs/`, or `../docs` beside `website/`):
        # paths start from that folder, reached from what the user typed.
        root = os.path.normpath(os.path.join(root, os.path.relpath(tree.root, root)))
    return lambda p: os.path.join(root, p) if root not in ("", ".") else p


#: Pseudo-rules for files lint could not check (always errors, so the exit code is at least 1).
LOAD_PROBLEM, NOT_CHUNKED = "load-problem", "not-chunked"


def cmd_lint(args: argparse.Namespace) -> int:
    from chunkscope.extras import MissingExtra

    ctx = load_context(args, report_problems=False, require_documents=True)
    ctx = dataclasses.replace(ctx, config=_with_embedder(ctx.config, args))
    resolved = strategies_from_args(args, ctx.config)[0]
    settings = lint_settings(ctx.config, args.select, args.ignore)  # a typo in [lint] fails before the chunking
    wanted = [r for r in embedding_rules() if r in settings.enabled]
    if not args.embeddings and args.select and wanted:
        verb = "runs" if len(wanted) == 1 else "run"
        print(f"chunkscope: note: {', '.join(wanted)} {verb} only with --embeddings", file=sys.stderr)
    with ExitStack() as stack:
        embedder: Embedder | None = None
        store: Store | None = None
        if args.embeddings and wanted:
            try:  # what is missing is said before any work, in one line
                # The store first: a tree in use by another process is said at once, before the model loads.
                store = stack.enter_context(retrieval_setup.open_store(ctx, args))
                embedder = retrieval_setup.make_embedder(ctx, args)
            except MissingExtra as exc:
                error(install_hint("lint --embeddings", exc.extra, exc.package))
                return EXIT_USAGE
        results = chunk_tree(ctx.tree, resolved, ctx.config, lint=False)
        display = display_paths(args, ctx.tree)
        embeddings = None
        if embedder is not None and store is not None:
            embeddings = embed_tree(ctx, resolved, embedder, store, results)
        with graceful_interrupt() as cancel, progress_bar("lint") as on_progress:
            report = lint_tree(ctx.tree, resolved, ctx.config, args.select, args.ignore, results=results,
                               display=display, cancel=cancel, on_progress=on_progress, embeddings=embeddings)
    unchecked = unchecked_files(ctx.tree, report, display)
    for note in report.notes:
        print(visible(note, oneline=True), file=sys.stderr)
    space = None
    if embeddings is not None and embedder is not None:
        space = hubness_line(embeddings.neighbourhoods(), report, embedder.model, wanted)
    if args.format == "json":
        write_json(report, unchecked)
    elif args.format == "github":
        write_github(report, unchecked)
    else:
        write_text(report, resolved.label, unchecked)
    window = window_line(report, resolved, ctx.config)
    if window is not None:
        # Under the text report and the annotations' summary; JSON keeps its format, so it goes to stderr there.
        print(window, file=sys.stderr if args.format == "json" else sys.stdout)
    if space is not None:
        # The text report ends with it; JSON and annotations keep their format, so it goes to stderr there.
        print(space, file=sys.stdout if args.format == "text" else sys.stderr)
    # After the output, which lists every file that could not be checked.
    require_chunked(results, args.docs, resolved.label)
    return EXIT_FINDINGS if report.errors or unchecked else EXIT_OK


def _with_embedder(cfg: Config, args: argparse.Namespace) -> Config:
    """The configuration with --embedder/--embed-url in ``[embedder]``, so embed-truncation counts in the tokens of
    the embedder the vectors come from (an explicit model does not inherit the config's url, see
    `Config.embedder_spec`)."""
    model, url = getattr(args, "embedder", None), getattr(args, "embed_url", None)
    if not model and not url:
        return cfg
    embedding = dict(cfg.embedding)
    if model:
        embedding["model"] = model
        embedding.pop("url", None)
    if url:
        embedding["url"] = url
    new = dataclasses.replace(cfg, embedding=embedding)
    new.embedder_spec()  # EmbedderSpecError now, worded by the command line as --embedder's
    return new


def embed_tree(ctx: Context, resolved: ResolvedStrategy, embedder: Embedder, store: Store,
               results: Sequence[ChunkedDoc] | None = None) -> StoredEmbeddings:
    """Index the tree as ``index`` does (only what changed is embedded), then find every chunk's neighbours.

    ``results``: the tree's chunks as lint cut them, indexed as they are rather than cut again; indexing counts
    their embedder tokens (``embed_tokens``), which embed-truncation then reads instead of counting them twice.
    """
    from chunkscope.retrieval.neighbours import StoredEmbeddings
    from chunkscope.retrieval.retriever import Retriever

    retriever = Retriever(ctx.tree, resolved.strategy, embedder, store, ctx.config.site_url or None,
                          citation_template=resolved.citation_template)
    if results is not None:
        retriever.use_chunked(results)
    report = retrieval_setup.ensure_index(retriever, resolved.label)
    if report.cancelled:
        raise Interrupted("indexing stopped; the points written so far are kept")
    if report.embedded or report.deleted:
        print(retrieval_setup.report_line(resolved.label, report), file=sys.stderr)
    embeddings = StoredEmbeddings(store, retriever.collection, paths=retriever.scope,
                                  order=[d.path for d in ctx.tree.documents])
    with graceful_interrupt() as cancel, progress_bar("neighbours") as on_progress:
        embeddings.load(on_progress, cancel)
    return embeddings


def hubness_line(found: Neighbourhoods, report: LintReport, model: str, rules: list[str]) -> str:
    """The tree's place in embedding space, in one line: its hubness and what the rules that ran found."""
    n = len(found.points)
    skew = found.skewness
    measure = (f"k-occurrence skewness {skew:.2f}" if skew is not None
               else "k-occurrence skewness not defined (every chunk is among the nearest of every other)")
    counts = ", ".join(plural(report.by_rule.get(rid, 0), rid) for rid in rules)
    return visible(f"embedding space ({model}, {plural(n, 'chunk')}, k={found.k}): {measure} (hubness, "
                   f"Radovanović et al. 2010); {counts}; hubs: k-occurrence over {found.hub_threshold:.0f}; "
                   f"neighbourhoods in {found.seconds:.2f}s", oneline=True)


def unchecked_files(tree: DocsTree, report: LintReport, display: Callable[[str], str]) -> list[Finding]:
    """The files lint could not check fully, as findings of the two pseudo-rules (line 1: the whole file)."""
    out = [Finding(display(p.path), 1, 1, LOAD_PROBLEM, ERROR, f"{p.code}: {p.message}", None) for p in tree.problems]
    out += [Finding(display(path), 1, 1, NOT_CHUNKED, ERROR, reason, None) for path, reason in report.failed.items()]
    return out


#: Rules a text report and the annotations show once per file, with the count of chunks (``--format json`` keeps
#: every finding): a strategy that cuts larger chunks than the embedder reads makes one per chunk, which buried
#: the real errors (and GitHub shows only a step's first annotations).
PER_FILE_RULES = ("embed-truncation",)


def per_file(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` with those of a `PER_FILE_RULES` rule folded into the first of each file, which says how many
    chunks of the file it stands for."""
    counts = Counter((f.path, f.rule) for f in findings if f.rule in PER_FILE_RULES)
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for f in findings:
        key = (f.path, f.rule)
        if f.rule not in PER_FILE_RULES or counts[key] == 1:
            out.append(f)
        elif key not in seen:
            seen.add(key)
            out.append(dataclasses.replace(f, message=f"{counts[key]} chunks of this file are longer than the "
                                                      f"embedder reads; the first: {f.message}"))
    return out


def window_line(report: LintReport, resolved: ResolvedStrategy, config: Config) -> str | None:
    """One line when the strategy cuts chunks the embedder cannot read whole, saying what to change; None when
    every chunk fits (or embed-truncation did not run)."""
    truncated = report.by_rule.get("embed-truncation", 0)
    if not truncated:
        return None
    chunks = sum(len(c) for c in report.chunks_by_path.values())
    spec = config.embedder_spec()
    lim = resolved.strategy.limits()
    cut = f"chunks of up to {lim.max} {lim.tokenizer} tokens" if lim.max else "its chunks"
    return visible(f"{truncated} of {plural(chunks, 'chunk')} ({truncated / max(1, chunks):.0%}) are longer than "
                   f"{spec.text} reads ({spec.max_tokens} of its own tokens): {resolved.label} cuts {cut}; lower "
                   f"the chunk size (-p chunk_size=N, or in chunkscope.toml) until they fit, or choose an embedder "
                   f"that reads longer texts ([embedder] model)", oneline=True)


#: Finding lines handed to rich at once by `write_text`.
PRINT_BATCH = 1000


def write_text(report: LintReport, label: str, unchecked: list[Finding]) -> None:
    from rich.text import Text

    con = console()
    shown = [*unchecked, *per_file(report.findings)]
    lines: list[Text] = []
    for f in shown:
        line = Text(visible(f"{f.path}:{f.line}:{f.column}: ", oneline=True))
        line.append(f.severity, style="bold red" if f.severity == ERROR else "yellow")
        line.append(f" {f.rule} ", style="cyan")
        line.append(visible(f.message, oneline=True))
        lines.append(line)
    # Printed in batches: a print per line costs rich about 0.14 ms of CPU (4 s for 31,000 lines, a third of
    # that joined), and a 20,000-chunk tree has tens of thousands of findings; the bytes are the same.
    for i in range(0, len(lines), PRINT_BATCH):
        con.print(Text("\n").join(lines[i:i + PRINT_BATCH]), soft_wrap=True)
    files = len(report.chunks_by_path)
    chunks = sum(len(c) for c in report.chunks_by_path.values())
    # The files lint could not check are errors too (they fail CI): counted and listed with the rules' findings.
    if shown:
        con.print()
        by_rule: dict[str, list[Finding]] = {}
        for f in shown:
            by_rule.setdefault(f.rule, []).append(f)
        width = max(len(r) for r in by_rule)
        for rid, found in by_rule.items():
            sev = {f.severity for f in found}
            con.print(Text(f"  {len(found):>5}  {rid:<{width}}  {'/'.join(sorted(sev))}"), soft_wrap=True)
    errors = sum(1 for f in shown if f.severity == ERROR)
    warnings = sum(1 for f in shown if f.severity != ERROR)
    summary = (f"{visible(label, oneline=True)}: {plural(files, 'file')}, {plural(chunks, 'chunk')}: "
               f"{plural(errors, 'error')}, {plural(warnings, 'warning')}")
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
    msg = visible(f.message, oneline=True) + f" (fix: {visible(f.advice(), oneline=True)})"
    props = f"file={_gh_prop(visible(f.path, oneline=True))},line={f.line},col={f.column},title={_gh_prop(f.rule)}"
    return f"::{kind} {props}::{_gh_data(msg)}"


def write_github(report: LintReport, unchecked: list[Finding]) -> None:
    shown = [*unchecked, *per_file(report.findings)]
    for f in shown:
        sys.stdout.write(github_line(f) + "\n")
    tail = f", {plural(len(unchecked), 'file')} not checked" if unchecked else ""
    errors = sum(1 for f in shown if f.severity == ERROR)
    warnings = sum(1 for f in shown if f.severity != ERROR)
    sys.stdout.write(f"chunkscope lint: {plural(errors, 'error')}, {plural(warnings, 'warning')}{tail}\n")
