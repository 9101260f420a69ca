"""The source of one document with its chunks drawn in: a Line API view that renders only the visible lines."""

from __future__ import annotations

import time

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

from ..layout import SourceLayout


#: Columns kept after the longest line for the notes drawn there (lint findings, "not embedded").
NOTE_ROOM = 64


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

    class ChunkClicked(Message):
        """A chunk was clicked in the source."""

        def __init__(self, view: "SourceView", index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

        @property
        def control(self) -> "SourceView":
            return self.view

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: LRUCache[tuple[int, int | None], tuple[Strip, Strip, Style | None]] = LRUCache(1024)

    # --- state -------------------------------------------------------------------------------------------------

    def watch_layout_data(self, layout: SourceLayout | None) -> None:
        self._lines.clear()
        size = Size(0, 0) if layout is None else Size(layout.gutter_width + layout.max_width + NOTE_ROOM, layout.line_count)
        if size != self.virtual_size:  # a new size lays the screen out again: only when it really changes
            self.virtual_size = size
        self.refresh()

    def watch_selected(self, old: int | None, new: int | None) -> None:
        self.refresh()

    def watch_notice(self) -> None:
        self.refresh()

    def scroll_to_chunk(self, index: int, *, animate: bool = False) -> None:
        """Bring chunk ``index``'s first line into view (a quarter down the view when it was off screen)."""
        layout = self.layout_data
        if layout is None or not (0 <= index < len(layout.chunks)):
            return
        first, last = layout.chunk_lines(index)
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
        return layout.chunk_at(round(self.scroll_y), None)

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
        if layout.drawn_at is None:
            layout.drawn_at = time.perf_counter()
        if line >= layout.line_count:
            return Strip.blank(width, base)
        sel = self.selected
        key = (line, sel if layout.line_touches(line, sel) else None)
        cached = self._lines.get(key)
        if cached is None:
            gutter = Strip(layout.gutter(line, sel)).apply_style(base)
            segs, fill, text_width = layout.segments(line, sel)
            content = Strip(segs, text_width).apply_style(base)
            cached = (gutter, content, fill)
            self._lines[key] = cached
        gutter, content, fill = cached
        gw = layout.gutter_width
        fill_style = base + fill if fill is not None else base
        body = content.crop_extend(scroll_x, scroll_x + max(width - gw, 0), fill_style)
        return Strip.join([gutter, body])

    # --- mouse -------------------------------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        layout = self.layout_data
        if layout is None:
            return
        offset = event.get_content_offset(self)
        if offset is None:
            return
        line = offset.y + round(self.scroll_y)
        column = None if offset.x < layout.gutter_width else offset.x - layout.gutter_width + round(self.scroll_x)
        index = layout.chunk_at(line, column, self.selected)
        if index is not None:
            self.post_message(self.ChunkClicked(self, index))
