"""Figures of several configurations side by side (``stats`` and ``compare``): a row per figure, a column per
configuration, in as many tables as the terminal's width needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chunkscope.safe_text import visible
from chunkscope.cli.table_layout import Col, cell_width, fit_table, table_overhead

if TYPE_CHECKING:
    from rich.console import Console


def print_side_by_side(con: Console, title: str, labels: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]
                       ) -> None:
    """Figures of several strategies side by side (a row per figure, a column per strategy), in as many tables
    as it takes to show every strategy's name and every figure whole at the console's width."""
    from rich.text import Text

    names = Col("", [Text(name) for name, _ in rows], overflow="keep")
    cols = [Col(visible(label, oneline=True), [v[i] for _, v in rows], justify="right", overflow="fold")
            for i, label in enumerate(labels)]
    groups = side_by_side_groups(names, cols, con.width)
    # The title on a line of its own: as the table's title it wrapped to the width of a narrow table.
    con.print(Text(title, style="bold"), soft_wrap=True)  # it names the tree's path: one line, never broken
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
