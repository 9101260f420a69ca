"""The main screen: docs tree, the source with its chunks, the chunk table and detail, live tuning, panes."""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input
from textual.worker import Worker, WorkerCancelled, WorkerError, WorkerState, get_current_worker

from chunkscope.safe_text import visible
from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.document.loader import DocsTree
from chunkscope.tui.failures import WorkerFailed
from chunkscope.tui.highlight import cached_line_colours, line_colours
from chunkscope.tui.jump import Jump, jump_index
from chunkscope.tui.layout import SourceLayout, marks_from_findings
from chunkscope.tui.headless.search import Expected, SearchSession, chapter_of
from chunkscope.tui.input_quiet import input_quiet_of
from chunkscope.tui.headless.session import (FileResult, FilesChange, TreeResult, apply_files_change, chunk_tree, complete_file, cut_file,
                       export_jsonl, keep_cut, read_files_change)
from chunkscope.tui.headless.watcher import Snapshot, describe_change, diff, first_scan, settled_scan, tree_scanner
from chunkscope.tui.widgets.docs_tree import DocsTreeView
from chunkscope.tui.widgets.histogram import TokenHistogram
from chunkscope.tui.widgets.key_bar import KeyBar
from chunkscope.tui.widgets.source_view import SourceView
from chunkscope.tui.widgets.strategy_bar import StrategyBar
from chunkscope.wording import plural

if TYPE_CHECKING:
    from chunkscope.chunking.stats_cache import FileStats
    from chunkscope.tui.widgets.chunk_table import ChunkTable
    from chunkscope.tui.screens.compare import CompareMemory
    from chunkscope.tui.widgets.query_pane import QueryPane
    from chunkscope.tui.screens.files import FilesScreen

#: Seconds between checks of the files' modification times.
POLL_SECONDS = 1.0
#: A file cut taking longer than this is announced (a strategy stuck on a document).
SLOW_CUT_SECONDS = 5.0
#: Terminal widths (columns) where the explorer's layout changes, and the height below which it is "short".
NARROW_BELOW = 100
WIDE_FROM = 140
SHORT_BELOW = 32


#: Seconds after which the table and detail follow a new cut even if the source view has not drawn it yet.
SHOW_CUT_FALLBACK_SECONDS = 0.25
#: Seconds after the first frame after which the side panes and the strategy editor are mounted even if the first
#: file's cut has not been drawn yet.
FIRST_CUT_WAIT_SECONDS = 3.0


def _start_classes(width: int, height: int) -> str:
    """The breakpoint classes Textual gives the screen on its first resize (`ExplorerScreen.HORIZONTAL_BREAKPOINTS`,
    `VERTICAL_BREAKPOINTS`), set when it is made: that resize then changes no class, and the whole screen is not
    styled twice during the start-up."""
    across = "-wide" if width >= WIDE_FROM else "-medium" if width >= NARROW_BELOW else "-narrow"
    return f"{across} {'-tall' if height >= SHORT_BELOW else '-short'}"


class _Once:
    """``fn(*args)`` on the first call only: the first of several triggers wins."""

    def __init__(self, fn: Callable[..., object], *args: object) -> None:
        self._fn, self._args, self._done = fn, args, False

    def __call__(self) -> None:
        if not self._done:
            self._done = True
            self._fn(*self._args)


class ExplorerScreen(Screen):
    """Browse the tree, read each file with its chunks drawn in, tune the strategy and see it re-cut live."""

    CSS_PATH = "explorer.tcss"

    BINDINGS = [
        # Priority: from a number field (the threshold, a size) too; a field that may hold "/" still types it.
        Binding("slash", "query", "Query", id="explorer.query", priority=True,
                tooltip="open the query pane and type a question (from anywhere but a text field)"),
        Binding("f", "focus('docs')", "Files", id="explorer.files",
                tooltip="the docs tree (on a narrow terminal it opens over the source; Enter or Escape closes it)"),
        Binding("l", "lint", "Lint", id="explorer.lint", tooltip="the tree's lint findings; Enter jumps to one"),
        Binding("h", "sizes", "Sizes", id="explorer.sizes", show=False,
                tooltip="the chunk sizes with their axis: token bins, the limit marked, a count per bin (tree, file)"),
        Binding("F", "files", "Worst files", id="explorer.files-view",
                tooltip="every file with its chunks, over-limit chunks, errors, warnings and unread text, worst "
                        "first; Enter opens one at its first finding"),
        Binding("c", "compare", "Compare", id="explorer.compare",
                tooltip="two strategies (or parameter sets) side by side on this file"),
        Binding("v", "evaluate", "Evaluate", id="explorer.evaluate",
                tooltip="probe the current strategy and every configured preset: retrieval metrics side by side"),
        Binding("V", "evaluate_pair", "Compare retrieval", id="explorer.evaluate-pair", show=False,
                tooltip="pick two configurations (current values or presets, each with its search mode and embed "
                        "prefix) and probe them side by side, with the sections each one missed"),
        Binding("e", "expect", "Expect chunk", id="explorer.expect",
                tooltip="mark the selected chunk as the one a question should find (the query pane shows its rank "
                        "and why it missed); e on the same chunk again clears the mark"),
        Binding("n", "next_chunk", "Next chunk", id="explorer.next-chunk", tooltip="select the next chunk"),
        Binding("p", "prev_chunk", "Prev chunk", id="explorer.prev-chunk", tooltip="select the previous chunk"),
        Binding("right_square_bracket", "next_file", "Next file", id="explorer.next-file", show=False,
                tooltip="open the next file of the tree"),
        Binding("left_square_bracket", "prev_file", "Prev file", id="explorer.prev-file", show=False,
                tooltip="open the previous file of the tree"),
        Binding("s", "focus_strategy", "Strategy", id="explorer.strategy",
                tooltip="focus the strategy picker (then tab to the parameters)"),
        Binding("o", "focus('source')", "Source", id="explorer.source", show=False, tooltip="focus the source view"),
        Binding("w", "toggle_wrap", "Wrap lines", id="explorer.wrap",
                tooltip="soft-wrap long lines in the source (off: one row per line, scroll sideways)"),
        Binding("escape", "close_pane", "Back", id="explorer.close-pane",
                tooltip="leave a text field for the source view; from anywhere else, close the query or lint pane"),
    ]

    #: Width classes (see explorer.tcss): below 140 columns the docs tree becomes a drawer, below 100 the chunk
    #: table and detail move under the source.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-medium"), (WIDE_FROM, "-wide")]
    #: Height classes: below 32 rows the header and the panes give rows back to the source.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_BELOW, "-tall")]
    #: Where the keys start: the docs tree where it is a column, else the source (the screen has its width class
    #: from the start: `_start_classes`). Textual's default, the first focusable widget, is the docs tree, which
    #: opened the drawer over the source for the first frame, and moving on to the source then restyled the whole
    #: screen (-tree-open) while the start-up was still drawing (start -> first file's text, bench/bench_tui.py).
    AUTO_FOCUS = ".-wide #docs, .-medium #source, .-narrow #source"

    # Screen state is held in `var`s (no repaint): a reactive on the screen would redraw the whole screen.
    resolved: var[ResolvedStrategy] = var(None, always_update=True)  # type: ignore[arg-type]
    """The strategy in force (picked in the header or the command palette)."""
    result: var[FileResult | None] = var(None, always_update=True)
    """The open file's chunks under the current strategy."""
    layout_data: var[SourceLayout | None] = var(None, always_update=True)
    """How the source view draws the open file."""
    selected: var[int | None] = var(None)
    """The selected chunk of the open file."""
    tree_result: var[TreeResult | None] = var(None, always_update=True)
    """Every file's chunks and the tree's lint (None while the tree worker runs)."""
    current_path: var[str | None] = var(None)
    """The open file."""
    current_chapter: var[str | None] = var(None)
    """The open file's chapter id (for the query pane's chapter filter)."""
    expected: var[Expected | None] = var(None)
    """The chunk the query pane judges questions against."""

    class FileChunked(Message):
        """The file worker's result: chunks and the layout to draw them."""

        def __init__(self, result: FileResult, layout: SourceLayout, reason: str, chapter: str | None) -> None:
            super().__init__()
            self.result = result
            self.layout = layout
            self.reason = reason
            self.chapter = chapter

    class TreeChunked(Message):
        """The tree worker's result."""

        def __init__(self, result: TreeResult) -> None:
            super().__init__()
            self.result = result

    class TreeCounted(Message):
        """Every file's chunk token counts from the stats cache (the tree is unchanged since it was counted)."""

        def __init__(self, resolved: ResolvedStrategy, counts: dict[str, FileStats]) -> None:
            super().__init__()
            self.resolved = resolved
            self.counts = counts

    class FilesChanged(Message):
        """Files under the root were edited, added, deleted or moved (read by the watcher's worker)."""

        def __init__(self, change: "FilesChange") -> None:
            super().__init__()
            self.change = change

    def __init__(self, tree: DocsTree, config: Config, resolved: ResolvedStrategy, *,
                 queries: Sequence[Any] = (), queries_name: str = "") -> None:
        """Args:
            queries: labelled questions (``QueryCase``s read from ``queries_name``, ``--queries``): the evaluation
                views (v, V) add ``eval``'s metrics on them.
        """
        super().__init__(classes=_start_classes(self.app.size.width, self.app.size.height))
        self.docs = tree
        self.config = config
        self.search = SearchSession(tree, config)
        if resolved.search:  # a preset naming its search mode (what tune chose) opens the query pane in it
            self.search.search_mode = resolved.search
        self.set_reactive(ExplorerScreen.resolved, resolved)
        #: The chunk to select once that file's chunks are shown.
        self._pending_jump: Jump | None = None
        #: The tree worker waits for the open file's chunks, so the two never compete for the CPU.
        self._tree_stale = True
        #: The watcher's last accepted scan of the files (see `poll_files`); taken now, with each document's time
        #: as it was read, so a change made while the app was starting is still seen.
        self._stamps: Snapshot | None = first_scan(tree, config.ignore)
        #: A scan is running or its change waits to be applied: the next poll skips (one scan at a time).
        self._scanning = False
        #: A cut's boundaries waiting to be drawn, and what to do once they are (see `_cut_drawn`).
        self._awaiting_draw: tuple[SourceLayout, Callable[[], None]] | None = None
        #: The files view while it is open (it is given each new tree run).
        self._files_view: FilesScreen | None = None
        #: The queries file last given (``--queries``, or the two-configuration picker's field, which starts with
        #: it) and its questions, which both evaluation views (v, V) ask after the probe.
        self._pair_queries = queries_name
        self._queries: list[Any] = list(queries)
        #: What compare mode keeps between visits (side B's strategy), made on the first visit.
        self._compare_memory: CompareMemory | None = None
        #: (file worker, when it was first seen running, whether the user was told) for the slow-cut notice.
        self._cut_since: tuple[Worker, float, bool] | None = None
        #: Set after the first frame: the first cut waits for it, so loading the tokenizer (which holds the
        #: interpreter for a few hundred milliseconds) never delays the first paint.
        self._painted = threading.Event()
        #: The start-up's work after the first cut is done or under way (`_after_first_cut`).
        self._started = False

    # --- layout ------------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="top"):
            yield StrategyBar(self.config, self.resolved, id="strategy-bar", editor_later=True)
            yield TokenHistogram(id="histogram")
        with Horizontal(id="main"):
            yield DocsTreeView(self.docs, id="docs")
            yield SourceView(id="source").data_bind(ExplorerScreen.selected, ExplorerScreen.layout_data)
            # The chunk table and the detail are mounted once the first file's chunks are drawn (`_after_first_cut`):
            # a third of the start-up's styling and drawing work, for panes that are empty until the first cut.
            yield Vertical(id="side")
        with Container(id="bottom"):
            # The panes are mounted on first use: fewer widgets to build before the first paint.
            yield ContentSwitcher(id="panes")
        yield KeyBar()

    def on_mount(self) -> None:
        self.call_after_refresh(self._after_first_frame)
        self.query_one("#docs").border_title = "docs"
        self.query_one("#source").border_title = "source"
        self._update_titles()
        if self.docs.documents:
            self.open_file(self.docs.documents[0].path)
        else:
            self.query_one(SourceView).notice = "No Markdown files here."
            self._start_tree()
        self.set_interval(POLL_SECONDS, self.poll_files, name="poll files")

    # --- the docs drawer (medium and narrow widths) -------------------------------------------------------------

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The docs tree shows as a drawer over the source while it has focus (a column on wide terminals)."""
        opened = isinstance(event.widget, DocsTreeView) and self.tree_is_drawer
        if opened != self.has_class("-tree-open"):  # a class change restyles the whole screen: 13 ms here
            self.set_class(opened, "-tree-open")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if isinstance(event.widget, DocsTreeView):
            self.remove_class("-tree-open")

    @property
    def tree_is_drawer(self) -> bool:
        """Whether the docs tree is hidden until focused (the terminal is narrower than `WIDE_FROM`)."""
        # From the size, not the "-wide" class: the breakpoint classes are applied after the first focus event.
        return self.app.size.width < WIDE_FROM

    def _after_first_frame(self) -> None:
        """The first frame is drawn: the first file's cut starts (it waits for this: see `rechunk_file`), and the
        rest of the start-up waits for that cut (`_after_first_cut`)."""
        self._painted.set()
        if self.current_path is None:
            self.call_later(self._after_first_cut)
        else:
            # A cut that fails in its worker, or takes long (a stuck strategy), never holds the rest back.
            self.set_timer(FIRST_CUT_WAIT_SECONDS, self._after_first_cut)

    async def _after_first_cut(self, then: Callable[[], None] | None = None) -> None:
        """Once, after the first file's boundaries are drawn: the stored totals, the side panes, the strategy editor,
        and ``then`` (the first cut's completion: started after the widgets are made, so the first file is shown
        complete only once they are, and a test or user leaving then never closes the app half-way through them).

        Python runs one thread at a time: done before the cut, mounting these (two dozen widgets, about a third of
        the start-up's styling) delayed the first file's chunks by as much (start -> the file's chunk count,
        bench/bench_tui.py from outside)."""
        if self._started:
            if then is not None:
                then()
            return
        self._started = True
        if self.tree_result is None:
            # Awaited here, the stored totals show before the widgets below are made, not after them.
            resolved = self.resolved
            lookup = self.run_worker(partial(self._stored_counts, resolved), thread=True, exclusive=True,
                                     group="tree-stored", exit_on_error=False, name="reading the stored totals",
                                     description="reading the stored totals")
            try:
                counts = await lookup.wait()
            except (WorkerCancelled, WorkerError):
                counts = None
            if counts is not None:
                self.post_message(self.TreeCounted(resolved, counts))
        # After the frame that shows those totals (the screen's queue keeps the message first; the frame waits for
        # the queue to be idle, so without this the widgets below would be made before the totals are drawn).
        self.call_after_refresh(self._mount_side_and_editor, then)

    async def _mount_side_and_editor(self, then: Callable[[], None] | None = None) -> None:
        """The chunk table and detail, and the strategy bar's picker and inputs in place of its first-frame text."""
        if not self.is_attached or not self.app.is_running:
            return  # the app is closing
        from chunkscope.tui.widgets.chunk_detail import ChunkDetail  # imported here too: not needed for the first frame
        from chunkscope.tui.widgets.chunk_table import ChunkTable

        table = ChunkTable(id="chunks").data_bind(ExplorerScreen.result, ExplorerScreen.selected)
        detail = ChunkDetail(self.config, id="detail").data_bind(ExplorerScreen.result, ExplorerScreen.selected)
        table.border_title = "chunks"
        detail.border_title = "chunk"
        await self.query_one("#side", Vertical).mount_all([table, detail])
        await self.query_one(StrategyBar).mount_editor()
        if then is not None:
            then()

    def _update_titles(self, shown: FileResult | None = None) -> None:
        """The source's title (the file and its chunk count) and subtitle (the strategy); ``shown``: a cut whose
        boundaries are being drawn before it becomes `result`."""
        src = self.query_one("#source")
        r = shown if shown is not None else self.result
        if self.current_path is None:
            title = "source"
        else:
            n = f" · {plural(len(r.chunks), 'chunk')}" if r is not None and r.doc.path == self.current_path \
                and r.chunks else ""
            title = f"{visible(self.current_path, oneline=True)}{n}"
        subtitle = self.resolved.label if self.resolved is not None else ""
        # Only on change: a new border title refreshes the layout of the whole screen.
        if src.border_title != title:
            src.border_title = title
        if src.border_subtitle != subtitle:
            src.border_subtitle = subtitle

    # --- opening and chunking ----------------------------------------------------------------------------------

    def open_file(self, path: str, *, jump: Jump | None = None, from_tree: bool = False) -> None:
        """Show a file: its text at once, its chunks from the file worker (the tree cursor follows)."""
        doc = self.docs.get(path)
        if doc is None:
            self.notify(f"{visible(path, oneline=True)} is not in the docs tree", severity="warning")
            return
        if jump is not None:
            self._pending_jump = jump
        r = self.result
        shown = r is not None and r.doc is doc and r.resolved is self.resolved and (r.chunks or r.complete)
        if path == self.current_path and shown:
            self._apply_jump()
            return
        self.current_path = path
        if self.result is None or self.result.doc is not doc:
            self.current_chapter = None  # not the last file's: the new one's comes with its cut's completion
        if not from_tree:
            # Moving the cursor from a tree event would fight the keys still queued for the tree.
            self.query_one(DocsTreeView).select_path(path)
        if self.layout_data is None or self.layout_data.doc is not doc:
            # The text at once, drawn plain (a line table is all it needs); the chunks follow from the worker.
            self.result = FileResult(doc, self.resolved, [], None)
            self.selected = None
            self.layout_data = SourceLayout(doc, [], pending=True)
            self.query_one(SourceView).scroll_to(y=0, animate=False, immediate=True)
            self._update_titles()
        self.rechunk_file("open")

    @work(thread=True, exclusive=True, group="file", exit_on_error=False,
          name="chunking the file", description="chunking the file")
    def rechunk_file(self, reason: str = "change") -> None:
        """Cut the open file with the current strategy and build its layout (off the UI thread)."""
        worker = get_current_worker()
        path, resolved = self.current_path, self.resolved
        doc = self.docs.get(path) if path else None
        if doc is None or resolved is None:
            return
        # Three steps, each drawn as soon as it is ready: the text (open_file), the boundaries (here), then what
        # the embedder and lint make of them (`complete_cut`, started once the boundaries are on screen).
        if reason == "open":
            self._painted.wait(timeout=1.0)
        from chunkscope.chunking.cut_cache import CutCache  # in a worker: the first frame does without it

        cache = CutCache(self.docs.root)
        # An unchanged file comes from the cut cache: shown without loading a tokenizer (a reopened tree).
        first = cut_file(doc, resolved, cache)
        if worker.is_cancelled:
            return
        # The boundaries go out before anything else is made of the file: on its first showing the text stays
        # plain and the chapter unknown until `complete_cut` (the Markdown lexer and the outline scan cost about
        # 150 ms of the interpreter there: the first file's chunks of a reopened tree waited for them). A cut that
        # failed has no completion: its colours and chapter are made here.
        colours = line_colours(doc) if first.error else cached_line_colours(doc) or []  # [] draws plain
        layout = SourceLayout(doc, first.chunks, {}, (), first.limit, colours, notes_pending=True)
        self.post_message(self.FileChunked(first, layout, reason, chapter_of(doc) if first.error else None))
        keep_cut(cache, first)  # after the chunks are on their way: the next start shows them at once

    @work(thread=True, exclusive=True, group="file-complete", exit_on_error=False,
          name="counting word pieces", description="counting word pieces")
    def complete_cut(self, first: FileResult) -> None:
        """Add what the embedder and lint make of a cut, the text's colours and the file's chapter (started once
        the boundaries are on screen)."""
        worker = get_current_worker()
        chapter = chapter_of(first.doc)
        full = complete_file(first, self.config)
        if worker.is_cancelled:
            return
        layout = SourceLayout(first.doc, full.chunks, full.truncations, marks_from_findings(full.findings), full.limit,
                              line_colours(first.doc))
        self.post_message(self.FileChunked(full, layout, "complete", chapter))

    def on_explorer_screen_file_chunked(self, msg: "ExplorerScreen.FileChunked") -> None:
        r = msg.result
        if r.doc.path != self.current_path or r.resolved is not self.resolved:
            return  # an answer for a file or strategy no longer shown
        if not r.complete:
            # The boundaries first: the source and the histogram redraw on the next frame; the table, the detail
            # and the word-piece counts follow right after that frame (so live tuning feels immediate).
            self.layout_data = msg.layout
            if msg.chapter is not None:
                self.current_chapter = msg.chapter
            if msg.reason == "open":
                # A file just opened: its count in the frame that draws its boundaries, not a frame later (a
                # re-cut keeps its title until then: a new title lays the whole screen out again).
                self._update_titles(r)
            hist = self.query_one(TokenHistogram)
            hist.file_counts = tuple(c.tokens for c in r.chunks)
            hist.limit = r.limit
            hist.unit = r.resolved.strategy.length_tokenizer
            if msg.reason == "open":
                self.query_one(SourceView).scroll_to(y=0, animate=False, immediate=True)
            # The rest of the cut waits for the frame that draws these boundaries (a refresh that happened to be
            # due already would not draw them: `call_after_refresh` alone let the table and detail go first). The
            # timer covers a source view that is not on screen (the docs drawer or another pane over it).
            once = _Once(self._show_cut, msg)
            self._awaiting_draw = (msg.layout, once)
            self.set_timer(SHOW_CUT_FALLBACK_SECONDS, once)
            return
        self._show_result(msg)

    def _show_cut(self, msg: "ExplorerScreen.FileChunked") -> None:
        r = msg.result
        if r.doc.path != self.current_path or r.resolved is not self.resolved or self.layout_data is not msg.layout:
            if not self._started:
                self.call_later(self._after_first_cut)
            return  # superseded while waiting for the frame
        self._show_result(msg)
        if r.error:
            if self._tree_stale:
                self._start_tree()
            if not self._started:
                self.call_later(self._after_first_cut)
        elif self._started:
            self.complete_cut(r)
        else:
            # The first cut is drawn: the rest of the start-up, then what the embedder and lint make of this cut.
            self.call_later(self._after_first_cut, partial(self._complete_if_shown, r))

    def _complete_if_shown(self, first: FileResult) -> None:
        if self.result is first:  # not a file or strategy left meanwhile (its own cut has its own completion)
            self.complete_cut(first)

    def _show_result(self, msg: "ExplorerScreen.FileChunked") -> None:
        r = msg.result
        keep = self.selected if self.result is not None and self.result.doc.path == r.doc.path else None
        self.result = r
        self.layout_data = msg.layout
        if msg.chapter is not None:
            self.current_chapter = msg.chapter
        if r.complete and self._tree_stale:
            self._start_tree()
        if r.error:
            self.notify(f"{visible(r.doc.path, oneline=True)}: {visible(r.error, oneline=True)}",
                        title="chunking failed", severity="error")
        if keep is not None and keep >= len(r.chunks):
            keep = len(r.chunks) - 1 if r.chunks else None
        self.selected = keep if keep is not None else (0 if r.chunks and msg.reason == "open" else keep)
        self._update_titles()
        if msg.reason in ("change", "reload") and self.selected is not None and self._pending_jump is None:
            # New boundaries: the selected chunk may now sit elsewhere in the file. Bring it into view, as n/p
            # and the jumps do (after the refresh, when the view holds the new layout).
            self.call_after_refresh(self._scroll_to_selected, msg.layout)
        self._apply_jump()

    def _scroll_to_selected(self, layout: SourceLayout) -> None:
        # The same cut (its completed layout may have replaced this one meanwhile: same chunks), not a newer one.
        shown = self.layout_data
        if shown is not None and shown.chunks is layout.chunks and self.selected is not None:
            self.query_one(SourceView).scroll_to_chunk(self.selected)

    @on(SourceView.Drawn, "#source")
    def _cut_drawn(self, event: SourceView.Drawn) -> None:
        """New boundaries are on screen: the table and detail follow (`on_explorer_screen_file_chunked`)."""
        waiting = self._awaiting_draw
        if waiting is not None and waiting[0] is event.layout:
            self._awaiting_draw = None
            waiting[1]()

    def _apply_jump(self) -> None:
        """Select the chunk a query hit or lint finding pointed at, once its file is shown."""
        if self._pending_jump is None or self.result is None or not (self.result.chunks or self.result.complete):
            return
        jump = self._pending_jump
        if jump.path != self.result.doc.path:
            return
        self._pending_jump = None
        index, line = jump_index(self.result.chunks, jump), jump.line
        if index is not None:
            self.selected = index
        # Scroll after the refresh: the view's scroll range follows the new file's size only then.
        self.call_after_refresh(self._scroll_to_jump, index, line)

    def _scroll_to_jump(self, index: int | None, line: int | None) -> None:
        view = self.query_one(SourceView)
        if line is not None:
            height = max(view.scrollable_content_region.height, 1)
            view.scroll_to(y=max(view.row_of_line(line - 1) - height // 3, 0), animate=False, immediate=True)
        elif index is not None:
            view.scroll_to_chunk(index)

    def _start_tree(self) -> None:
        self._tree_stale = False
        self.rechunk_tree()

    @work(thread=True, exclusive=True, group="tree", exit_on_error=False,
          name="chunking the tree", description="chunking the tree")
    def rechunk_tree(self) -> None:
        """Cut every file with the current strategy (tree counts, histogram, lint), cancelled by a newer run."""
        worker = get_current_worker()
        resolved = self.resolved
        docs = list(self.docs.documents)
        from chunkscope.chunking.cut_cache import CutCache

        result = chunk_tree(docs, resolved, self.config,
                            input_quiet_of(self.app).poll(lambda: worker.is_cancelled), tree=self.docs,
                            cache=CutCache(self.docs.root))  # every file's cut kept for the next start too
        if result is not None and not worker.is_cancelled:
            self.post_message(self.TreeChunked(result))
            if resolved.strategy.uses_contexts:
                self._say_missing_contexts()
            # Kept for the next start (and the next visit to these parameters): see `show_stored_totals`.
            from chunkscope.chunking.stats_cache import FileStats, StatsCache

            stats = {p: FileStats(tuple(c.tokens for c in e.chunks), e.error) for p, e in result.entries.items()}
            StatsCache(self.docs.root).store(resolved.strategy, docs, stats)

    def _say_missing_contexts(self) -> None:
        """embed_prefix = "llm": the app reads cached contexts only (never waits on a model); say what is missing."""
        from chunkscope.llm.contextual import take_tally

        missing, seen = take_tally()
        if missing:
            self.app.call_from_thread(
                self.notify, f"{missing} of {seen} chunks have no LLM context yet and are embedded without one: "
                f"run chunkscope contexts {self.docs.root} to write them", title="contexts missing", timeout=10)

    @work(thread=True, exclusive=True, group="tree-stored", exit_on_error=False,
          name="reading the stored totals", description="reading the stored totals")
    def show_stored_totals(self) -> None:
        """The tree's totals as stored by an earlier run, shown until this run's tree cut arrives (see
        `chunking.stats_cache`): every file must be unchanged, or the totals wait for the tree cut."""
        worker = get_current_worker()
        resolved = self.resolved
        counts = self._stored_counts(resolved)
        if counts is not None and not worker.is_cancelled:
            self.post_message(self.TreeCounted(resolved, counts))

    def _stored_counts(self, resolved: ResolvedStrategy) -> dict[str, FileStats] | None:
        """Every file's stored counts under ``resolved``, or None when any file is missing from the store (or the
        tree has none). Reads files: called in a worker."""
        docs = list(self.docs.documents)
        from chunkscope.chunking.stats_cache import StatsCache  # in a worker: the first frame does without it

        counts = StatsCache(self.docs.root).lookup(resolved.strategy, docs)
        return counts if docs and len(counts) == len(docs) else None

    def on_explorer_screen_tree_counted(self, msg: "ExplorerScreen.TreeCounted") -> None:
        if msg.resolved is not self.resolved or self.tree_result is not None:
            return  # another strategy by now, or the tree cut came first
        self.query_one(DocsTreeView).show_chunk_counts({p: (len(s.tokens), s.error is not None)
                                                        for p, s in msg.counts.items()})
        self.query_one(TokenHistogram).tree_counts = tuple(t for s in msg.counts.values() for t in s.tokens)

    def on_explorer_screen_tree_chunked(self, msg: "ExplorerScreen.TreeChunked") -> None:
        if msg.result.resolved is not self.resolved:
            return
        self.tree_result = msg.result
        errors = {p: e.lint_errors for p, e in msg.result.entries.items()}
        self.query_one(DocsTreeView).set_counts(msg.result, errors)
        self.query_one(TokenHistogram).tree_counts = tuple(msg.result.token_counts())
        if msg.result.lint_error:
            self.notify(visible(msg.result.lint_error, oneline=True), title="lint", severity="warning")

    def set_strategy(self, resolved: ResolvedStrategy, *, from_bar: bool = False) -> None:
        """Switch strategy or parameters: re-cut the open file now and the tree after.

        Args:
            resolved: the new strategy.
            from_bar: the strategy bar sent it. The bar already shows it, and is never set back: by the time
                this message is handled the typist may have moved on, and setting the bar to an older value
                would rebuild its fields under their fingers (keys lost).
        """
        self.workers.cancel_group(self, "file-complete")
        before = self.resolved
        # Before `resolved` is set: the query pane asks its question again on a strategy change, in this mode.
        mode_changed = self._adopt_preset_search(before, resolved, from_bar)
        self.resolved = resolved
        if mode_changed:
            self._search_mode_shown(resolved, asked=before.fingerprint() != resolved.fingerprint())
        bar = self.query_one(StrategyBar)
        if not from_bar and (bar.resolved is None or bar.resolved.fingerprint() != resolved.fingerprint()
                             or bar.resolved.label != resolved.label):
            bar.resolved = resolved
        # The tree keeps its old counts until the new ones arrive (relabelling 100 files twice costs a redraw of
        # the whole screen); the histogram says the tree is being counted.
        self.tree_result = None
        self.query_one(TokenHistogram).tree_counts = None
        self.workers.cancel_group(self, "tree")
        self._tree_stale = True
        self.rechunk_file("change")
        self.show_stored_totals()

    def _adopt_preset_search(self, old: ResolvedStrategy, new: ResolvedStrategy, from_bar: bool) -> bool:
        """A preset naming its search mode (what tune chose) was chosen: the session searches in it. True when the
        mode changed. A strategy or preset naming none keeps the user's mode; so does a parameter edited in the
        strategy bar on the same preset (the user may have left its mode with ctrl+s: not a new choice)."""
        mode = new.search
        if mode is None or mode == self.search.search_mode:
            return False
        if from_bar and old.label.split("(", 1)[0] == new.label.split("(", 1)[0]:
            return False
        self.search.search_mode = mode
        return True

    def _search_mode_shown(self, resolved: ResolvedStrategy, *, asked: bool) -> None:
        """Say that the preset changed the search mode: a notice (the user pressed no ctrl+s), and the query pane's
        row and results as ctrl+s leaves them. ``asked``: the strategy change already asks the question again."""
        mode = self.search.search_mode
        self.notify(f"{visible(resolved.label, oneline=True)} names {mode} search: questions are matched that way "
                    f"now (ctrl+s in the query pane changes it)", title=f"search: {mode}")
        if self.query("#query-pane"):
            self._query_pane().search_mode_changed(ask_again=not asked)

    # --- events from the widgets -------------------------------------------------------------------------------

    @on(StrategyBar.Changed, "#strategy-bar")
    def _strategy_changed(self, event: StrategyBar.Changed) -> None:
        self.set_strategy(event.resolved, from_bar=True)

    @on(DocsTreeView.FileChosen)
    def _file_chosen(self, event: DocsTreeView.FileChosen) -> None:
        if event.path != self.current_path:
            self.open_file(event.path, from_tree=True)
        if event.picked and self.tree_is_drawer:
            self.query_one(SourceView).focus()  # a file picked in the drawer: close it onto the source

    def on_chunk_table_chunk_highlighted(self, event: "ChunkTable.ChunkHighlighted") -> None:
        """A row of the chunk table was highlighted (by keys or the mouse): select that chunk."""
        if self.selected == event.index:
            return  # the cursor following a selection made elsewhere: leave the source where it is
        self.selected = event.index
        self.query_one(SourceView).scroll_to_chunk(event.index)

    @on(SourceView.ChunkClicked, "#source")
    def _chunk_clicked(self, event: SourceView.ChunkClicked) -> None:
        self.selected = event.index

    def on_query_pane_jump_to(self, event) -> None:  # QueryPane.JumpTo (the pane's module loads on first use)
        hit = event.hit
        # The chunk the result is, by its index (checked against its span), never the first chunk holding its start.
        self.open_file(hit.path, jump=Jump(hit.path, hit.start, None, getattr(hit, "chunk_index", None), hit.end))

    def on_query_pane_indexing_changed(self, event) -> None:  # QueryPane.IndexingChanged
        """Indexing runs on when the pane is closed or left: the footer says so until it ends."""
        self.query_one(KeyBar).status = event.text or ""

    def on_query_pane_expectation_dropped(self, event) -> None:  # QueryPane.ExpectationDropped
        """Another question was asked: the expected chunk belonged to the one before."""
        if self.expected == event.expected:
            self.expected = None

    def on_lint_pane_jump_to(self, event) -> None:  # LintPane.JumpTo
        self.show_finding(event.finding)

    def show_finding(self, f: Any) -> None:
        """Open a lint finding's file with its chunk selected and its line in view (the lint pane, the files view)."""
        doc = self.docs.get(f.path)
        if doc is None:
            return
        line = max(1, min(f.line, len(doc.structure.line_starts)))
        self.open_file(f.path, jump=Jump(f.path, doc.structure.line_start(line), line, f.chunk_index))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The screen's workers: a failure becomes the app's notification (the views keep what they had)."""
        if event.state == WorkerState.ERROR:
            self.post_message(WorkerFailed(event.worker))
            if event.worker.group == "file" and not self._started:
                self.call_later(self._after_first_cut)
            if event.worker.group == "file" and self.layout_data is None:
                self.query_one(SourceView).notice = "This file could not be shown (see the notification)."

    def _check_slow_cut(self) -> None:
        """Say so once when cutting the open file takes long (a strategy stuck on one document)."""
        busy = [w for w in self.workers if w.group == "file" and w.is_running and not w.is_cancelled]
        if not busy:
            self._cut_since = None
            return
        now = time.monotonic()
        if self._cut_since is None or self._cut_since[0] is not busy[0]:
            self._cut_since = (busy[0], now, False)
            return
        worker, since, told = self._cut_since
        if not told and now - since > SLOW_CUT_SECONDS:
            self._cut_since = (worker, since, True)
            self.notify(f"Cutting {visible(self.current_path or '', oneline=True)} with {self.resolved.label} has taken "
                        f"{now - since:.0f}s; the rest of the app still works. Try another file or strategy.",
                        title="slow strategy", severity="warning", timeout=10)

    # --- files changing on disk --------------------------------------------------------------------------------

    def poll_files(self) -> None:
        """Each second: look for files edited, added, deleted or moved under the root (see `watcher` for why a
        poll); flag a slow cut. The scan runs in a worker, one at a time."""
        self._check_slow_cut()
        if not self._scanning:
            self._scanning = True
            self.scan_files()

    @work(thread=True, exit_on_error=False, group="watch",
          name="watching the docs folder", description="watching the docs folder")
    def scan_files(self) -> None:
        """Stat the tree; when it differs from the last accepted scan, let it settle, read what changed, post it."""
        worker = get_current_worker()
        posted = False
        try:
            scan_once = tree_scanner(self.docs, self.config.ignore)
            if self._stamps is None or scan_once is None:
                return
            now = scan_once()
            if now == self._stamps:  # what diff() would call no change, without building it every second
                return
            now = settled_scan(scan_once, now, cancelled=lambda: worker.is_cancelled)
            change = diff(self._stamps, now)
            if not change or worker.is_cancelled:
                return
            fc = read_files_change(self.docs, change, now, self.config.max_file_bytes, self.config.ignore)
            self.post_message(self.FilesChanged(fc))
            posted = True
        finally:
            if not posted:
                self._scanning = False  # else the handler clears it, once the tree holds the change

    def on_explorer_screen_files_changed(self, msg: "ExplorerScreen.FilesChanged") -> None:
        """Apply a change of the files: the tree, its counts and lint, the open file (followed when moved, a
        neighbour when deleted), and a notification of what came and went."""
        fc, change = msg.change, msg.change.change
        self._stamps = fc.snapshot
        self._scanning = False
        before = [d.path for d in self.docs.documents]
        problems_before = [(p.path, p.code) for p in self.docs.problems]
        apply_files_change(self.docs, fc)
        paths = [d.path for d in self.docs.documents]
        for rel, (doc, problems) in fc.read.items():
            for p in problems:
                self.notify(visible(str(p), oneline=True), title="file problem",
                            severity="warning" if doc is not None else "error")
        self.search.invalidate()
        self.workers.cancel_group(self, "tree")
        self._tree_stale = True
        if paths != before or [(p.path, p.code) for p in self.docs.problems] != problems_before:
            self.query_one(DocsTreeView).rebuild()
        if change.structural:
            self.notify(visible(describe_change(change), oneline=True), title="docs folder")
        current = self.current_path
        renamed = dict(change.renamed)
        if current is not None and current in renamed and renamed[current] in paths:
            # Moved (same inode, size and time): follow it, with the same chunk selected.
            new, r, i = renamed[current], self.result, self.selected
            jump = None
            if r is not None and i is not None and 0 <= i < len(r.chunks):
                jump = Jump(new, r.chunks[i].start, None, i)
            self.open_file(new, jump=jump)
        elif current is not None and current not in paths:
            self._leave_missing_file(current, before, paths, fc)
        elif current is not None and current in fc.read:
            self.rechunk_file("reload")
        else:
            self._start_tree()

    def _leave_missing_file(self, gone: str, before: list[str], paths: list[str], fc: "FilesChange") -> None:
        """The open file was deleted (or can no longer be read): say so and open its neighbour in the tree."""
        kept = set(paths)
        at = before.index(gone) if gone in before else len(before)
        after = [p for p in before[at + 1:] if p in kept]
        ahead = [p for p in reversed(before[:at]) if p in kept]
        neighbour = next(iter(after or ahead or paths), None)
        why = "can no longer be read" if gone in fc.read else "was deleted"
        shown = f"; showing {visible(neighbour, oneline=True)}" if neighbour else ""
        self.notify(f"{visible(gone, oneline=True)} {why}{shown}", title="open file", severity="warning")
        if neighbour is not None:
            self.open_file(neighbour)
            return
        self.current_path = None
        self.result, self.selected, self.layout_data = None, None, None
        self.query_one(SourceView).notice = "No Markdown files here."
        self._update_titles()
        self._start_tree()

    # --- actions -----------------------------------------------------------------------------------------------

    def _bind(self, child: Any, **names: str) -> None:
        """``data_bind`` for a pane mounted later from an action (data_bind only works inside compose)."""
        for child_name, mine in names.items():
            child.set_reactive(getattr(type(child), child_name), getattr(self, mine))
            self.watch(self, mine, partial(setattr, child, child_name), init=False)

    async def _show_pane(self, pane_id: str) -> bool:
        """Open the bottom pane on ``pane_id`` (mounting it on first use); False when the app is closing."""
        self._set_pane_open(True)
        switcher = self.query_one("#panes", ContentSwitcher)
        if not switcher.is_attached:
            return False  # the app is closing (a key typed after q): nothing to mount into
        if not switcher.query(f"#{pane_id}"):
            # The panes' modules load on first use too.
            from chunkscope.tui.widgets.lint_pane import LintPane
            from chunkscope.tui.widgets.query_pane import QueryPane
            from chunkscope.tui.widgets.size_pane import SizePane

            pane: QueryPane | LintPane | SizePane
            if pane_id == "query-pane":
                pane = QueryPane(self.search, id="query-pane")
                self._bind(pane, resolved="resolved", current_path="current_path",
                           current_chapter="current_chapter", expected="expected")
            elif pane_id == "size-pane":
                pane = SizePane(id="size-pane")
                self._bind(pane, tree_result="tree_result", result="result")
            else:
                pane = LintPane(self.search, id="lint-pane")
                self._bind(pane, result="tree_result")
            await switcher.mount(pane)
        switcher.current = pane_id
        return True

    async def action_query(self) -> None:
        focused = self.focused
        if isinstance(focused, Input) and (focused.id == "query-input" or focused.type == "text"
                                           and focused.id != "threshold-input"):
            raise SkipAction()  # the question itself, or a text field that may hold "/": the key types it
        if await self._show_pane("query-pane"):
            self.call_after_refresh(self._query_pane().focus_input)

    async def action_lint(self) -> None:
        if self._pane_shown("lint-pane"):
            self.action_close_pane()
        elif await self._show_pane("lint-pane"):
            from chunkscope.tui.widgets.lint_pane import LintPane

            self.call_after_refresh(self.query_one("#lint-pane", LintPane).focus_list)

    async def action_sizes(self) -> None:
        """Key h: the chunk sizes with their axis (as ``chunkscope stats`` draws them); h again closes them."""
        if self._pane_shown("size-pane"):
            self.action_close_pane()
        elif await self._show_pane("size-pane"):
            self.call_after_refresh(self.query_one("#size-pane").focus)

    @property
    def pane_open(self) -> bool:
        """Whether the bottom pane (query, lint or sizes) is shown."""
        return self.query_one("#bottom").display

    def _set_pane_open(self, opened: bool) -> None:
        """Show or hide the bottom pane by its ``display`` alone: a class change on it would restyle the pane and
        every widget in it (the lint pane's ~40): with the focus moved at once (`action_close_pane`), Escape's CPU time
        up to the frame that shows it went from 86-102 to 75-82 ms (medians, in process, 120x40, Rust book, a busy
        machine; bench/bench_tui.py "Escape" times it from outside)."""
        self.query_one("#bottom").display = opened
        self._mark_pane_open(opened)

    def _mark_pane_open(self, opened: bool) -> None:
        """The screen's ``-pane-open`` class, which only the short layout reads (it makes room for the pane there,
        explorer.tcss), so it is set only there: a class change on the screen restyles every widget in it (about 90
        with the lint pane open), a fifth of the CPU time Escape took at 120x40 on the Rust book (250 -> 200 ms
        in process under load; bench/bench_tui.py, "Escape", from outside)."""
        wanted = opened and self.has_class("-short")
        if wanted != self.has_class("-pane-open"):
            self.set_class(wanted, "-pane-open")

    def on_resize(self, event: events.Resize) -> None:
        # After Textual's own handler has set the height class: the short layout follows an open pane.
        self._mark_pane_open(self.pane_open)

    def _pane_shown(self, pane_id: str) -> bool:
        return self.pane_open and \
            self.query_one("#panes", ContentSwitcher).current == pane_id

    def _query_pane(self) -> QueryPane:
        from chunkscope.tui.widgets.query_pane import QueryPane  # loaded with the pane, on first use

        return self.query_one("#query-pane", QueryPane)

    def action_close_pane(self) -> None:
        """Escape: leave a text field for the source view (keys work again; an open pane stays open, its work
        goes on); from anywhere else in a pane, or from the source, close the pane."""
        bottom = self.query_one("#bottom")
        focused = self.focused
        view = self.query_one(SourceView)
        if isinstance(focused, Input):
            view.focus()
            return
        in_pane = focused is not None and bottom in focused.ancestors_with_self
        if self.pane_open and (in_pane or focused is view):
            self._set_pane_open(False)
        # Focus now, not after the queue (``view.focus()``), and the key bar told now, not after the next frame
        # (set_focus's own notice): the pane's keys leave the bar in the frame that closes the pane.
        self.set_focus(view)
        self.refresh_bindings()

    @on(events.Mount)
    def _initial_wrap(self) -> None:
        """Wrap the source's long lines unless the config says ``[tui] wrap = false``."""
        self.query_one(SourceView).wrap = bool(self.config.tui.get("wrap", True))

    def action_toggle_wrap(self) -> None:
        """Soft wrap on or off; the view keeps the same text at its top."""
        view = self.query_one(SourceView)
        view.wrap = not view.wrap

    def action_next_chunk(self) -> None:
        self._step_chunk(1)

    def action_prev_chunk(self) -> None:
        self._step_chunk(-1)

    def _step_chunk(self, step: int) -> None:
        r = self.result
        if r is None or not r.chunks:
            return
        i = 0 if self.selected is None else min(max(self.selected + step, 0), len(r.chunks) - 1)
        self.selected = i
        self.query_one(SourceView).scroll_to_chunk(i)

    def action_next_file(self) -> None:
        self._step_file(1)

    def action_prev_file(self) -> None:
        self._step_file(-1)

    def _step_file(self, step: int) -> None:
        paths = [d.path for d in self.docs.documents]
        if not paths:
            return
        i = paths.index(self.current_path) if self.current_path in paths else -1
        self.open_file(paths[min(max(i + step, 0), len(paths) - 1)])

    def action_focus_strategy(self) -> None:
        self.query_one(StrategyBar).focus_picker()  # mounted after the first cut: focused as soon as it is

    async def action_focus(self, widget_id: str) -> None:
        self.query_one(f"#{widget_id}").focus()

    async def action_expect(self) -> None:
        r, i = self.result, self.selected
        if r is None or i is None or not (0 <= i < len(r.chunks)):
            self.notify("Select a chunk first (click it in the source or pick a row).", severity="warning")
            return
        c = r.chunks[i]
        old = self.expected
        if old is not None and (old.path, old.start, old.end) == (c.path, c.start, c.end):
            self.expected = None  # e on the expected chunk again: no chunk is expected any more
            self.notify(f"No chunk expected any more (#{c.index} of {visible(c.path, oneline=True)} was).")
            return
        self.expected = Expected(c.path, c.start, c.end, c.index, c.start_line, r.resolved.label)
        if not await self._show_pane("query-pane"):
            return
        pane = self._query_pane()
        question = pane.query_one("#query-input", Input).value
        if question.strip():
            pane.ask(question)
        else:
            self.call_after_refresh(pane.focus_input)
        self.notify(f"Expecting chunk #{c.index} of {visible(c.path, oneline=True)} for the question.")

    def action_compare(self, other: str | None = None) -> None:
        from chunkscope.tui.screens.compare import CompareMemory, CompareScreen

        if self.current_path is None:
            self.notify("Open a file first.", severity="warning")
            return
        if self._compare_memory is None:
            self._compare_memory = CompareMemory()
        self.app.push_screen(CompareScreen(self.docs, self.config, self.current_path, self.resolved, other,
                                           memory=self._compare_memory, tree_run=lambda: self.tree_result))

    def open_page(self, path: str) -> None:
        """``open: <path>`` from the palette or ctrl+g: back to this screen, the page open, the source focused."""
        while self.app.screen is not self and len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        self.open_file(path)
        self.query_one(SourceView).focus()

    def action_files(self) -> None:
        """Key ``F``: the files view; the row picked there opens at its first finding, in the source view."""
        from chunkscope.tui.screens.files import FilesScreen

        def picked(row: Any) -> None:
            self._files_view = None
            if row is None:
                return
            if row.first_finding is not None:
                self.show_finding(row.first_finding)
            else:
                self.open_file(row.path)
            self.query_one(SourceView).focus()

        self._files_view = FilesScreen(self.docs, self.config, self.tree_result)
        self.app.push_screen(self._files_view, picked)

    def watch_tree_result(self, tree: TreeResult | None) -> None:
        """The files view, while open, sums up each new tree run (None: one is on its way)."""
        view = self._files_view
        if view is not None and view.is_attached:
            view.tree_run = tree

    def action_evaluate(self) -> None:
        from chunkscope.tui.screens.evaluation import EvaluationScreen

        self.app.push_screen(EvaluationScreen(self.docs, self.config, self.resolved, self.search,
                                              queries=self._queries, queries_name=self._pair_queries),
                             self.show_missed)

    def action_evaluate_pair(self) -> None:
        """Key V: pick two configurations, then the evaluation view probes exactly those two."""
        from chunkscope.tui.screens.evaluation import EvaluationScreen
        from chunkscope.tui.screens.pick_pair import PickPairScreen

        def picked(pair: Any) -> None:
            if pair is not None:
                self._pair_queries, self._queries = pair.queries_name, pair.queries  # kept for the next visit
                self.app.push_screen(EvaluationScreen(self.docs, self.config, self.resolved, self.search,
                                                      configurations=pair.configurations, queries=pair.queries,
                                                      queries_name=pair.queries_name), self.show_missed)

        self.app.push_screen(PickPairScreen(self.config, self.resolved, self.search.search_mode, self._pair_queries),
                             picked)

    def show_missed(self, missed: Any) -> None:
        """Enter on a section the probe missed (the evaluation view): the section in the source, cut by the
        strategy that missed it, the chunk the miss was judged on selected and expected for its question."""
        from chunkscope.tui.screens.evaluation import judged_expectation

        doc = self.docs.get(missed.path) if missed is not None else None
        if doc is None:
            return
        r = missed.resolved
        if r.fingerprint() != self.resolved.fingerprint() or r.label != self.resolved.label:
            self.set_strategy(r)
        self.expected = judged_expectation(missed, doc)
        # The judged chunk by its span (its index when still the same cut); with none, the section's heading line.
        start, end = missed.chunk or (missed.start, None)
        index = self.expected.index if self.expected is not None else None
        self.open_file(missed.path, jump=Jump(missed.path, start, None if missed.chunk else missed.line, index, end))
        self.query_one(SourceView).focus()
        said = "its chunk is selected and expected for that question (/ asks it)" if self.expected else \
            "its section is shown (no chunk of it was judged)"
        self.notify(f"{visible(r.label, oneline=True)} missed “{visible(missed.heading, oneline=True)}” "
                    f"({visible(missed.reason, oneline=True)}): {said}.", title="probe miss", markup=False)

    async def rebuild_index(self) -> None:
        if await self._show_pane("query-pane"):
            self._query_pane().rebuild_index()

    @work(thread=True, exclusive=True, group="export", exit_on_error=False, name="export", description="export")
    def export_chunks(self) -> None:
        """Write every chunk of the tree (current strategy) as JSONL into the working directory."""
        resolved = self.resolved
        result = self.tree_result
        if result is None or result.resolved is not resolved:
            result = chunk_tree(list(self.docs.documents), resolved, self.config)
        assert result is not None
        path, n = export_jsonl(result, list(self.docs.documents), self.config, Path.cwd())
        self.app.call_from_thread(self.notify, f"{n} chunks written to {visible(str(path), oneline=True)}",
                                  title="export")

    def on_unmount(self) -> None:
        self.close_session()

    def close_session(self) -> None:
        """The app is closing: close the query session's store and caches (`run_app` calls this itself, once the
        terminal is restored, and ends the process before the screen is unmounted)."""
        # Never wait for the session's lock here, on the UI thread: a probe or an index build holds it until its
        # batch ends (a quit after `v` took 6 s). Free, the store and the caches close now; held, that worker was
        # cancelled with the app, and the process ends without it (a store survives that:
        # tests/test_store_interrupted.py).
        if self.search.lock.acquire(blocking=False):
            try:
                self.search.close()
            finally:
                self.search.lock.release()
