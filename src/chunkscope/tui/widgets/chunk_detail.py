"""The selected chunk in full: where it is, its metadata, citation and URL, and the text the model embeds."""

from __future__ import annotations

import json

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import RichLog

from ...safe_text import visible
from ...config import Config
from ..session import FileResult, chunk_citation, chunk_link
from ...wording import plural


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

    def on_mount(self) -> None:
        self._show()

    def watch_result(self) -> None:
        self._show()

    def on_resize(self) -> None:
        # The log keeps lines laid out at the old width: lay the chunk out again at the new one.
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
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold #8b949e", no_wrap=True)
        grid.add_column(overflow="fold")
        limit = r.limit
        over = f" (limit {limit})" if limit is not None else ""
        grid.add_row("chunk", f"#{c.index} of {len(r.chunks)} · lines {c.start_line}–{c.end_line} · chars {c.start}–{c.end}")
        grid.add_row("tokens", Text(f"{c.tokens} {r.resolved.strategy.length_tokenizer}{over}",
                                    style="bold red" if limit is not None and c.tokens > limit else ""))
        if c.embed_tokens is not None:
            cut = r.truncations.get(c.index)
            emb = Text(f"{c.embed_tokens} word pieces")
            if cut is not None:
                emb.append(f" — the model reads only up to line {r.doc.line_of(cut)}", style="bold #ff8787")
            grid.add_row("embedder", emb)
        elif r.embed_error:
            grid.add_row("embedder", Text(visible(r.embed_error, oneline=True), style="dim"))
        if c.heading_path:
            grid.add_row("heading", Text(visible(" › ".join(c.heading_path), oneline=True)))
        if c.overlap:
            grid.add_row("overlap", f"{c.overlap[1] - c.overlap[0]} chars shared with #{c.index - 1}")
        if c.warnings:
            grid.add_row("warnings", Text(", ".join(c.warnings), style="yellow"))
        for f in r.findings:
            if getattr(f, "chunk_index", None) == c.index:
                grid.add_row("lint", Text(visible(f"{getattr(f, 'rule', '')}: {getattr(f, 'message', '')}", oneline=True),
                                          style="yellow"))
        citation = chunk_citation(r, c)
        if citation:
            grid.add_row("citation", Text(visible(citation, oneline=True)))
        url = chunk_link(self.config, r, c)
        if url:
            grid.add_row("url", Text(visible(url, oneline=True), style="underline #58a6ff"))
        for k, v in c.metadata.items():
            value = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            grid.add_row(Text(visible(str(k), oneline=True), style="#8b949e"), Text(visible(value, oneline=True)))
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

    def _put(self, renderable) -> None:
        self.clear()
        self.write(renderable, expand=True)
        self.scroll_home(animate=False)
