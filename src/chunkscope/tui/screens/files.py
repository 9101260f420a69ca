"""The files view: one row per file with its chunks, over-limit chunks, lint errors and warnings and the share of
its text the embedder never reads, worst first; Enter opens the file at its first finding.

The figures are the core's (`chunkscope.tui.headless.file_report` over a tree run: its chunks and lint report),
computed in a thread worker; this module only lays them out and sorts them. The screen is given the tree, the
config and the tree run (`tree_run` is set again when a newer run lands); a failure is posted, never reported by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState, get_current_worker

from chunkscope.chunking.model import ChunkedDoc
from chunkscope.config.reader import Config
from chunkscope.document.loader import DocsTree
from chunkscope.tui.headless.file_report import FileSummary, file_summaries, sort_files, tree_totals
from chunkscope.safe_text import visible
from chunkscope.tui.failures import WorkerFailed
from chunkscope.tui.widgets.key_bar import KeyBar
from chunkscope.wording import plural

if TYPE_CHECKING:
    from chunkscope.tui.headless.session import TreeResult

#: The sorts `s` steps through, in order, with the column each one marks and how the title says it.
SORT_CYCLE: tuple[tuple[str, str, str], ...] = (
    ("worst", "errors", "worst first: errors, then warnings, over limit, unread"),
    ("warnings", "warnings", "most warnings first"),
    ("over limit", "over", "most chunks over the limit first"),
    ("unread", "unread", "most text never embedded first"),
    ("chunks", "chunks", "most chunks first"),
    ("path", "file", "by path"),
)
#: Column key → the sort a click on its header picks.
SORT_OF_COLUMN = {column: sort for sort, column, _ in SORT_CYCLE}
#: Terminal width from which the headers are spelled out.
WIDE_HEADERS_FROM = 120


def left_cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, cut from the left with an ellipsis (a path's end names the file)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    out = text
    while out and cell_len(out) > width - 1:
        out = out[1:]
    return "…" + out


def _count(n: int, style: str) -> Text:
    """A right-aligned count, coloured when it is not zero (zero dimmed, never left blank)."""
    return Text(str(n), style=style if n else "dim", justify="right")


class FilesTable(DataTable):
    """The files view's table: Enter opens the file under the cursor (said in the key bar)."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Open at first finding", id="files.open",
                tooltip="close this view and show the file in the explorer at its first finding (errors first)"),
    ]


class FilesScreen(Screen["FileSummary | None"]):
    """Every file of the tree as a row of figures, worst first; dismissed with the row picked (None: back)."""

    DEFAULT_CSS = """
    FilesScreen #files-top { height: auto; background: $panel; padding: 0 1; }
    FilesScreen #files-summary { height: auto; }
    FilesScreen #files-table { height: 1fr; border: round $primary 40%; scrollbar-gutter: stable;
                               scrollbar-size-vertical: 1; }
    FilesScreen #files-table:focus { border: heavy $accent; }
    """

    BINDINGS = [
        Binding("escape,F", "close", "Back", id="files.back", tooltip="back to the explorer"),
        Binding("s", "next_sort", "Sort", id="files.sort",
                tooltip="sort by the next column (errors, warnings, over limit, unread, chunks, path), worst first; "
                        "a click on a column's header sorts by it"),
        Binding("r", "reverse", "Reverse", id="files.reverse", tooltip="best first instead of worst first"),
    ]

    class Summarised(Message):
        """The worker's rows for one tree run; ``linted``: the run has a lint report (else errors and warnings are
        unknown, and ``note`` says why)."""

        def __init__(self, tree: "TreeResult", rows: list[FileSummary], linted: bool, note: str | None) -> None:
            super().__init__()
            self.tree = tree
            self.rows = rows
            self.linted = linted
            self.note = note

    tree_run: var["TreeResult | None"] = var(None, always_update=True)
    """The tree run summed up (None while a new one is being made); whoever opened the view sets a newer one."""

    def __init__(self, docs: DocsTree, config: Config, tree: "TreeResult | None") -> None:
        super().__init__()
        self._docs = docs
        self._config = config
        self.set_reactive(FilesScreen.tree_run, tree)
        #: The rows of the last tree run, in reading order (None until the worker answers).
        self.rows: list[FileSummary] | None = None
        self.sort = "worst"
        self.reverse = False
        #: Rows in the order shown (the table's row i is ``shown[i]``).
        self.shown: list[FileSummary] = []
        self._note: str | None = None
        self._linted = True
        self._width = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="files-top"):
            yield Static(id="files-summary")
        yield FilesTable(id="files-table", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#files-table", FilesTable).focus()
        self._sum_up(self.tree_run)

    # --- the figures -------------------------------------------------------------------------------------------

    def watch_tree_run(self, tree: "TreeResult | None") -> None:
        if self.is_mounted:  # before that, `on_mount` sums up the run the screen holds
            self._sum_up(tree)

    def _sum_up(self, tree: "TreeResult | None") -> None:
        """A new tree run (an edited file, a new strategy): sum it up again; None: a run is on its way."""
        if tree is None:
            self._summary()
            return
        # The documents in reading order, taken here: the watcher changes the tree's list on this thread.
        docs = [d for d in self._docs.documents if d.path in tree.entries]
        self.summarise(tree, [ChunkedDoc(d, tree.entries[d.path].chunks, tree.entries[d.path].error) for d in docs])

    @work(thread=True, exclusive=True, group="files", exit_on_error=False,
          name="summing up the files", description="summing up the files")
    def summarise(self, tree: "TreeResult", results: list[ChunkedDoc]) -> None:
        """The core's per-file figures for one tree run (its chunks and lint report: nothing is cut again)."""
        from chunkscope.tokens import TokenizerError

        worker = get_current_worker()
        report = tree.lint if not tree.lint_error else None
        findings = report.findings if report is not None else ()
        limit = tree.resolved.strategy.limits().max
        note = None if report is not None else (f"lint could not run: {tree.lint_error}" if tree.lint_error
                                                else "lint is not available in this build")
        stop = lambda: worker.is_cancelled  # noqa: E731
        try:
            rows = file_summaries(results, limit, findings, self._config.embedder_spec(), should_stop=stop)
        except TokenizerError as exc:  # no word-piece tokenizer: every other figure still holds
            note = f"the unread share is unknown: {exc}"
            rows = file_summaries(results, limit, findings, None, should_stop=stop)
        if rows is not None and not worker.is_cancelled:
            self.post_message(self.Summarised(tree, rows, report is not None, note))

    def on_files_screen_summarised(self, msg: "FilesScreen.Summarised") -> None:
        if msg.tree is not self.tree_run:
            return  # a newer tree run is being summed up
        self.rows, self._linted, self._note = msg.rows, msg.linted, msg.note
        self._fill(keep_cursor=True)

    # --- showing -----------------------------------------------------------------------------------------------

    def _summary(self) -> None:
        box = self.query_one("#files-summary", Static)
        tree, rows = self.tree_run, self.rows
        if tree is None or rows is None:
            box.update(Text("Counting the tree's chunks and findings…", style="dim italic"))
            return
        t = tree_totals(rows)
        limit = tree.resolved.strategy.limits()
        # Two lines, each whole at 80 columns: the findings, then the sizes.
        text = Text.assemble((plural(t.files, "file"), "bold"), " · ")
        text.append(f"{plural(t.errors, 'error')} in {plural(t.files_with_errors, 'file')}",
                    style="bold #ff5f5f" if t.errors or t.failed else "bold #7ee787")
        text.append(" · ")
        text.append(plural(t.warnings, "warning"), style="bold #e5c07b" if t.warnings else "")
        if t.failed:
            text.append(f" · {t.failed} not chunked", style="red")
        text.append(f"  ({visible(tree.resolved.label, oneline=True)})\n", style="dim")
        text.append(plural(t.chunks, "chunk"))
        if limit.max is not None:
            text.append(f", {t.over_limit} over {limit.max} {limit.tokenizer}")
        if t.unread_share is not None:
            text.append(f" · {t.unread_share:.0%} of the text never embedded")
        if self._note:
            text.append(f"\n{visible(self._note, oneline=True)}", style="#e5c07b")
        box.update(text)

    def _columns(self, width: int, marked: str, arrow: str) -> list[tuple[str, Text, int]]:
        """(key, header, width) of each column, the sorted one's header with ``arrow``; the file column takes what
        the numbers leave, up to the longest path (on a wide terminal the numbers stay beside the names)."""
        wide = self.app.size.width >= WIDE_HEADERS_FROM
        numbers = [("chunks", "chunks"), ("over", "over limit" if wide else "over"), ("errors", "errors"),
                   ("warnings", "warnings"), ("unread", "unread")]
        columns = [(key, header + (arrow if key == marked else "")) for key, header in [("file", "file"), *numbers]]
        # Each column is padded by one cell on either side; the scrollbar keeps its column (gutter: stable).
        used = sum(cell_len(h) for k, h in columns if k != "file") + 2 * len(columns)
        longest = max((cell_len(visible(r.path, oneline=True)) for r in self.rows or ()), default=0)
        file_width = max(min(width - used, longest), 12)
        return [(key, Text(header, style="bold", justify="left" if key == "file" else "right"),
                 file_width if key == "file" else cell_len(header)) for key, header in columns]

    def _fill(self, keep_cursor: bool) -> None:
        """(Re)build the table from the rows, the sort and the width; the cursor stays on its file or goes to the
        top (the worst file under the new sort)."""
        self._summary()
        table = self.query_one("#files-table", FilesTable)
        at = table.cursor_row if keep_cursor and self.shown and 0 <= table.cursor_row < len(self.shown) else None
        keep = self.shown[at].path if at is not None else None
        width = table.scrollable_content_region.width or self.app.size.width - 3
        self._width = width
        table.clear(columns=True)
        marked = next(col for sort, col, _ in SORT_CYCLE if sort == self.sort)
        arrow = "▲" if self.reverse else "▼"
        file_width = 0
        for key, header, w in self._columns(width, marked, arrow):
            table.add_column(header, width=w, key=key)
            if key == "file":
                file_width = w
        rows = self.rows or []
        self.shown = sort_files(rows, self.sort, reverse=self.reverse)
        title = next(words for sort, _, words in SORT_CYCLE if sort == self.sort)
        table.border_title = f"files · {'best first' if self.reverse else title}"
        for s in self.shown:
            table.add_row(*self._cells(s, file_width), key=s.path)
        if not rows and self.rows is not None:
            table.border_subtitle = "no Markdown files here"
        else:
            table.border_subtitle = "Enter: open at the first finding"
        target = next((i for i, s in enumerate(self.shown) if s.path == keep), 0) if keep is not None else 0
        if self.shown:
            table.move_cursor(row=target, animate=False, scroll=True)

    def _cells(self, s: FileSummary, file_width: int) -> list[Any]:
        lint = self._linted
        path = Text(left_cut(visible(s.path, oneline=True), file_width), no_wrap=True)
        if s.blocking:
            path.stylize("bold")
        chunks = (Text("✖", style="bold red", justify="right") if s.failed
                  else Text(str(s.chunks), justify="right"))
        errors = _count(s.blocking, "bold #ff5f5f") if lint else Text("—", style="dim", justify="right")
        warnings = _count(s.warnings, "#e5c07b") if lint else Text("—", style="dim", justify="right")
        if s.unread_chars is None or s.failed:
            unread = Text("—", style="dim", justify="right")
        else:
            share = s.unread_share
            shown = f"{share:.0%}" if share == 0 or share >= 0.005 else "<1%"
            unread = Text(shown, style=("#ff5f5f" if share >= 0.5 else "#e5c07b") if share else "dim",
                          justify="right")
        return [path, chunks, _count(s.over_limit, "#ff5f5f"), errors, warnings, unread]

    def on_resize(self) -> None:
        # After the refresh: the table's new width is known only once the screen is laid out again.
        self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        """Lay the rows out again when the table's width changed (the file column takes what is left)."""
        table = self.query_one("#files-table", FilesTable)
        if self.rows is not None and table.scrollable_content_region.width != self._width:
            self._fill(keep_cursor=True)

    # --- keys --------------------------------------------------------------------------------------------------

    def action_next_sort(self) -> None:
        """Key ``s``: sort by the next column, worst first."""
        names = [sort for sort, _, _ in SORT_CYCLE]
        self.set_sort(names[(names.index(self.sort) + 1) % len(names)])

    def action_reverse(self) -> None:
        """Key ``r``: best first instead of worst first, and back."""
        self.reverse = not self.reverse
        self._fill(keep_cursor=False)

    def set_sort(self, sort: str, reverse: bool = False) -> None:
        """Sort the rows by one of `SORT_CYCLE`'s sorts; the cursor goes to the top row (the worst by it)."""
        self.sort, self.reverse = sort, reverse
        self._fill(keep_cursor=False)

    @on(DataTable.HeaderSelected, "#files-table")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        sort = SORT_OF_COLUMN.get(str(event.column_key.value))
        if sort is not None:
            # A second click on the sorted column turns the order round, as in a file manager.
            self.set_sort(sort, reverse=not self.reverse if sort == self.sort else False)

    @on(DataTable.RowSelected, "#files-table")
    def _row_chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.shown):
            self.dismiss(self.shown[event.cursor_row])

    def action_close(self) -> None:
        self.workers.cancel_group(self, "files")
        self.dismiss(None)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """A failure of the summing up becomes the app's notification (its one place for them)."""
        if event.state == WorkerState.ERROR:
            self.post_message(WorkerFailed(event.worker))
