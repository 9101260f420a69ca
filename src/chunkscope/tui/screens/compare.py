"""Compare mode: one file cut by two strategies (or two parameter sets) side by side, scrolled together; ] and [ go
to the next and previous file, and a header line sums up both strategies over the whole tree."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from chunkscope.safe_text import visible
from chunkscope.chunking.registry import strategy_names
from chunkscope.chunking.compare import FileDiff, diff_chunks
from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.document.loader import DocsTree
from chunkscope.tui.highlight import line_colours
from chunkscope.tui.layout import SourceLayout
from chunkscope.tui.headless.session import FileResult, TreeResult, chunk_file, resolve
from chunkscope.tui.headless.tree_totals import TreeTotals, totals_of, tree_totals
from chunkscope.tui.widgets.key_bar import KeyBar
from chunkscope.tui.widgets.source_view import SourceView
from chunkscope.tui.widgets.strategy_bar import StrategyBar
from chunkscope.wording import plural

#: Columns of source text each side must keep to be read side by side: the explorer's own floor (a sentence).
MIN_SIDE_TEXT = 30
#: Columns each side spends on other things: its border (2), its scroll bar (2) and the gutter of a file of up to
#: 9,999 lines (`SourceLayout.gutter_width`: 4 digits + 14).
SIDE_CHROME = 2 + 2 + 18
#: From this width the two sides are shown side by side (104 columns: 30 columns of text each); narrower, one side
#: at a time. At 80 columns two sides keep about 20 columns of text each, too few to read a line.
SIDE_BY_SIDE_FROM = 2 * (MIN_SIDE_TEXT + SIDE_CHROME)


@dataclass
class CompareMemory:
    """What compare mode keeps between visits in one session: side B's strategy and parameters."""

    b: ResolvedStrategy | None = None


def default_other(config: Config, current: ResolvedStrategy, other: str | None) -> ResolvedStrategy:
    """The right-hand strategy: the one asked for, else the next usable strategy after the current one."""
    if other:
        return resolve(config, other)
    names = [n for n in strategy_names() if n != "custom"]
    if current.name in names and len(names) > 1:
        nxt = names[(names.index(current.name) + 1) % len(names)]
    else:
        nxt = next((n for n in names if n != current.name), current.name)
    return resolve(config, nxt)


class CompareScreen(Screen):
    """Two chunkings of one file; both sources share line numbers, so their boundaries line up.

    Below `SIDE_BY_SIDE_FROM` columns one side is shown at a time (its strategy bar and its source); ``s``
    switches to the other at the same line, and a line under the bars says which side is shown.
    """

    CSS_PATH = "compare.tcss"

    BINDINGS = [
        Binding("escape,c", "back", "Back", id="compare.back",
                tooltip="back to the explorer (from a strategy bar, Escape leaves the bar for the source)"),
        Binding("n", "next_difference", "Next diff", id="compare.next-diff",
                tooltip="scroll to the next boundary only one side has"),
        Binding("p", "prev_difference", "Prev", id="compare.prev-diff",
                tooltip="scroll to the previous boundary only one side has"),
        # a is in the help, not the footer: at 80 columns the footer keeps room for b and s.
        Binding("a", "edit_side('a')", "Edit A", id="compare.edit-a", show=False,
                tooltip="focus side A's strategy picker (Tab goes on to its parameters)"),
        Binding("b", "edit_side('b')", "Edit B", id="compare.edit-b",
                tooltip="focus side B's strategy picker (Tab goes on to its parameters)"),
        Binding("s", "switch_side", "Other side", id="compare.switch-side",
                tooltip="on a narrow terminal, show the other side at the same line"),
        Binding("x", "swap", "Swap", id="compare.swap", tooltip="swap the two strategies"),
        Binding("right_square_bracket", "step_file(1)", "Next file", id="compare.next-file", show=False,
                tooltip="compare the next file of the tree (both sides keep their strategies)"),
        Binding("left_square_bracket", "step_file(-1)", "Prev file", id="compare.prev-file", show=False,
                tooltip="compare the previous file of the tree (both sides keep their strategies)"),
    ]

    #: Width classes (see compare.tcss): ``-single`` shows one side at a time.
    HORIZONTAL_BREAKPOINTS = [(0, "-single"), (SIDE_BY_SIDE_FROM, "-split")]

    diff: var[FileDiff | None] = var(None, always_update=True)
    """How the two sides differ (from the core's compare)."""
    shown: var[str] = var("a")
    """The side shown when there is room for one only ("a" or "b")."""

    class SideChunked(Message):
        """One side's chunks and layout."""

        def __init__(self, side: str, result: FileResult, layout: SourceLayout) -> None:
            super().__init__()
            self.side = side
            self.result = result
            self.layout = layout

    class TotalsCounted(Message):
        """One side's totals over the whole tree (None: that strategy failed on the tree)."""

        def __init__(self, side: str, resolved: ResolvedStrategy, totals: TreeTotals | None) -> None:
            super().__init__()
            self.side = side
            self.resolved = resolved
            self.totals = totals

    def __init__(self, docs: DocsTree, config: Config, path: str, left: ResolvedStrategy, other: str | None = None,
                 memory: CompareMemory | None = None,
                 tree_run: Callable[[], TreeResult | None] = lambda: None) -> None:
        """Args:
            other: the strategy (or preset) asked for on side B; without it, the one B had on the last visit
                (kept in ``memory``), else the next strategy after ``left``.
            memory: what the explorer keeps of compare mode between visits; side B's choices are written to it.
            tree_run: the explorer's latest cut of the whole tree (None while it runs, or after files changed):
                a side with that strategy and those parameters is summed up from it, not cut again.
        """
        super().__init__()
        self.tree_run = tree_run
        self.docs = docs
        self.config = config
        self.path = path
        self.memory = memory if memory is not None else CompareMemory()
        if other or self.memory.b is None:
            right = default_other(config, left, other)
        else:
            right = self.memory.b
        self.memory.b = right
        self.strategies = {"a": left, "b": right}
        self.results: dict[str, FileResult | None] = {"a": None, "b": None}
        #: Each side's tree totals once counted (None while its worker runs); kept by strategy fingerprint, so a
        #: swap or a return to an earlier choice is not counted again.
        self.totals: dict[str, TreeTotals | None] = {"a": None, "b": None}
        self._totals_seen: dict[str, TreeTotals] = {}
        self._syncing = False

    def compose(self) -> ComposeResult:
        with Vertical(id="compare-top"):
            with Horizontal(id="compare-bars"):
                yield StrategyBar(self.config, self.strategies["a"], id="bar-a", title="A")
                yield StrategyBar(self.config, self.strategies["b"], id="bar-b", title="B")
            yield Static(id="compare-side")
            yield Static(id="compare-summary")
            yield Static(id="compare-totals")
        with Horizontal(id="compare-main"):
            yield SourceView(id="side-a")
            yield SourceView(id="side-b")
        yield KeyBar()

    def on_mount(self) -> None:
        for side in "ab":
            view = self.query_one(f"#side-{side}", SourceView)
            view.notice = f"chunking {visible(self.path, oneline=True)}…"
            self.watch(view, "scroll_y", self._follower(side), init=False)
            self.chunk_side(side, self.strategies[side])
        self._summary()
        self._totals_line()
        self._side_line()
        # Keys (n, p, a, b, x, c) work at once; the strategy bars are a key away (a, b).
        self.query_one("#side-a", SourceView).focus()

    # --- one side or two ---------------------------------------------------------------------------------------

    @property
    def single_side(self) -> bool:
        """Whether the terminal is too narrow for two sides (from the size: the width classes follow it later)."""
        return self.app.size.width < SIDE_BY_SIDE_FROM

    def on_resize(self, event: events.Resize) -> None:
        self.refresh_bindings()  # `s` is offered only where one side is shown
        self._side_line()
        self._totals_line()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "switch_side":
            return self.single_side
        return True

    def watch_shown(self, side: str) -> None:
        self.set_class(side == "b", "-show-b")
        self._side_line()

    def _side_line(self) -> None:
        """Which side is shown, and how to see the other (one side at a time only)."""
        shown = self.shown
        line = Text(no_wrap=False)
        for side in "ab":
            label = f" {side.upper()}: {visible(self.strategies[side].label, oneline=True)} "
            line.append(label, style="bold reverse" if side == shown else "dim")
            line.append(" ")
        other = "b" if shown == "a" else "a"
        line.append(f" showing {shown.upper()} · s shows {other.upper()}", style="italic")
        self.query_one("#compare-side", Static).update(line)

    def _view_shown(self) -> SourceView:
        """The source the user reads: A when both are shown."""
        side = self.shown if self.single_side else "a"
        return self.query_one(f"#side-{side}", SourceView)

    def _show_side(self, side: str, then: Callable[[], object] | None = None) -> None:
        """Show ``side`` at the line the other one showed (keys inside the hidden side move to the shown one)."""
        if side == self.shown or not self.single_side:
            if then is not None:
                then()
            return
        before = self.query_one(f"#side-{self.shown}", SourceView)
        y = before.scroll_y
        had_focus = self.focused is not None and self.query_one(f"#bar-{self.shown}") in self.focused.ancestors
        self.shown = side
        view = self.query_one(f"#side-{side}", SourceView)

        def settle() -> None:
            self._syncing = True
            view.scroll_to(y=y, animate=False, immediate=True)
            self._syncing = False
            if then is not None:
                then()
            elif had_focus or self.focused is before:
                view.focus()

        # After the refresh: the side just shown has its size (and so its scroll range) only then.
        self.call_after_refresh(settle)

    def action_back(self) -> None:
        """Escape or c: back to the explorer; from a strategy bar (a text field types c), leave the bar first, so
        the keys work again and one Escape too many never closes compare with the edit in view."""
        focused = self.focused
        if focused is not None and any(isinstance(w, StrategyBar) for w in focused.ancestors_with_self):
            self._view_shown().focus()
            return
        self.app.pop_screen()
        explorer = getattr(self.app, "explorer", None)
        # Back on the file compared last (] and [ may have moved on from the one compare opened with).
        if explorer is not None and explorer.current_path != self.path and self.docs.get(self.path) is not None:
            explorer.open_file(self.path)

    def action_switch_side(self) -> None:
        self._show_side("b" if self.shown == "a" else "a")

    def action_edit_side(self, side: str) -> None:
        """Keys a and b: that side's strategy picker, shown first when one side is shown at a time."""
        self._show_side(side, self.query_one(f"#bar-{side}", StrategyBar).focus_picker)

    # --- scrolling together ------------------------------------------------------------------------------------

    def _follower(self, side: str):
        # A one-argument callback: Textual passes (old, new) to callbacks that take two.
        return lambda y: self._follow(side, y)

    def _follow(self, side: str, y: float) -> None:
        """Scroll the other side to the same line, so boundaries stay aligned."""
        if self._syncing:
            return
        other = self.query_one(f"#side-{'b' if side == 'a' else 'a'}", SourceView)
        if round(other.scroll_y) != round(y):
            self._syncing = True
            other.scroll_to(y=y, animate=False, immediate=True)
            self._syncing = False

    # --- chunking ----------------------------------------------------------------------------------------------

    def chunk_side(self, side: str, resolved: ResolvedStrategy) -> None:
        self.strategies[side] = resolved
        if side == "b":
            self.memory.b = resolved  # B stays as the user left it for the next visit
        self._side_line()
        self._chunk(side, resolved)
        self._count(side, resolved)

    # --- the next and previous file ----------------------------------------------------------------------------

    def action_step_file(self, step: int) -> None:
        """] and [: the next (1) or previous (-1) file of the tree, cut by the same two strategies, from its top."""
        paths = [d.path for d in self.docs.documents]
        if not paths:
            return
        i = paths.index(self.path) if self.path in paths else -1
        target = paths[min(max(i + step, 0), len(paths) - 1)]
        if target == self.path:
            self.notify("This is the last file." if step > 0 else "This is the first file.")
            return
        self.path = target
        self.results = {"a": None, "b": None}
        self.diff = None
        for side in "ab":
            view = self.query_one(f"#side-{side}", SourceView)
            view.notice = f"chunking {visible(target, oneline=True)}…"
            view.scroll_to(y=0, animate=False, immediate=True)
            self._chunk(side, self.strategies[side])
        self._summary()

    # --- the tree's totals -------------------------------------------------------------------------------------

    def _count(self, side: str, resolved: ResolvedStrategy) -> None:
        known = self._totals_seen.get(resolved.fingerprint())
        self.totals[side] = known
        if known is None:
            # One exclusive group per side: a change on one side never cancels the other's count.
            name = f"tree totals {side.upper()}"
            self.run_worker(partial(self._count_worker, side, resolved, self._held_run(resolved)), name=name,
                            group=f"totals-{side}", description=name, exit_on_error=False, exclusive=True,
                            thread=True)
        else:
            self.workers.cancel_group(self, f"totals-{side}")
        self._totals_line()

    def _held_run(self, resolved: ResolvedStrategy) -> TreeResult | None:
        """The explorer's cut of the tree when it is ``resolved``'s (strategy and parameters) over the documents
        as they are now, else None."""
        run = self.tree_run()
        if run is None or run.resolved.fingerprint() != resolved.fingerprint():
            return None
        return run if list(run.entries) == [d.path for d in self.docs.documents] else None

    def _count_worker(self, side: str, resolved: ResolvedStrategy, held: TreeResult | None) -> None:
        """One side's totals: summed up from the explorer's cut when it is this strategy's, else cut here."""
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled

        if held is not None:
            totals = totals_of(held, self.config, cancelled)
        else:  # a copy: the watcher may change the list on the UI thread while this runs
            totals = tree_totals(list(self.docs.documents), resolved, self.config, cancelled)
        if not worker.is_cancelled:
            self.post_message(self.TotalsCounted(side, resolved, totals))

    def on_compare_screen_totals_counted(self, msg: "CompareScreen.TotalsCounted") -> None:
        if msg.totals is not None:
            self._totals_seen[msg.resolved.fingerprint()] = msg.totals
        if msg.resolved is self.strategies[msg.side]:
            self.totals[msg.side] = msg.totals
            self._totals_line()

    def totals_text(self, width: int = 0) -> Text:
        """Both sides over the whole tree: chunks, tokens, mean and max size, over the limit, truncated by the
        embedding model. A line each, broken between figures (never inside one) where ``width`` is too narrow."""
        out = Text()
        for side in "ab":
            t = self.totals[side]
            if side == "b":
                out.append("\n")
            head = f"tree {side.upper()} "
            out.append(head, style="bold #8b949e")
            if t is None:
                out.append("counting every file…", style="dim italic")
                continue
            items: list[tuple[str, str]] = [(plural(t.chunks, "chunk"), ""), (f"{t.tokens:,} tokens", ""),
                                            (f"mean {t.mean:.0f}", ""), (f"max {t.max_tokens}", "")]
            if t.limit is not None:
                items.append((f"{t.over_limit} over {t.limit}", "bold #ff5f5f" if t.over_limit else ""))
            if t.truncated is not None:
                items.append((f"{t.truncated} truncated", "bold #ff5f5f" if t.truncated else ""))
            if t.errors:
                items.append((f"{plural(t.errors, 'file')} failed", "bold #ff5f5f"))
            used = len(head)
            for i, (item, style) in enumerate(items):
                sep = " · " if i else ""
                if width and i and used + len(sep) + len(item) > width:
                    out.append("\n" + " " * len(head))
                    used, sep = len(head), ""
                out.append(sep)
                out.append(item, style=style)
                used += len(sep) + len(item)
        return out

    def _totals_line(self) -> None:
        line = self.query_one("#compare-totals", Static)
        # The line's own width once laid out (its padding aside), else the terminal's.
        width = (line.content_region.width or self.app.size.width - 2) if line.is_mounted else 0
        line.update(self.totals_text(width))

    def _chunk(self, side: str, resolved: ResolvedStrategy) -> None:
        # One exclusive worker group per side: a change on one side never cancels the other.
        name = f"chunking side {side.upper()}"
        self.run_worker(partial(self._chunk_worker, side, resolved), name=name, group=f"side-{side}",
                        description=name, exit_on_error=False, exclusive=True, thread=True)

    def _chunk_worker(self, side: str, resolved: ResolvedStrategy) -> None:
        worker = get_current_worker()
        doc = self.docs.get(self.path)
        if doc is None:
            return
        result = chunk_file(doc, resolved, self.config, lint=False)
        layout = SourceLayout(doc, result.chunks, result.truncations, (), result.limit, line_colours(doc))
        if not worker.is_cancelled:
            self.post_message(self.SideChunked(side, result, layout))

    def on_compare_screen_side_chunked(self, msg: "CompareScreen.SideChunked") -> None:
        if msg.result.resolved is not self.strategies[msg.side] or msg.result.doc.path != self.path:
            return  # a side changed, or ] and [ moved on, since this cut began
        self.results[msg.side] = msg.result
        view = self.query_one(f"#side-{msg.side}", SourceView)
        count = plural(len(msg.result.chunks), "chunk")
        # A border title is markup: a label's brackets (a list of separators) are escaped.
        view.border_title = f"{msg.side.upper()}: {escape(visible(msg.result.resolved.label, oneline=True))} · {count}"
        view.layout_data = msg.layout
        if msg.result.error:
            self.notify(visible(msg.result.error, oneline=True), title=f"side {msg.side.upper()} failed", severity="error")
        self._rediff()

    def _rediff(self) -> None:
        a, b = self.results["a"], self.results["b"]
        if a is None or b is None:
            self._summary()
            return
        d = diff_chunks(self.path, a.chunks, b.chunks)
        self.diff = d
        only_a = {c.index for c in d.only_a}
        only_b = {c.index for c in d.only_b}
        for side, marks in (("a", only_a), ("b", only_b)):
            view = self.query_one(f"#side-{side}", SourceView)
            if view.layout_data is not None:
                view.layout_data.differ = marks
                view.layout_data = view.layout_data  # redraw with the marks
        self._summary()

    def summary_text(self) -> Text:
        """The line under the bars: how the two cuts differ (it wraps: every word of it is worth reading)."""
        d = self.diff
        a, b = self.results["a"], self.results["b"]
        path = visible(self.path, oneline=True)
        paths = [doc.path for doc in self.docs.documents]
        where = f" ({paths.index(self.path) + 1} of {len(paths)}; ] and [ move)" if self.path in paths else ""
        if d is None or a is None or b is None:
            return Text(f"{path}{where}: chunking both sides…", style="dim italic")
        differ = len(d.only_a) + len(d.only_b)
        boundaries = len(d.boundaries_only_a) + len(d.boundaries_only_b)
        return Text.assemble(
            (path, "bold"), (where, "dim"), ": ",
            (f"{plural(differ, 'chunk')} {'differs' if differ == 1 else 'differ'}",
             "bold #e5c07b" if differ else "bold #7ee787"),
            f" ({len(d.only_a)} only in A, {len(d.only_b)} only in B, {d.identical} identical) · ",
            f"A {plural(d.a_chunks, 'chunk')}, B {plural(d.b_chunks, 'chunk')} · ",
            f"{plural(boundaries, 'boundary', 'boundaries')} {'differs' if boundaries == 1 else 'differ'}",
            ("  ≠ marks a chunk the other side lacks", "dim"),
        )

    def _summary(self) -> None:
        self.query_one("#compare-summary", Static).update(self.summary_text())

    # --- differences -------------------------------------------------------------------------------------------

    def _difference_lines(self) -> list[int]:
        d = self.diff
        if d is None:
            return []
        return sorted(set(d.boundaries_only_a) | set(d.boundaries_only_b)
                      | {c.start_line for c in d.only_a} | {c.start_line for c in d.only_b})

    def action_next_difference(self) -> None:
        self._jump_difference(1)

    def action_prev_difference(self) -> None:
        self._jump_difference(-1)

    def _jump_difference(self, step: int) -> None:
        lines = self._difference_lines()
        if not lines:
            self.notify("The two sides cut this file identically.")
            return
        view = self._view_shown()
        top = round(view.scroll_y) + 1 + 3  # the difference is shown 3 lines below the top edge
        if step > 0:
            target = next((ln for ln in lines if ln > top), lines[0])
        else:
            target = next((ln for ln in reversed(lines) if ln < top), lines[-1])
        view.scroll_to(y=max(target - 1 - 3, 0), animate=False, immediate=True)

    def action_swap(self) -> None:
        a, b = self.strategies["a"], self.strategies["b"]
        self.query_one("#bar-a", StrategyBar).resolved = b
        self.query_one("#bar-b", StrategyBar).resolved = a
        self.results = {"a": None, "b": None}
        self.chunk_side("a", b)
        self.chunk_side("b", a)

    @on(StrategyBar.Changed)
    def _side_changed(self, event: StrategyBar.Changed) -> None:
        side = "a" if event.bar.id == "bar-a" else "b"
        self.chunk_side(side, event.resolved)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self.notify(visible(f"{type(err).__name__}: {err}", oneline=True), title="compare failed", severity="error")
