"""The chunks of the open file, one row each: index, tokens, embedder tokens, words, heading path, warnings."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable

from ...safe_text import visible
from ..session import FileResult

COLUMNS = (("#", "index"), ("tok", "tokens"), ("emb", "embed"), ("words", "words"), ("heading", "heading"),
           ("warnings", "warnings"))


HEADING_WIDTH = 28
#: Fixed widths of the columns the completed cut fills in (word pieces, lint warnings). Letting the table fit
#: them instead costs a re-measure of the whole column per updated cell: seconds for a file of 1,000 chunks.
FIXED_WIDTHS = {"heading": HEADING_WIDTH, "embed": 6, "warnings": 40}


def tail(text: str, width: int) -> str:
    """The end of a heading path, which says where a chunk is better than its start (the page title)."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


class ChunkTable(DataTable):
    """A row per chunk; moving the cursor selects the chunk everywhere."""

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

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key, width=FIXED_WIDTHS.get(key))

    def _emb(self, result: FileResult, c) -> Text:
        if c.embed_tokens is None:
            return Text("…" if not result.complete else "—", style="dim")
        if c.index in result.truncations or c.embed_tokens > self.max_seq_length:
            return Text(f"{c.embed_tokens}✂", style="bold #ff8787")
        return Text(str(c.embed_tokens))

    def watch_result(self, old: FileResult | None, result: FileResult | None) -> None:
        self._filling = True
        try:
            if old is not None and result is not None and old.chunks is result.chunks and self.row_count == len(result.chunks):
                # The same cut, completed: only the embedder and warning columns change (fixed widths, so
                # nothing is measured again).
                for c in result.chunks:
                    self.update_cell(str(c.index), "embed", self._emb(result, c))
                    self.update_cell(str(c.index), "warnings", Text(", ".join(c.warnings), style="yellow"))
                return
            self.clear()
            if result is None:
                return
            limit = result.limit
            for c in result.chunks:
                tok = Text(str(c.tokens), style="bold red" if limit is not None and c.tokens > limit else "")
                heading = tail(visible(" › ".join(c.heading_path), oneline=True), HEADING_WIDTH)
                warn = Text(", ".join(c.warnings), style="yellow")
                self.add_row(Text(str(c.index), justify="right"), tok, self._emb(result, c),
                             Text(str(c.words), justify="right"), Text(heading, no_wrap=True),
                             warn, key=str(c.index))
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
