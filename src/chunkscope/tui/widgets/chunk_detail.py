"""The selected chunk in full: where it is, its metadata, citation and URL, and the text the model embeds."""

from __future__ import annotations

import json
import re

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events
from textual.reactive import reactive
from textual.widgets import RichLog

from chunkscope.safe_text import visible
from chunkscope.config.reader import Config
from chunkscope.tui.headless.session import FileResult, chunk_citation, chunk_link
from chunkscope.wording import plural

#: A URL's pieces: the scheme and host together, then each path segment, query parameter or anchor with the
#: separator that ends it. A URL (or a path) breaks between pieces, so no name is ever cut in two.
_URL_PIECE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#&]*[/?#&]?|[^/?#&]+[/?#&]?|[/?#&]")
#: A word: what the wrap keeps whole.
_WORD = re.compile(r"\S+")
#: Within a piece too long for a line (a long host name, a long slug): after a dot, hyphen or underscore.
_NAME_PART = re.compile(r"[^._-]+[._-]*|[._-]+")


def break_url(url: str, width: int) -> list[str]:
    """``url`` in lines of at most ``width`` cells, broken after a ``/``, ``?``, ``&`` or ``#``, and inside a piece
    longer than a line after a ``.``, ``-`` or ``_``: never inside a word. A word longer than a line (nothing to
    break at) is kept whole on a line of its own, longer than ``width``."""
    parts: list[str] = []
    for piece in _URL_PIECE.findall(url):
        parts.extend(_NAME_PART.findall(piece) if cell_len(piece) > width else [piece])
    lines: list[str] = []
    line = ""
    for part in parts:
        if line and cell_len(line) + cell_len(part) > width:
            lines.append(line)
            line = ""
        line += part
    if line or not lines:
        lines.append(line)
    return lines


class ChunkDetail(RichLog, can_focus=True):
    """Metadata, citation, URL and embed text of the selected chunk (the part the model drops dimmed).

    A RichLog rather than a Static in a scroll container: replacing its content never re-lays-out the screen,
    which keeps live tuning fast.
    """

    result: reactive[FileResult | None] = reactive(None, always_update=True)
    """The open file's chunks."""
    selected: reactive[int | None] = reactive(None)
    """The chunk to show."""

    def __init__(self, config: Config, *, id: str | None = None) -> None:
        # min_width: RichLog lays content out at least 78 wide; in a narrower pane that would scroll sideways.
        super().__init__(id=id, wrap=True, highlight=False, markup=False, auto_scroll=False, min_width=20)
        self.config = config
        self._shown: object = None
        self._laid_out_width = 0  # the width the shown lines were laid out at

    def on_mount(self) -> None:
        self._show()

    def watch_result(self) -> None:
        self._show()

    def on_resize(self, event: events.Resize) -> None:
        # The log keeps lines laid out at the old width: lay the chunk out again at the new one. A new height alone
        # (a bottom pane opened or closed under it) changes nothing in the lines: laying them out again there cost
        # a second layout of the whole screen on every Escape that closed a pane.
        if self._shown is not None and self._laid_out_width == self._width():
            return
        self._shown = None
        self.call_after_refresh(self._show)

    def watch_selected(self) -> None:
        self._show()

    def _show(self) -> None:
        r = self.result
        i = self.selected
        if isinstance(self._shown, tuple) and self._shown[0] is r and self._shown[1] == i:
            return
        self._shown = (r, i)
        body = self
        if r is None:
            body._put(Text("No file open.", style="dim italic"))
            return
        if r.error:
            body._put(Text(f"This file could not be chunked:\n{visible(r.error)}", style="red"))
            return
        if not r.chunks and not r.complete:
            body._put(Text(f"Cutting {visible(r.doc.path, oneline=True)} with {r.resolved.label}…", style="dim italic"))
            return
        if i is None or not (0 <= i < len(r.chunks)):
            body._put(Text(f"{plural(len(r.chunks), 'chunk')}. Select one in the table or click it in the source.",
                             style="dim italic"))
            return
        c = r.chunks[i]
        rows: list[tuple[str | Text, str | Text]] = []
        limit = r.limit
        over = f" (limit {limit})" if limit is not None else ""
        rows.append(("chunk", f"#{c.index} of {len(r.chunks)} · lines {c.start_line}–{c.end_line} · chars {c.start}–{c.end}"))
        tokens = Text(f"{c.tokens} {r.resolved.strategy.length_tokenizer}{over}",
                      style="bold red" if limit is not None and c.tokens > limit else "")
        tokens.append(f" · {plural(c.words, 'word')}", style="")  # the chunk table gives its words column up first
        rows.append(("tokens", tokens))
        if c.embed_tokens is not None:
            cut = r.truncations.get(c.index)
            emb = Text(f"{c.embed_tokens} word pieces")
            if cut is not None:
                emb.append(f" — the model reads only up to line {r.doc.line_of(cut)}", style="bold #ff8787")
            rows.append(("embedder", emb))
        elif r.embed_error:
            rows.append(("embedder", Text(visible(r.embed_error, oneline=True), style="dim")))
        if c.heading_path:
            rows.append(("heading", Text(visible(" › ".join(c.heading_path), oneline=True))))
        if c.overlap:
            rows.append(("overlap", f"{c.overlap[1] - c.overlap[0]} chars shared with #{c.index - 1}"))
        if c.warnings:
            rows.append(("warnings", Text(", ".join(c.warnings), style="yellow")))
        for f in r.findings:
            if getattr(f, "chunk_index", None) == c.index:
                rows.append(("lint", Text(visible(f"{getattr(f, 'rule', '')}: {getattr(f, 'message', '')}", oneline=True),
                                          style="yellow")))
        citation = chunk_citation(r, c)
        if citation:
            rows.append(("citation", Text(visible(citation, oneline=True))))
        url = chunk_link(self.config, r, c)
        if url:
            rows.append(("url", Text(visible(url, oneline=True), style="underline #58a6ff")))
        for k, v in c.metadata.items():
            value = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            rows.append((Text(visible(str(k), oneline=True), style="#8b949e"), Text(visible(value, oneline=True))))
        grid = self._grid(rows)
        embed = c.embed_text
        cut = r.truncations.get(c.index)
        text = Text()
        if cut is not None and c.embed_text_override is None:
            keep = cut - c.start
            text.append(visible(embed[:keep]))
            text.append(" ✂ not embedded: ", style="bold #ff8787")
            text.append(visible(embed[keep:]), style="dim strike")
        else:
            text.append(visible(embed))
        title = "embed text" if c.embed_text_override is not None else "text (embedded as is)"
        body._put(Group(grid, Text(""), Text(title, style="bold #8b949e"), text))

    def _width(self) -> int:
        """The width the detail is drawn at (before its first layout: RichLog's own narrowest)."""
        return max(self.scrollable_content_region.width, self.min_width)

    def _grid(self, rows: list[tuple[str | Text, str | Text]]) -> RenderableType:
        """Labels and values in two columns. A value without spaces (a URL, a path) is broken only after a
        ``/``, ``?``, ``&`` or ``#`` (`break_url`); one with a piece too long for the value column goes under the
        grid, across the whole width."""
        width = self._width()
        label_width = max((cell_len(label if isinstance(label, str) else label.plain) for label, _ in rows), default=0)
        value_width = max(width - label_width - 1, 1)  # the grid's columns are one cell apart
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold #8b949e", no_wrap=True)
        grid.add_column(overflow="fold")
        below: list[RenderableType] = []
        for label, value in rows:
            text = value if isinstance(value, Text) else Text(value)
            if text.plain and not any(ch.isspace() for ch in text.plain) and cell_len(text.plain) > value_width:
                lines = break_url(text.plain, value_width)
                if max(cell_len(line) for line in lines) > value_width:
                    below.append(Text.assemble((label if isinstance(label, str) else label.plain, "bold #8b949e")))
                    below.append(self._lines_of(text, break_url(text.plain, width)))
                    continue
                text = self._lines_of(text, lines)
            elif not text.spans:
                text = self._fit_words(text, value_width)
            grid.add_row(label, text)
        return Group(grid, *below) if below else grid

    @staticmethod
    def _fit_words(text: Text, width: int) -> Text:
        """``text`` with each word wider than ``width`` (a path in a citation) broken after its separators, so the
        wrap never has to cut inside a word."""
        words = _WORD.findall(text.plain)
        if all(cell_len(word) <= width for word in words):
            return text
        fitted = _WORD.sub(lambda m: "\n".join(break_url(m.group(), width)) if cell_len(m.group()) > width
                           else m.group(), text.plain)
        return Text(fitted, style=text.style)

    @staticmethod
    def _lines_of(text: Text, lines: list[str]) -> Text:
        """``text`` (its style kept) with a line break after each of ``lines``, which make up its text."""
        out = Text(style=text.style)
        for k, line in enumerate(lines):
            if k:
                out.append("\n")
            out.append(line)
        return out

    def _put(self, renderable) -> None:
        self.clear()
        self._laid_out_width = self._width()
        self.write(renderable, width=self._laid_out_width)
        self.scroll_home(animate=False)
