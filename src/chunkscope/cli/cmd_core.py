"""``strategies``, ``chunk`` and ``stats``: what a strategy is, what it cuts, and how the cuts are distributed."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from chunkscope.chunking.chunk import (
    Chunk,
    ChunkedDoc,
    chunk_documents,
    count_embed_tokens,
    list_strategies,
)
from chunkscope.config.reader import ResolvedStrategy
from chunkscope.document.loader import DocsTree
from chunkscope.retrieval.payload import FLOAT_BYTES, StorageEstimate, storage_estimate
from chunkscope.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    add_docs_arg,
    add_strategy_args,
    console,
    human_bytes,
    json_line,
    load_context,
    snippet,
    strategies_from_args,
    visible,
)
from chunkscope.cli.table_layout import DROP, Col, cell_width, fit_table, table_overhead
from chunkscope.wording import plural

if TYPE_CHECKING:
    from chunkscope.embedding.spec import EmbedderSpec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("strategies", help="list the chunking strategies and their parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_strategies)

    p = sub.add_parser("chunk", help="print the chunks of a docs tree or file")
    add_docs_arg(p)
    add_strategy_args(p)
    p.add_argument("--format", choices=("table", "jsonl", "langchain"), default="table",
                   help="output format: table, jsonl (every field; start and end count characters of the decoded "
                        "text, not bytes: text == source[start:end]), or langchain (a LangChain Document per line, "
                        "as Document.model_dump() writes it; default: table)")
    p.add_argument("--no-lint", action="store_true", help="do not attach lint findings to the chunks' warnings")
    p.set_defaults(func=cmd_chunk)

    p = sub.add_parser("stats", help="chunk counts, token distribution, over-limit chunks, storage estimate")
    add_docs_arg(p)
    add_strategy_args(p, multiple=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_stats)


# --- strategies -----------------------------------------------------------------------------------------------


def cmd_strategies(args: argparse.Namespace) -> int:
    from chunkscope.chunking.chunk import plugin_problems

    classes = list_strategies()
    # A plugin that cannot be used is one line each on stderr; the listing (and its JSON) carries on without it.
    for problem in plugin_problems():
        print(f"chunkscope: warning: {visible(problem, oneline=True)}", file=sys.stderr)
    if args.json:
        out = [
            {
                "name": c.name,
                "seed": c.seed,
                "description": c.description,
                "parameters": [p.describe() for p in c.parameters],
            }
            for c in classes
        ]
        print(json.dumps(out, indent=2))
        return EXIT_OK
    from rich.text import Text

    con = console()
    # One width for every strategy's parameter column, so the tables line up and no name is ever cut.
    name_width = max((len(p.name) for c in classes for p in c.parameters), default=9)
    for c in classes:
        con.print(Text(f"{c.name}", style="bold cyan") + Text(f"  seed {c.seed}" if c.seed else "", style="dim"))
        con.print(Text(c.description))
        con.print(parameter_table(c.parameters, name_width, con.width))
        con.print()
    return EXIT_OK


def parameter_table(params: Sequence[Any], name_width: int, width: int) -> Any:
    """A strategy's parameters, indented by two: names and types always whole (a name is typed after ``-p``);
    help, range and default wrap instead, at spaces while there is room."""
    from rich.padding import Padding

    rows = [(p.name, p.describe()["type"], json.dumps(p.default), p.range_text(), p.help) for p in params]
    cols = [
        Col("parameter", [r[0] for r in rows], least=name_width),
        Col("type", [r[1] for r in rows]),
        Col("default", [r[2] for r in rows], overflow="fold", cap=24),
        Col("range", [r[3] for r in rows], overflow="fold", cap=32),
        Col("help", [r[4] for r in rows], overflow="fold"),
    ]
    default_word, range_word = (min(16, longest_word(c.cells)) for c in cols[2:4])
    steps = [("help", 40), ("range", range_word), ("default", default_word), ("help", 16), ("range", 8),
             ("default", 8), ("help", 10)]
    t, _ = fit_table(cols, width - 1, steps, show_header=True, header_style="bold", box=None, padding=(0, 1))
    return Padding(t, (0, 0, 0, 1), expand=False)


def longest_word(cells: Sequence[str]) -> int:
    """The longest run without a space in `cells`: a wrapped column at least this wide breaks only at spaces."""
    return max((len(w) for c in cells for w in c.split()), default=0)


# --- chunk ----------------------------------------------------------------------------------------------------


def chunk_tree(tree: DocsTree, resolved: ResolvedStrategy, cfg=None, lint: bool = True) -> list[ChunkedDoc]:
    """Chunk every document; per-document failures are printed as problems and the rest goes on."""
    results = chunk_documents(tree.documents, resolved.strategy)
    for r in results:
        if r.error:
            print(visible(f"{r.doc.path}: chunk-error: {r.error}", oneline=True), file=sys.stderr)
    if lint:
        from chunkscope.lint import annotate_results, lint_tree

        # One pass over the tree: duplicates are found across files (as `chunkscope lint` finds them); the
        # findings' rule ids land in the chunks' warnings (lint marks copies, never the chunks it was given).
        results = annotate_results(results, lint_tree(tree, resolved, cfg, results=results))
    return results


def require_chunked(results: Sequence[ChunkedDoc], docs: str, label: str) -> None:
    """Refuse a run in which the strategy chunked no document: nothing could be used (exit 2, as for a docs path
    with no Markdown), whatever the output format.

    Raises:
        DocsError: every document failed (each failure was reported on stderr by `chunk_tree`).
    """
    from chunkscope.document.loader import DocsError

    if results and all(r.error for r in results):
        raise DocsError(f"{docs}: {label} could chunk none of the {len(results)} files (each problem is listed above)")


def documents_exit(tree: DocsTree, results: Sequence[ChunkedDoc] = ()) -> int:
    """The exit code of a run whose output is written: 1 when some file could not be loaded or chunked (each was
    reported, the output covers the others), else 0. The one rule every command follows."""
    return EXIT_FINDINGS if tree.problems or any(r.error for r in results) else EXIT_OK


def cmd_chunk(args: argparse.Namespace) -> int:
    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    # LangChain's form carries the same metadata as the library's splitter: no lint warnings, no word pieces.
    langchain = args.format == "langchain"
    results = chunk_tree(ctx.tree, resolved, ctx.config, lint=not args.no_lint and not langchain)
    require_chunked(results, args.docs, resolved.label)
    out = sys.stdout
    if langchain:
        from chunkscope.integrations import (
            langchain_record,  # plain JSON: LangChain itself is not needed to write it
        )

        for r in results:
            for c in r.chunks:
                out.write(json_line(langchain_record(r.doc, c, ctx.config.site_url or None)) + "\n")
        return documents_exit(ctx.tree, results)
    chunks = [c for r in results for c in r.chunks]
    count_embed_tokens(chunks, ctx.config.embedder_spec())
    if args.format == "jsonl":
        from chunkscope.site.model import chunk_url

        # Each row's url is the citation `query` prints for the chunk: route + #anchor, under site_url if set.
        site_url = ctx.config.site_url or None
        for r in results:
            for c in r.chunks:
                out.write(json_line({**c.to_dict(), "url": chunk_url(site_url, r.doc, c)}) + "\n")
        return documents_exit(ctx.tree, results)
    con = console()
    title = f"{resolved.label}: {len(chunks)} chunks in {len(results)} files"
    table, dropped = chunk_table(chunks, con.width, title=title, title_justify="left")
    con.print(table)
    if dropped:
        con.print(f"({', '.join(dropped)} left out at this width; --format jsonl has every field)", style="dim")
    return documents_exit(ctx.tree, results)


#: How the chunk table gives way on a narrow terminal: the text preview first, then the warnings, the heading
#: and the path (its folders first, keeping the file name); then each again, further, the heading left out
#: before the path gets short. Numbers never narrow.
CHUNK_TABLE_STEPS = (("text", 24), ("warnings", 16), ("heading", 16), ("path", 24),
                     ("text", 12), ("warnings", 10), ("heading", DROP), ("path", 16), ("text", 6), ("path", 10),
                     ("warnings", 8), ("text", 4), ("path", 6))


def chunk_table(chunks: Sequence[Chunk], width: int, **table_kw: Any) -> tuple[Any, list[str]]:
    """The chunks as a table no wider than `width`, and the columns left out to get there (heading first)."""
    from rich.text import Text

    cols = [
        Col("path", [visible(c.path, oneline=True) for c in chunks], overflow="path"),
        Col("#", [str(c.index) for c in chunks], justify="right"),
        Col("lines", [f"{c.start_line}-{c.end_line}" for c in chunks], justify="right"),
        Col("tokens", [str(c.tokens) for c in chunks], justify="right"),
        Col("embed", [str(c.embed_tokens) for c in chunks], justify="right"),
        Col("heading", [visible(" › ".join(c.heading_path), oneline=True) for c in chunks], overflow="ellipsis",
            cap=36),
        Col("warnings", [Text(", ".join(c.warnings), style="yellow") for c in chunks], overflow="ellipsis"),
        Col("text", [snippet(c.text, 60) for c in chunks], overflow="ellipsis", cap=60),
    ]
    return fit_table(cols, width, CHUNK_TABLE_STEPS, **table_kw)


# --- stats ----------------------------------------------------------------------------------------------------

@dataclass
class TreeStats:
    """Figures for one strategy over a tree."""

    label: str
    files: int
    chunks: int
    tokenizer: str
    counts: list[int]
    limit: int | None
    over_limit: int
    under_min: int
    dim: int
    storage: StorageEstimate
    errors: int  # documents the strategy could not chunk
    problems: int = 0  # files of the tree that could not be loaded as they are (`DocsTree.problems`)

    @property
    def vector_bytes(self) -> int:
        return self.storage.vector_bytes

    @property
    def payload_bytes(self) -> int:
        return self.storage.payload_bytes

    def percentile(self, q: float) -> int:
        if not self.counts:
            return 0
        s = sorted(self.counts)
        idx = min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))
        return s[idx]

    def to_dict(self) -> dict:
        return {
            "strategy": self.label,
            "files": self.files,
            "chunks": self.chunks,
            "tokenizer": self.tokenizer,
            "tokens": {
                "min": min(self.counts, default=0),
                "median": statistics.median(self.counts) if self.counts else 0,
                "p95": self.percentile(0.95),
                "max": max(self.counts, default=0),
                "total": sum(self.counts),
            },
            "limit": self.limit,
            "over_limit": self.over_limit,
            "under_min": self.under_min,
            "storage": {
                "vectors": self.chunks,
                "dim": self.dim,
                "vector_bytes": self.vector_bytes,
                "payload_bytes": self.payload_bytes,
                "total_bytes": self.storage.total_bytes,
            },
            # As `chunkscope lint` counts them: a file that could not be loaded is an error too.
            "errors": self.problems + self.errors,
            "load_problems": self.problems,
            "not_chunked": self.errors,
        }


def embed_dim(spec) -> int:
    """The embedder's vector size without running it (no torch, no request): an endpoint's known size, a local
    model's from its files; 384 (MiniLM's) when nothing says, for another server's model the first request
    would tell."""
    from chunkscope.embedding.model_info import model_dimension
    from chunkscope.paths import TokenizerError

    if spec.known_dim:
        return spec.known_dim
    try:
        folder = spec.model_dir
    except TokenizerError:
        return 384
    return (model_dimension(folder) if folder is not None else None) or 384


def tree_stats(tree: DocsTree, resolved: ResolvedStrategy, results: list[ChunkedDoc], dim: int,
               embed_model: "str | EmbedderSpec | None" = None) -> TreeStats:
    lim = resolved.strategy.limits()
    counts: list[int] = []
    over = under = 0
    for r in results:
        n = len(r.chunks)
        for c in r.chunks:
            counts.append(c.tokens)
            if lim.max is not None and c.tokens > lim.max:
                over += 1
            if lim.min is not None and c.tokens < lim.min and not (lim.last_may_be_short and c.index == n - 1):
                under += 1
    storage = storage_estimate((c for r in results for c in r.chunks), dim, embed_model)
    return TreeStats(resolved.label, len(results), len(counts), lim.tokenizer, counts, lim.max, over, under, dim,
                     storage, sum(1 for r in results if r.error), len(tree.problems))


def histogram_lines(counts: list[int], limit: int | None, width: int = 40, bins: int = 12) -> list[tuple[str, str, int, bool]]:
    """Rows of a text histogram: (range label, bar, count, over the limit).

    Bins are (lo, hi] ranges; when there is a limit the bin width divides it, so the limit is a bin edge and
    every bin past it holds only over-limit chunks.
    """
    if not counts:
        return []
    top = max(max(counts), limit or 0, 1)
    if limit:
        per_limit = max(1, round(bins * limit / top))
        step = -(-limit // per_limit)
    else:
        step = -(-top // bins)
    nbins = max(1, -(-top // step))
    hist = [0] * nbins
    for c in counts:
        hist[min(max(c - 1, 0) // step, nbins - 1)] += 1
    peak = max(hist) or 1
    rows = []
    for i, h in enumerate(hist):
        lo, hi = i * step + 1, (i + 1) * step
        bar = "█" * max(1 if h else 0, round(h / peak * width))
        rows.append((f"{lo:>6}–{hi:<6}", bar, h, limit is not None and lo > limit))
    return rows


#: The rows of the stats table: a figure's name and how to show it for one strategy.
STATS_ROWS: list[tuple[str, Callable[[TreeStats], str]]] = [
    ("files", lambda s: str(s.files)),
    ("chunks", lambda s: str(s.chunks)),
    ("tokenizer", lambda s: s.tokenizer),
    ("tokens min", lambda s: str(min(s.counts, default=0))),
    ("tokens median", lambda s: f"{statistics.median(s.counts):.0f}" if s.counts else "0"),
    ("tokens p95", lambda s: str(s.percentile(0.95))),
    ("tokens max", lambda s: str(max(s.counts, default=0))),
    ("limit", lambda s: str(s.limit) if s.limit else "—"),
    ("over limit", lambda s: str(s.over_limit)),
    ("under minimum", lambda s: str(s.under_min)),
    ("vector bytes", lambda s: human_bytes(s.vector_bytes)),
    ("payload", lambda s: human_bytes(s.payload_bytes)),
    ("storage estimate", lambda s: human_bytes(s.storage.total_bytes)),
]


def cmd_stats(args: argparse.Namespace) -> int:
    ctx = load_context(args)
    dim = embed_dim(ctx.config.embedder_spec())
    all_stats = []
    failed: list[ChunkedDoc] = []
    for resolved in strategies_from_args(args, ctx.config):
        results = chunk_tree(ctx.tree, resolved, ctx.config, lint=False)
        require_chunked(results, args.docs, resolved.label)
        failed += [r for r in results if r.error]
        all_stats.append(tree_stats(ctx.tree, resolved, results, dim, ctx.config.embedder_spec()))
    if args.json:
        print(json.dumps([s.to_dict() for s in all_stats], indent=2))
        return documents_exit(ctx.tree, failed)
    from rich.text import Text

    con = console()
    # The same count as the JSON's "load_problems" (and part of its "errors").
    title = (f"{visible(str(ctx.tree.root), oneline=True)}: {plural(len(ctx.tree.documents), 'file')}"
             + (f", {plural(len(ctx.tree.problems), 'problem')}" if ctx.tree.problems else ""))
    rows = list(STATS_ROWS)
    if any(s.errors for s in all_stats):
        rows.insert(2, ("not chunked", lambda s: str(s.errors)))
    print_side_by_side(con, title, [s.label for s in all_stats], [(n, [f(s) for s in all_stats]) for n, f in rows])
    dims = sorted({s.dim for s in all_stats})
    formula = f"vector bytes = chunks × {'/'.join(map(str, dims))} dimensions × {FLOAT_BYTES} B"
    con.print(Text(formula, style="dim"))
    for s in all_stats:
        con.print()
        print_histogram(con, s)
    return documents_exit(ctx.tree, failed)


def print_histogram(con: Any, s: TreeStats) -> None:
    """One strategy's chunk sizes as a text histogram; bars past the limit in red."""
    from rich.text import Text

    limit = f" (limit {s.limit})" if s.limit else ""
    con.print(Text(f"{visible(s.label, oneline=True)}: chunk sizes in {s.tokenizer} tokens{limit}", style="bold"))
    for label, bar, n, over in histogram_lines(s.counts, s.limit):
        line = Text(label + " ")
        line.append(bar, style="red" if over else "green")
        line.append(f" {n}")
        con.print(line)


def print_side_by_side(con: Any, title: str, labels: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]
                       ) -> None:
    """Figures of several strategies side by side (a row per figure, a column per strategy), in as many tables
    as it takes to show every strategy's name and every figure whole at the console's width."""
    from rich.text import Text

    names = Col("", [Text(name) for name, _ in rows], overflow="keep")
    cols = [Col(visible(label, oneline=True), [v[i] for _, v in rows], justify="right", overflow="fold")
            for i, label in enumerate(labels)]
    groups = side_by_side_groups(names, cols, con.width)
    # The title on a line of its own: as the table's title it wrapped to the width of a narrow table.
    con.print(Text(title, style="bold"))
    for n, group in enumerate(groups):
        if n:
            con.print()
        # A name too long for the whole width folds onto more lines; it is never cut.
        steps = [(c.header, max(cell_width(v) for v in c.cells)) for c in group]
        table, _ = fit_table([names, *group], con.width, steps)
        con.print(table)


def side_by_side_groups(names: Col, cols: Sequence[Col], width: int) -> list[list[Col]]:
    """`cols` in the fewest tables (beside the `names` column) that fit `width`, as evenly filled as they can be
    (3 + 3 rather than 5 + 1); a column too wide for any table gets one of its own."""
    from rich.table import Table

    def fits(group: Sequence[Col]) -> bool:
        return table_overhead(Table(), len(group) + 1) + names.natural() + sum(c.natural() for c in group) <= width

    greedy: list[list[Col]] = []
    for c in cols:
        if greedy and fits([*greedy[-1], c]):
            greedy[-1].append(c)
        else:
            greedy.append([c])
    per = -(-len(cols) // max(1, len(greedy)))
    even = [list(cols[i:i + per]) for i in range(0, len(cols), per)]
    return even if len(even) == len(greedy) and all(fits(g) for g in even) else greedy
