"""``strategies``, ``chunk`` and ``stats``: what a strategy is, what it cuts, and how the cuts are distributed."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass

from ..chunk import Chunk, ChunkedDoc, chunk_documents, count_embed_tokens, list_strategies
from ..config import ResolvedStrategy
from ..docs import DocsTree
from .common import (
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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("strategies", help="list the chunking strategies and their parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_strategies)

    p = sub.add_parser("chunk", help="print the chunks of a docs tree or file")
    add_docs_arg(p)
    add_strategy_args(p)
    p.add_argument("--format", choices=("table", "jsonl"), default="table", help="output format (default: table)")
    p.add_argument("--no-lint", action="store_true", help="do not attach lint findings to the chunks' warnings")
    p.set_defaults(func=cmd_chunk)

    p = sub.add_parser("stats", help="chunk counts, token distribution, over-limit chunks, storage estimate")
    add_docs_arg(p)
    add_strategy_args(p, multiple=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_stats)


# --- strategies -----------------------------------------------------------------------------------------------


def cmd_strategies(args: argparse.Namespace) -> int:
    classes = list_strategies()
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
    from rich.table import Table
    from rich.text import Text

    con = console()
    for c in classes:
        con.print(Text(f"{c.name}", style="bold cyan") + Text(f"  seed {c.seed}" if c.seed else "", style="dim"))
        con.print(Text(c.description))
        t = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        for col in ("parameter", "type", "default", "range", "help"):
            t.add_column(col)
        for p in c.parameters:
            d = p.describe()
            t.add_row(p.name, d["type"], json.dumps(p.default), p.range_text(), p.help)
        con.print(t)
        con.print()
    return EXIT_OK


# --- chunk ----------------------------------------------------------------------------------------------------


def chunk_tree(tree: DocsTree, resolved: ResolvedStrategy, cfg=None, lint: bool = True) -> list[ChunkedDoc]:
    """Chunk every document; per-document failures are printed as problems and the rest goes on."""
    results = chunk_documents(tree.documents, resolved.strategy)
    for r in results:
        if r.error:
            print(visible(f"{r.doc.path}: chunk-error: {r.error}", oneline=True), file=sys.stderr)
    if lint:
        from ..lint import lint_tree

        # One pass over the tree: duplicates are found across files (as `chunkscope lint` finds them) and word
        # pieces are counted in one batch; the findings land in each chunk's warnings.
        lint_tree(tree, resolved, cfg, results=results)
    return results


def cmd_chunk(args: argparse.Namespace) -> int:
    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    results = chunk_tree(ctx.tree, resolved, ctx.config, lint=not args.no_lint)
    chunks = [c for r in results for c in r.chunks]
    count_embed_tokens(chunks, ctx.config.embed_model)
    out = sys.stdout
    if args.format == "jsonl":
        for c in chunks:
            out.write(json_line(c.to_dict()) + "\n")
        return EXIT_OK
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"{resolved.label}: {len(chunks)} chunks in {len(results)} files", title_justify="left")
    for col, kw in (
        ("path", {}), ("#", {"justify": "right"}), ("lines", {"justify": "right"}), ("tokens", {"justify": "right"}),
        ("embed", {"justify": "right"}), ("heading", {"max_width": 36}), ("warnings", {}), ("text", {"max_width": 60}),
    ):
        t.add_column(col, no_wrap=True, overflow="ellipsis", **kw)
    for c in chunks:
        t.add_row(
            Text(visible(c.path, oneline=True)),
            str(c.index),
            f"{c.start_line}-{c.end_line}",
            str(c.tokens),
            str(c.embed_tokens),
            Text(visible(" › ".join(c.heading_path), oneline=True)),
            Text(", ".join(c.warnings), style="yellow"),
            Text(snippet(c.text, 60)),
        )
    console().print(t)
    return EXIT_OK


# --- stats ----------------------------------------------------------------------------------------------------

#: What a vector database stores per float: the seeds' storage estimate is vectors × dim × 4 bytes.
FLOAT_BYTES = 4


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
    payload_bytes: int
    errors: int

    @property
    def vector_bytes(self) -> int:
        return self.chunks * self.dim * FLOAT_BYTES

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
                "total_bytes": self.vector_bytes + self.payload_bytes,
            },
            "errors": self.errors,
        }


def embed_dim(model: str) -> int:
    """The embedding size of a model, read from its files (no torch): 384 for all-MiniLM-L6-v2."""
    from ..tokens import TokenizerError, resolve_model_dir

    try:
        d = resolve_model_dir(model)
    except TokenizerError:
        return 384
    for f, key in (("1_Pooling/config.json", "word_embedding_dimension"), ("config.json", "hidden_size")):
        try:
            v = json.loads((d / f).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError):
            continue
        if isinstance(v, int):
            return v
    return 384


def tree_stats(tree: DocsTree, resolved: ResolvedStrategy, results: list[ChunkedDoc], dim: int) -> TreeStats:
    lim = resolved.strategy.limits()
    counts: list[int] = []
    over = under = payload = 0
    for r in results:
        n = len(r.chunks)
        for c in r.chunks:
            counts.append(c.tokens)
            if lim.max is not None and c.tokens > lim.max:
                over += 1
            if lim.min is not None and c.tokens < lim.min and not (lim.last_may_be_short and c.index == n - 1):
                under += 1
            payload += _payload_size(c)
    return TreeStats(resolved.label, len(results), len(counts), lim.tokenizer, counts, lim.max, over, under, dim,
                     payload, sum(1 for r in results if r.error))


def _payload_size(c: Chunk) -> int:
    """Bytes of the JSON payload a vector store keeps beside the vector (metadata + text + location)."""
    payload = {**c.metadata, "text": c.text, "path": c.path, "start": c.start, "end": c.end,
               "start_line": c.start_line, "end_line": c.end_line, "heading_path": c.heading_path}
    return len(json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8"))


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


def cmd_stats(args: argparse.Namespace) -> int:
    ctx = load_context(args)
    dim = embed_dim(ctx.config.embed_model)
    all_stats = []
    for resolved in strategies_from_args(args, ctx.config):
        results = chunk_tree(ctx.tree, resolved, ctx.config, lint=False)
        all_stats.append(tree_stats(ctx.tree, resolved, results, dim))
    if args.json:
        print(json.dumps([s.to_dict() for s in all_stats], indent=2))
        return EXIT_OK
    from rich.table import Table
    from rich.text import Text

    con = console()
    t = Table(title=f"{visible(str(ctx.tree.root), oneline=True)}: {len(ctx.tree.documents)} files"
              + (f", {len(ctx.tree.problems)} problems" if ctx.tree.problems else ""), title_justify="left")
    t.add_column("")
    for s in all_stats:
        t.add_column(s.label, justify="right")
    rows = [
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
        ("vectors × dim × 4 B", lambda s: f"{s.chunks} × {s.dim} × 4 = {human_bytes(s.vector_bytes)}"),
        ("payload", lambda s: human_bytes(s.payload_bytes)),
        ("storage estimate", lambda s: human_bytes(s.vector_bytes + s.payload_bytes)),
    ]
    for name, f in rows:
        t.add_row(name, *[f(s) for s in all_stats])
    con.print(t)
    for s in all_stats:
        con.print()
        con.print(Text(f"{s.label}: chunk sizes in {s.tokenizer} tokens" + (f" (limit {s.limit})" if s.limit else ""), style="bold"))
        for label, bar, n, over in histogram_lines(s.counts, s.limit):
            line = Text(label + " ")
            line.append(bar, style="red" if over else "green")
            line.append(f" {n}")
            con.print(line)
    return EXIT_OK
