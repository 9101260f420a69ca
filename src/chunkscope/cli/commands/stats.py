"""``chunkscope stats``: chunk counts, the distribution of their sizes, chunks over or under the limits, and the
storage the vectors and payloads would take, for one or more strategies side by side."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import TYPE_CHECKING, Callable

from chunkscope.chunking.model import ChunkedDoc
from chunkscope.chunking.stats import TreeStats, histogram_lines
from chunkscope.retrieval.payload import FLOAT_BYTES
from chunkscope.safe_text import visible
from chunkscope.wording import plural
from chunkscope.cli.context import chunk_tree, load_context, require_chunked, strategies_from_args
from chunkscope.cli.exits import documents_exit
from chunkscope.cli.options import add_docs_arg, add_json_arg, add_strategy_args
from chunkscope.cli.output import console, human_bytes
from chunkscope.cli.side_by_side import print_side_by_side
from chunkscope.cli.tree_figures import embed_dim, tree_stats_of

if TYPE_CHECKING:
    from rich.console import Console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="chunk counts, token distribution, over-limit chunks, storage estimate")
    add_docs_arg(p)
    add_strategy_args(p, multiple=True)
    add_json_arg(p)
    p.set_defaults(func=cmd_stats)


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
        all_stats.append(tree_stats_of(ctx.tree, resolved, results, dim, ctx.config.embedder_spec()))
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


def print_histogram(con: Console, s: TreeStats) -> None:
    """One strategy's chunk sizes as a text histogram; bars past the limit in red."""
    from rich.text import Text

    limit = f" (limit {s.limit})" if s.limit else ""
    # "words" is a unit of its own ("in words tokens" said it twice); the others are tokenizers.
    unit = "words" if s.tokenizer == "words" else f"{s.tokenizer} tokens"
    con.print(Text(f"{visible(s.label, oneline=True)}: chunk sizes in {unit}{limit}", style="bold"))
    for label, bar, n, over in histogram_lines(s.counts, s.limit):
        line = Text(label + " ")
        line.append(bar, style="red" if over else "green")
        line.append(f" {n}")
        con.print(line)
