"""Tables that fit the terminal: which columns keep their width, which give way, and in what order.

rich narrows an over-wide table by taking the same share from every column, so the short numeric columns a reader
needs most vanish first. Here each column says how it gives way (kept whole, cut with "…", folded onto more lines,
or shortened as a path) and the caller gives the order in which columns narrow, down to a floor, or are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

#: How a column may give way: "keep" never narrows (numbers, names a user types); "ellipsis" keeps one line
#: and ends with …; "path" keeps one line and shortens the folders first (`shorten_path`); "fold" wraps onto
#: more lines.
Overflow = Literal["keep", "ellipsis", "path", "fold"]


@dataclass
class Col:
    """One column of `fit_table`: header, cells and how it gives way when the terminal is narrow."""

    header: str
    cells: list[Any]  # str or rich Text, one per row
    justify: Literal["left", "right"] = "left"
    overflow: Overflow = "keep"
    cap: int | None = None  # the widest it gets even when there is room
    least: int = 0  # the narrowest it starts at (to line up with the same column of another table)
    style: str | None = None

    def natural(self) -> int:
        """The width that shows every cell and the header whole (at most `cap`, never under the header)."""
        from rich.cells import cell_len

        head = cell_len(self.header)
        widest = max([head, self.least, *(cell_width(c) for c in self.cells)])
        return max(head, self.least, min(widest, self.cap)) if self.cap else widest


def cell_width(cell: Any) -> int:
    from rich.cells import cell_len

    return cell.cell_len if hasattr(cell, "cell_len") else cell_len(str(cell))


def _head(s: str, cells: int) -> str:
    """The longest start of `s` that fits `cells` terminal cells."""
    from rich.cells import cell_len

    used = 0
    for i, ch in enumerate(s):
        used += cell_len(ch)
        if used > cells:
            return s[:i]
    return s


def _tail(s: str, cells: int) -> str:
    """The longest end of `s` that fits `cells` terminal cells."""
    return _head(s[::-1], cells)[::-1]


def _cut_middle(s: str, width: int) -> str:
    """`s` in `width` cells with its middle replaced by "…" (the end gets the odd cell)."""
    from rich.cells import cell_len

    if cell_len(s) <= width:
        return s
    head = _head(s, max(0, width - 1) // 2)
    return head + "…" + _tail(s, width - 1 - cell_len(head))


def shorten_path(path: str, width: int) -> str:
    """`path` in `width` cells: the folders give way first (their start is kept), then the middle of the file
    name — the file name is what tells chunks apart, its number prefix most of all."""
    from rich.cells import cell_len

    if cell_len(path) <= width:
        return path
    folder, slash, name = path.rpartition("/")
    if not slash:
        return _cut_middle(path, width)
    if cell_len(slash + name) < width:
        return _head(folder, width - 1 - cell_len(slash + name)) + "…" + slash + name
    return "…" + _cut_middle(name, width - 1)


def table_overhead(table: Any, columns: int) -> int:
    """Cells a rich table spends on borders and padding around `columns` columns of content."""
    _, right, _, left = table.padding
    pad = (left + right) * columns - (0 if table.pad_edge else left + right)
    lines = (columns - 1 + (2 if table.show_edge else 0)) if table.box else 0
    return pad + lines


#: A step of `fit_table` that leaves its column out instead of narrowing it.
DROP = -1


def fit_widths(cols: Sequence[Col], room: Callable[[int], int], steps: Sequence[tuple[str, int]]
               ) -> tuple[list[int | None], int]:
    """Column widths (None: left out) and the excess still left (0: they fit).

    Every column starts at its natural width; while the sum is over ``room(number of columns shown)`` each step
    ``(header, floor)`` narrows that column down to its floor (a header is never cut, and a "keep" column is
    never narrowed), or leaves it out when the floor is `DROP` — and then the narrowing starts over with the
    room the column gave back.
    """
    left_out: set[str] = set()
    while True:
        widths, excess, drop = _narrow(cols, left_out, room, steps)
        if drop is None:
            return widths, excess
        left_out.add(drop)


def _narrow(cols: Sequence[Col], left_out: set[str], room: Callable[[int], int], steps: Sequence[tuple[str, int]]
            ) -> tuple[list[int | None], int, str | None]:
    """One pass of `fit_widths` without the columns `left_out`: the widths, the excess, and the column the
    next `DROP` step leaves out (None: the widths fit, or there is nothing left to leave out)."""
    from rich.cells import cell_len

    shown = [c.header not in left_out for c in cols]
    widths = [c.natural() for c in cols]

    def excess() -> int:
        return sum(w for w, on in zip(widths, shown) if on) - room(sum(shown))

    for header, floor in steps:
        if excess() <= 0:
            break
        hits = [i for i, c in enumerate(cols) if c.header == header and shown[i]]
        if hits and floor == DROP:
            return [w if on else None for w, on in zip(widths, shown)], excess(), header
        for i in hits:
            if cols[i].overflow != "keep":
                widths[i] -= min(excess(), max(0, widths[i] - max(floor, cell_len(header))))
    return [w if on else None for w, on in zip(widths, shown)], max(0, excess()), None


def fit_table(cols: list[Col], width: int, steps: Sequence[tuple[str, int]] = (),
              row_styles: Sequence[str | None] | None = None, **table_kw: Any) -> tuple[Any, list[str]]:
    """A rich table of `cols` that fits `width` cells by the `steps` of `fit_widths`, and the headers of the
    columns it left out. What still does not fit after every step is left to rich."""
    from rich.table import Table

    table = Table(**table_kw)
    widths, _ = fit_widths(cols, lambda n: width - table_overhead(table, n), steps)
    shown = [(c, w) for c, w in zip(cols, widths) if w is not None]
    for c, w in shown:
        wrap = c.overflow == "fold"
        table.add_column(c.header, justify=c.justify, width=w, no_wrap=not wrap, style=c.style,
                         overflow="fold" if wrap else "ellipsis")
    for r in range(len(cols[0].cells) if cols else 0):
        cells = [shorten_path(c.cells[r], w) if c.overflow == "path" and isinstance(c.cells[r], str)
                 else c.cells[r] for c, w in shown]
        table.add_row(*cells, style=row_styles[r] if row_styles else None)
    return table, [c.header for c, w in zip(cols, widths) if w is None]


def wrap_items(head: str, items: Sequence[str], width: int, sep: str = " · ") -> list[str]:
    """``head`` followed by ``items`` joined with ``sep``, broken into lines of at most ``width`` cells between
    items (never inside one), the lines after the first indented under the first item. An item wider than a line
    gets a line of its own, whole: cutting a ``path:line`` would make it useless."""
    from rich.cells import cell_len

    indent = " " * cell_len(head)
    lines: list[str] = []
    line = head
    fresh = True  # nothing on this line yet but its head or indent
    for item in items:
        piece = item if fresh else sep + item
        if not fresh and cell_len(line + piece) > width:
            lines.append(line)
            line, piece = indent, item
        line += piece
        fresh = False
    lines.append(line)
    return lines
