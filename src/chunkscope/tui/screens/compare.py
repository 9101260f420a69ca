"""Compare mode: one file cut by two strategies (or two parameter sets) side by side, scrolled together."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from ...safe_text import visible
from ...compare import FileDiff, diff_chunks
from ...config import Config, ResolvedStrategy
from ...docs import DocsTree
from ..highlight import line_colours
from ..layout import SourceLayout
from ..session import FileResult, available_strategies, chunk_file, resolve
from ..widgets.key_bar import KeyBar
from ..widgets.source_view import SourceView
from ..widgets.strategy_bar import StrategyBar
from ...wording import plural


def default_other(config: Config, current: ResolvedStrategy, other: str | None) -> ResolvedStrategy:
    """The right-hand strategy: the one asked for, else the next usable strategy after the current one."""
    if other:
        return resolve(config, other)
    names = [n for n, problem in available_strategies().items() if problem is None and n != "custom"]
    if current.name in names and len(names) > 1:
        nxt = names[(names.index(current.name) + 1) % len(names)]
    else:
        nxt = next((n for n in names if n != current.name), current.name)
    return resolve(config, nxt)


class CompareScreen(Screen):
    """Two chunkings of one file; both sources share line numbers, so their boundaries line up."""

    CSS_PATH = "compare.tcss"

    BINDINGS = [
        Binding("escape,c", "app.pop_screen", "Back", id="compare.back", tooltip="back to the explorer"),
        Binding("n", "next_difference", "Next difference", id="compare.next-diff",
                tooltip="scroll to the next boundary only one side has"),
        Binding("p", "prev_difference", "Prev difference", id="compare.prev-diff",
                tooltip="scroll to the previous boundary only one side has"),
        Binding("x", "swap", "Swap sides", id="compare.swap", tooltip="swap the two strategies"),
    ]

    diff: var[FileDiff | None] = var(None, always_update=True)
    """How the two sides differ (from the core's compare)."""

    class SideChunked(Message):
        """One side's chunks and layout."""

        def __init__(self, side: str, result: FileResult, layout: SourceLayout) -> None:
            super().__init__()
            self.side = side
            self.result = result
            self.layout = layout

    def __init__(self, docs: DocsTree, config: Config, path: str, left: ResolvedStrategy, other: str | None = None) -> None:
        super().__init__()
        self.docs = docs
        self.config = config
        self.path = path
        self.strategies = {"a": left, "b": default_other(config, left, other)}
        self.results: dict[str, FileResult | None] = {"a": None, "b": None}
        self._syncing = False

    def compose(self) -> ComposeResult:
        with Vertical(id="compare-top"):
            with Horizontal(id="compare-bars"):
                yield StrategyBar(self.config, self.strategies["a"], id="bar-a", title="A")
                yield StrategyBar(self.config, self.strategies["b"], id="bar-b", title="B")
            yield Static(id="compare-summary")
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
        # Keys (n, p, x, c) work at once; the strategy bars are a Tab away.
        self.query_one("#side-a", SourceView).focus()

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

    def chunk_side(self, side: str, resolved: ResolvedStrategy) -> None:
        self.strategies[side] = resolved
        self._chunk(side, resolved)

    @work(thread=True, exclusive=True, group="side-a", exit_on_error=False, name="chunking side A")
    def _chunk_a(self, resolved: ResolvedStrategy) -> None:
        self._chunk_worker("a", resolved)

    @work(thread=True, exclusive=True, group="side-b", exit_on_error=False, name="chunking side B")
    def _chunk_b(self, resolved: ResolvedStrategy) -> None:
        self._chunk_worker("b", resolved)

    def _chunk(self, side: str, resolved: ResolvedStrategy) -> None:
        # One exclusive worker group per side: a change on one side never cancels the other.
        (self._chunk_a if side == "a" else self._chunk_b)(resolved)

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
        if msg.result.resolved is not self.strategies[msg.side]:
            return
        self.results[msg.side] = msg.result
        view = self.query_one(f"#side-{msg.side}", SourceView)
        count = plural(len(msg.result.chunks), "chunk")
        view.border_title = f"{msg.side.upper()}: {msg.result.resolved.label} · {count}"
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

    def _summary(self) -> None:
        box = self.query_one("#compare-summary", Static)
        d = self.diff
        a, b = self.results["a"], self.results["b"]
        if d is None or a is None or b is None:
            box.update(Text(f"{visible(self.path, oneline=True)}: chunking both sides…", style="dim italic"))
            return
        differ = len(d.only_a) + len(d.only_b)
        t = Text.assemble(
            (visible(self.path, oneline=True), "bold"), "  ",
            (f"{plural(differ, 'chunk')} {'differs' if differ == 1 else 'differ'}",
             "bold #e5c07b" if differ else "bold #7ee787"),
            f" ({len(d.only_a)} only in A, {len(d.only_b)} only in B, {d.identical} identical)  ·  ",
            f"A {plural(d.a_chunks, 'chunk')}, B {plural(d.b_chunks, 'chunk')}  ·  ",
            (f"{len(d.boundaries_only_a) + len(d.boundaries_only_b)} boundaries differ", ""),
            ("  (≠: a chunk the other side lacks)", "dim"),
        )
        box.update(t)

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
        view = self.query_one("#side-a", SourceView)
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
