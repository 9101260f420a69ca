"""``chunkscope strategies``: the chunking strategies and their parameters."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from chunkscope.chunking.registry import list_strategies
from chunkscope.cli.exits import EXIT_OK
from chunkscope.cli.options import add_json_arg
from chunkscope.cli.output import console, warn
from chunkscope.cli.table_layout import Col, fit_table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("strategies", help="list the chunking strategies and their parameters")
    add_json_arg(p)
    p.set_defaults(func=cmd_strategies)


def cmd_strategies(args: argparse.Namespace) -> int:
    from chunkscope.chunking.registry import plugin_problems

    classes = list_strategies()
    # A plugin that cannot be used is one line each on stderr; the listing (and its JSON) carries on without it.
    for problem in plugin_problems():
        warn(problem)
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
