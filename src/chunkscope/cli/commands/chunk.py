"""``chunkscope chunk``: the chunks of a docs tree or file, as a table, JSON lines or LangChain documents."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from chunkscope.chunking.model import Chunk, count_embed_tokens
from chunkscope.safe_text import json_line, snippet, visible
from chunkscope.cli.context import chunk_tree, load_context, require_chunked, strategies_from_args
from chunkscope.cli.exits import documents_exit
from chunkscope.cli.options import add_docs_arg, add_strategy_args
from chunkscope.cli.output import console
from chunkscope.cli.table_layout import DROP, Col, cell_width, fit_table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chunk", help="print the chunks of a docs tree or file")
    add_docs_arg(p)
    add_strategy_args(p)
    p.add_argument("--format", choices=("table", "jsonl", "langchain"), default="table",
                   help="output format: table, jsonl (every field; start and end count characters of the decoded "
                        "text, not bytes: text == source[start:end]), or langchain (a LangChain Document per line, "
                        "as Document.model_dump() writes it; default: table)")
    p.add_argument("--no-lint", action="store_true", help="do not attach lint findings to the chunks' warnings")
    p.set_defaults(func=cmd_chunk)


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
        from chunkscope.site.urls import chunk_url

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


def chunk_table_steps(name_width: int) -> tuple[tuple[str, int], ...]:
    """How the chunk table gives way on a narrow terminal: the text preview first, then the warnings and the
    heading; then the path's folders (down to `name_width`, the widest file name after "…/"); then the others
    again, further, the heading and then the preview and the warnings left out. A file name is cut only after
    all of them (``…02-inte…tion.md`` is what a reader cannot open). Numbers never narrow."""
    return (("text", 24), ("warnings", 16), ("heading", 16), ("path", name_width), ("text", 12), ("warnings", 10),
            ("heading", DROP), ("text", 6), ("warnings", 8), ("text", DROP), ("warnings", DROP), ("path", 10),
            ("path", 6))


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
    names = max((cell_width("…/" + c.path.rpartition("/")[2]) for c in chunks), default=0)
    return fit_table(cols, width, chunk_table_steps(names), **table_kw)
