"""The source of one document with its chunks drawn in: a Line API view that renders only the visible lines.

With ``wrap`` on, long lines are soft-wrapped: screen rows are no longer lines, and every conversion between
the two goes through a `RowMap` (`row_of_line`, `line_at_row`). The text's wrap depends on the text and the width
only, so it is kept across re-chunks of the same document (live tuning redraws without wrapping it again); the
notes after a line (lint findings, where the embedder stops) wrap with it onto rows of their own.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from chunkscope.tui.layout import SourceLayout
from chunkscope.tui.row_map import RowMap


#: Columns kept after the longest line for the notes drawn there (lint findings, "not embedded").
NOTE_ROOM = 64
#: Narrowest wrap width: a view squeezed below it crops its rows rather than cutting the text into slivers.
MIN_WRAP = 20


class SourceView(ScrollView, can_focus=True):
    """Syntax-coloured source, chunk bands, a gutter of chunk labels; click a line to select its chunk."""

    BINDINGS = [
        Binding("home", "scroll_home", "Top", show=False, id="source.top"),
        Binding("end", "scroll_end", "Bottom", show=False, id="source.bottom"),
    ]

    DEFAULT_CSS = """
    SourceView {
        background: $surface;
    }
    """

    layout_data: reactive[SourceLayout | None] = reactive(None, always_update=True)
    """What to draw: the document, its chunks and their regions (None: show `notice`)."""
    selected: reactive[int | None] = reactive(None)
    """Index of the selected chunk, drawn brighter."""
    notice: reactive[str] = reactive("")
    """Shown instead of the source when there is nothing to draw (loading, a file that failed)."""
    wrap: reactive[bool] = reactive(False)
    """Soft-wrap long lines to the view's width (no horizontal scrolling); off: one row per line."""

    class ChunkClicked(Message):
        """A chunk was clicked in the source."""

        def __init__(self, view: "SourceView", index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

        @property
        def control(self) -> "SourceView":
            return self.view

    class Drawn(Message):
        """A layout's lines are being drawn for the first time: the frame being made shows it.

        The explorer waits for it before filling the chunk table and detail, so new boundaries reach the screen
        first when the strategy changes.
        """

        def __init__(self, view: "SourceView", layout: SourceLayout) -> None:
            super().__init__()
            self.view = view
            self.layout = layout

        @property
        def control(self) -> "SourceView":
            return self.view

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: LRUCache[tuple[int, int | None], tuple[Strip, Strip, Style | None]] = LRUCache(1024)
        #: Finished wrapped rows by (line, row of the line, selection if it touches the line).
        self._rows_drawn: LRUCache[tuple[int, int, int | None], Strip] = LRUCache(1024)
        #: The soft wrap of the current text at the current width (None: not wrapping, or not laid out yet).
        self._rows: RowMap | None = None
        #: The layout whose lines were drawn last (a new one is announced with `Drawn`).
        self._drawn: SourceLayout | None = None

    # --- state -------------------------------------------------------------------------------------------------

    def watch_layout_data(self, old: SourceLayout | None, layout: SourceLayout | None) -> None:
        # The same text with other notes re-wraps the noted lines: keep the text at the top where it is.
        same_text = old is not None and layout is not None and (old.text is layout.text or old.text == layout.text)
        anchor = self._top_offset(wrapped=True) if same_text and self._rows is not None else None
        self._lines.clear()
        self._rows_drawn.clear()
        if self._update_rows() and anchor is not None:
            self.scroll_to(y=self._row_of_offset(anchor), animate=False, immediate=True)
        self.refresh()

    def watch_selected(self, old: int | None, new: int | None) -> None:
        self.refresh()

    def watch_notice(self) -> None:
        self.refresh()

    def watch_wrap(self, old: bool, new: bool) -> None:
        # Keep the text at the top of the view where it is: its line (and, wrapped, its row) before and after.
        anchor = self._top_offset(wrapped=old)
        self._lines.clear()
        self._rows_drawn.clear()
        self._update_rows()
        if new and self.scroll_x:
            self.scroll_to(x=0, animate=False, immediate=True)
        if anchor is not None:
            self.scroll_to(y=self._row_of_offset(anchor), animate=False, immediate=True)
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        if self.wrap:
            self._rewrap_keeping_top()

    def watch_show_vertical_scrollbar(self) -> None:
        # The scrollbar takes columns from the text: wrap again at the narrower (or wider) width.
        if self.wrap:
            self._rewrap_keeping_top()

    def _rewrap_keeping_top(self) -> None:
        anchor = self._top_offset(wrapped=True)
        if self._update_rows() and anchor is not None:
            self.scroll_to(y=self._row_of_offset(anchor), animate=False, immediate=True)

    def _wrap_width(self, layout: SourceLayout) -> int:
        return max(self.scrollable_content_region.width - layout.gutter_width, MIN_WRAP)

    def _update_rows(self) -> bool:
        """Wrap the text again if the document or the width changed; set the virtual size. True if rewrapped."""
        layout = self.layout_data
        rewrapped = False
        if layout is None:
            self._rows = None
            size = Size(0, 0)
        elif not self.wrap or self.scrollable_content_region.width <= 0:
            # Not wrapping, or not laid out yet (the first resize wraps): one row per line.
            self._rows = None
            size = Size(layout.gutter_width + layout.max_width + NOTE_ROOM, layout.line_count)
        else:
            width = self._wrap_width(layout)
            rows = self._rows
            notes = layout.notes()
            # Re-chunking the same text keeps the text's wrap: it depends on the text and the width only.
            if rows is None or rows.width != width or not (rows.text is layout.text or rows.text == layout.text):
                self._rows = rows = RowMap(layout.text, layout.line_starts, width, notes)
                self._rows_drawn.clear()
                rewrapped = True
            elif rows.notes != notes and not layout.notes_pending:
                self._rows = rows = rows.with_notes(notes)  # only the lines with a note, before or now
                self._rows_drawn.clear()
                rewrapped = True
            # Width 0: never wider than the view, so there is nothing to scroll sideways.
            size = Size(0, rows.rows)
        if size != self.virtual_size:  # a new size lays the screen out again: only when it really changes
            self.virtual_size = size
            self.refresh()
        return rewrapped

    # --- rows and lines ----------------------------------------------------------------------------------------

    def row_of_line(self, line0: int) -> int:
        """The first screen row (in scroll coordinates) of 0-based line ``line0``."""
        rows = self._rows
        return line0 if rows is None else rows.row_of_line(line0)

    def line_at_row(self, row: int) -> int:
        """The 0-based line drawn at screen row ``row`` (in scroll coordinates)."""
        rows = self._rows
        return row if rows is None else rows.locate(row)[0]

    def _row_of_offset(self, offset: int) -> int:
        layout = self.layout_data
        if layout is None:
            return 0
        y = layout.line_of(offset) - 1
        rows = self._rows
        return y if rows is None else rows.row_of_offset(y, offset)

    def _top_offset(self, *, wrapped: bool) -> int | None:
        """Offset of the text at the top of the view, read with the rows as they are now."""
        layout = self.layout_data
        if layout is None or layout.line_count == 0:
            return None
        top = round(self.scroll_y)
        rows = self._rows
        if wrapped and rows is not None:
            y, k = rows.locate(top)
            return rows.offset(y, k, layout.line_starts[y])
        return layout.line_starts[min(top, layout.line_count - 1)]

    def _row_span(self, layout: SourceLayout, row: int) -> tuple[int, tuple[int, int] | None]:
        """The line drawn at ``row`` and, for a wrapped line's row, the offsets of the text on it."""
        rows = self._rows
        if rows is None:
            return row, None
        y, k = rows.locate(row)
        if rows.row_count(y) == 1:
            return y, None
        return y, rows.span(y, k, *layout.line_span(y))

    def scroll_to_chunk(self, index: int, *, animate: bool = False) -> None:
        """Bring chunk ``index``'s first line into view (a quarter down the view when it was off screen)."""
        layout = self.layout_data
        if layout is None or not (0 <= index < len(layout.chunks)):
            return
        c = layout.chunks[index]
        first, last = self._row_of_offset(c.start), self._row_of_offset(max(c.end - 1, c.start))
        top = round(self.scroll_y)
        height = max(self.scrollable_content_region.height, 1)
        if top <= first and last < top + height:
            return  # already entirely visible
        if top <= first < top + height and last - first >= height:
            return  # a long chunk whose start is on screen: leave it
        self.scroll_to(y=max(first - height // 4, 0), animate=animate, immediate=True)

    def chunk_on_screen(self) -> int | None:
        """The chunk at the top of the visible lines (compare mode follows it)."""
        layout = self.layout_data
        if layout is None:
            return None
        line, within = self._row_span(layout, round(self.scroll_y))
        return layout.chunk_at(line, None if within is None else 0, None, within)

    # --- drawing -----------------------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        layout = self.layout_data
        line = scroll_y + y
        if layout is None:
            text = self.notice if y == 1 else ""
            return Strip([Segment("  " + text, base + Style(italic=True, dim=True))]).crop_extend(0, width, base)
        if layout is not self._drawn:
            self._drawn = layout
            self.post_message(self.Drawn(self, layout))  # handled after this frame, not inside it
        if self._rows is not None:
            return self._render_row(layout, scroll_y + y, width)
        if line >= layout.line_count:
            return Strip.blank(width, base)
        gutter, content, fill = self._line_strips(layout, line)
        gw = layout.gutter_width
        fill_style = base + fill if fill is not None else base
        body = content.crop_extend(scroll_x, scroll_x + max(width - gw, 0), fill_style)
        return Strip.join([gutter, body])

    def _line_strips(self, layout: SourceLayout, line: int) -> tuple[Strip, Strip, Style | None]:
        """Gutter and whole-line content of ``line`` (memoised), and the style filling the row after the text."""
        sel = self.selected
        key = (line, sel if layout.line_touches(line, sel) else None)
        cached = self._lines.get(key)
        if cached is None:
            base = self.rich_style
            gutter = Strip(layout.gutter(line, sel)).apply_style(base)
            segs, fill, text_width = layout.segments(line, sel)
            content = Strip(segs, text_width).apply_style(base)
            cached = (gutter, content, fill)
            self._lines[key] = cached
        return cached

    def _render_row(self, layout: SourceLayout, row: int, width: int) -> Strip:
        """One row of a wrapped line: its slice of the line's content, after the gutter or a continuation one."""
        rows = self._rows
        assert rows is not None
        base = self.rich_style
        if row >= rows.rows:
            return Strip.blank(width, base)
        line, k = rows.locate(row)
        sel = self.selected
        key = (line, k, sel if layout.line_touches(line, sel) else None)
        strip = self._rows_drawn.get(key)
        if strip is not None and strip.cell_length == width:
            return strip
        gutter, content, fill = self._line_strips(layout, line)
        if k:
            offset = rows.offset(line, k, layout.line_starts[line])
            gutter = Strip(layout.continuation_gutter(offset, sel)).apply_style(base)
        avail = max(width - layout.gutter_width, 0)
        start, end = rows.chars(line, k)
        piece = Strip(_slice_chars(content, start, end))
        if end is None:
            # The last row: the rest of the text or of the notes after it (wrapped: they fit), then the fill.
            after = fill
        else:
            # An inner row: filled in the band of the text that continues on the next row.
            after = layout.fill_at(rows.offset(line, k + 1, layout.line_starts[line]), sel)
        body = piece.crop_extend(0, avail, base + after if after is not None else base)
        strip = Strip.join([gutter, body])
        self._rows_drawn[key] = strip
        return strip

    # --- mouse -------------------------------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        layout = self.layout_data
        if layout is None:
            return
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = offset.y + round(self.scroll_y)
        if self._rows is not None and row >= self._rows.rows:
            return
        line, within = self._row_span(layout, row)
        column: int | None
        if offset.x >= layout.gutter_width:
            column = offset.x - layout.gutter_width + (0 if self._rows is not None else round(self.scroll_x))
        else:
            # The gutter: the line's start, or for a wrapped line's later row the text that row starts with.
            column = None if within is None or within[0] == layout.line_span(line)[0] else 0
        index = layout.chunk_at(line, column, self.selected, within)
        if index is not None:
            self.post_message(self.ChunkClicked(self, index))


def _slice_chars(strip: Strip, start: int, end: int | None) -> list[Segment]:
    """The segments of ``strip`` holding its characters ``[start, end)`` (end None: to the end).

    Rows are cut by character, not by cell, so a cluster the terminal draws as one glyph (an emoji and its
    modifier, a letter and its accent) stays whole on the row the wrap put it on.
    """
    out: list[Segment] = []
    pos = 0
    for seg in strip:
        text = seg.text
        n = len(text)
        if end is not None and pos >= end:
            break
        if pos + n > start:
            lo, hi = max(start - pos, 0), n if end is None else min(end - pos, n)
            out.append(seg if (lo, hi) == (0, n) else Segment(text[lo:hi], seg.style, seg.control))
        pos += n
    return out
