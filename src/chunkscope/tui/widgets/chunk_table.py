"""The chunks of the open file, one row each: index, tokens, embedder tokens, words, heading path, warnings.

The table is as wide as the side pane, 44 to 66 columns: too narrow for every column at a readable width. The
heading and the warnings are what a reader scans for, so they keep readable widths (`plan_columns`) and the
counts the detail pane also shows (word pieces, words) give way first.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable

from chunkscope.safe_text import visible
from chunkscope.tui.headless.session import FileResult

#: Column keys in the order they are drawn, and their headers.
COLUMNS = (("#", "index"), ("tok", "tokens"), ("emb", "embed"), ("words", "words"), ("heading", "heading"),
           ("warnings", "warnings"))
#: Narrowest heading: the end of a heading path ("…› Installation") still says where a chunk is.
HEADING_MIN = 14
#: Narrowest warnings column: the longest lint rule name ("embed-truncation", "split-admonition") whole, and the
#: count of the others ("embed-truncation +1").
WARNINGS_MIN = 19
#: Widest warnings column (two short rule names); the rest of the width goes to the heading.
WARNINGS_MAX = 26
#: Widths of the count columns that may be given up: word pieces (4 digits and ✂), words.
OPTIONAL_WIDTHS = {"embed": 5, "words": 5}
#: The order in which they are kept while the width allows: the embedder's count before the words'.
KEEP_ORDER = ("embed", "words")


def plan_columns(width: int, index_width: int, tokens_width: int, padding: int = 1) -> dict[str, int]:
    """Column widths for a table ``width`` cells wide, by key (a key left out is a column given up).

    The index, the tokens, the heading (at least `HEADING_MIN`) and the warnings (at least `WARNINGS_MIN`) are
    always there; the word-piece and word counts only while they fit beside those. What is left goes to the
    warnings (up to `WARNINGS_MAX`) and the heading. Each column takes ``padding`` cells more on either side.

    Fixed widths, decided once per table width: letting the table fit its columns costs a re-measure of the whole
    column per updated cell, seconds for a file of 1,000 chunks (the completed cut updates two columns).
    """
    pad = 2 * padding
    widths = {"index": max(index_width, 1), "tokens": max(tokens_width, 3)}
    used = sum(w + pad for w in widths.values()) + HEADING_MIN + pad + WARNINGS_MIN + pad
    for key in KEEP_ORDER:
        w = OPTIONAL_WIDTHS[key]
        if used + w + pad <= width:
            widths[key] = w
            used += w + pad
    spare = width - used
    warnings = WARNINGS_MIN + min(max(spare // 2, 0), WARNINGS_MAX - WARNINGS_MIN)
    widths["warnings"] = warnings
    widths["heading"] = max(HEADING_MIN + spare - (warnings - WARNINGS_MIN), 4)
    return {key: widths[key] for _, key in COLUMNS if key in widths}


def tail(text: str, width: int) -> str:
    """The end of a heading path, which says where a chunk is better than its start (the page title)."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def warnings_text(warnings: list[str], width: int) -> str:
    """A chunk's warnings in ``width`` cells: whole rule names, then ``+N`` for those that did not fit."""
    joined = ", ".join(warnings)
    if len(joined) <= width:
        return joined
    for k in range(len(warnings) - 1, 0, -1):
        shown = ", ".join(warnings[:k]) + f" +{len(warnings) - k}"
        if len(shown) <= width:
            return shown
    more = f" +{len(warnings) - 1}"
    return warnings[0][:max(width - len(more) - 1, 1)] + "…" + more


class ChunkTable(DataTable):
    """A row per chunk; moving the cursor selects the chunk everywhere."""

    DEFAULT_CSS = """
    ChunkTable { scrollbar-gutter: stable; }
    """

    BINDINGS = [
        Binding("enter", "select_cursor", "Show in source", show=False, id="chunks.show"),
    ]

    result: reactive[FileResult | None] = reactive(None, always_update=True)
    """The file's chunks (from the file worker)."""
    selected: reactive[int | None] = reactive(None)
    """The selected chunk; the cursor follows it."""
    max_seq_length: reactive[int] = reactive(256)
    """The embedding model's limit: chunks over it are marked in the ``emb`` column."""

    class ChunkHighlighted(Message):
        """The cursor moved onto a chunk."""

        def __init__(self, table: "ChunkTable", index: int) -> None:
            super().__init__()
            self.table = table
            self.index = index

        @property
        def control(self) -> "ChunkTable":
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._filling = False
        #: The columns shown and their widths (`plan_columns`); the rows are built for these.
        self._widths: dict[str, int] = {}

    def on_mount(self) -> None:
        self._set_columns(self._plan())

    def on_resize(self) -> None:
        plan = self._plan()
        if plan != self._widths:
            self._set_columns(plan)
            self._fill(self.result)

    def _plan(self) -> dict[str, int]:
        r = self.result
        chunks = r.chunks if r is not None else []
        index_width = len(str(max(len(chunks) - 1, 0)))
        tokens_width = len(str(max((c.tokens for c in chunks), default=0)))
        return plan_columns(self.scrollable_content_region.width, index_width, tokens_width, self.cell_padding)

    def _set_columns(self, widths: dict[str, int]) -> None:
        self.clear(columns=True)
        self._widths = widths
        labels = {key: label for label, key in COLUMNS}
        for key, width in widths.items():
            self.add_column(labels[key], key=key, width=width)

    def _emb(self, result: FileResult, c) -> Text:
        if c.embed_tokens is None:
            return Text("…" if not result.complete else "—", style="dim")
        if c.index in result.truncations or c.embed_tokens > self.max_seq_length:
            return Text(f"{c.embed_tokens}✂", style="bold #ff8787")
        return Text(str(c.embed_tokens))

    def _warnings(self, c) -> Text:
        return Text(warnings_text([visible(w, oneline=True) for w in c.warnings], self._widths["warnings"]),
                    style="yellow", no_wrap=True)

    def watch_result(self, old: FileResult | None, result: FileResult | None) -> None:
        if old is not None and result is not None and old.chunks is result.chunks and self.row_count == len(result.chunks):
            # The same cut, completed: only the embedder and warning columns change (fixed widths, so nothing is
            # measured again).
            self._filling = True
            try:
                for c in result.chunks:
                    if "embed" in self._widths:
                        self.update_cell(str(c.index), "embed", self._emb(result, c))
                    self.update_cell(str(c.index), "warnings", self._warnings(c))
            finally:
                self._filling = False
            return
        plan = self._plan()
        if plan != self._widths:  # wider numbers (a file of 100 chunks after one of 10)
            self._set_columns(plan)
        self._fill(result)

    def _fill(self, result: FileResult | None) -> None:
        """One row per chunk, in the columns shown."""
        self._filling = True
        try:
            self.clear()
            if result is None:
                return
            limit = result.limit
            heading_width = self._widths["heading"]
            for c in result.chunks:
                cells = {
                    "index": Text(str(c.index), justify="right"),
                    "tokens": Text(str(c.tokens), style="bold red" if limit is not None and c.tokens > limit else ""),
                    "embed": self._emb(result, c),
                    "words": Text(str(c.words), justify="right"),
                    "heading": Text(tail(visible(" › ".join(c.heading_path), oneline=True), heading_width),
                                    no_wrap=True),
                    "warnings": self._warnings(c),
                }
                self.add_row(*(cells[key] for key in self._widths), key=str(c.index))
        finally:
            self._filling = False
        if self.selected is not None and 0 <= self.selected < self.row_count:
            self.move_cursor(row=self.selected, animate=False, scroll=True)

    def watch_selected(self, index: int | None) -> None:
        if index is None or not (0 <= index < self.row_count):
            return
        if self.cursor_row != index:
            self.move_cursor(row=index, animate=False, scroll=True)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # Only a cursor the user moves selects: the cursor also follows selections made elsewhere (the source,
        # a jump), and those echoes arrive later, when they may be stale.
        if self._filling or event.row_key.value is None or not self.has_focus:
            return
        self.post_message(self.ChunkHighlighted(self, int(event.row_key.value)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.ChunkHighlighted(self, int(event.row_key.value)))
