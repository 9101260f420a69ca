"""The query pane's retrieval controls: the embedder and search mode shown, ctrl+s cycling dense, keyword and hybrid
(asking again), and the score threshold with where it comes from (ctrl+t goes to it; ↑/↓ step it, Enter takes a
typed value; a change re-marks the hits shown at once, their scores are known, and holds for the next questions).

`QueryPane` extends this: the controls' handlers are collected from the base as Textual collects any widget's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.containers import Vertical
from textual.widgets import Input, Static

from chunkscope.retrieval.search_modes import SEARCH_MODES
from chunkscope.safe_text import visible
from chunkscope.tui.widgets.query_text import threshold_source

if TYPE_CHECKING:
    from chunkscope.config.reader import ResolvedStrategy
    from chunkscope.tui.headless.search import Answer, SearchSession


class RetrievalControls(Vertical):
    """The embedder, search mode and threshold of the query pane, and what changing them does."""

    if TYPE_CHECKING:  # what the query pane holds, which the controls read and ask again through
        session: SearchSession
        resolved: ResolvedStrategy | None
        _answer: Answer | None
        _pending: str | None
        _unavailable: str | None

        def _show_answer(self, a: Answer) -> None: ...

        def _show_results_for(self) -> None: ...

        def _start_search(self, question: str, resolved: ResolvedStrategy, *, submitted: bool = True) -> None: ...

    # --- the retrieval reproduced: embedder, search mode, threshold ----------------------------------------------

    def _search_info(self) -> Text:
        """The embedder and the search mode, left of the threshold field."""
        spec = self.session.embedder_spec
        t = Text()
        if spec is None:
            t.append("embedder: not usable (the first question says why)", style="bold red")
        else:
            t.append(visible(spec.text, oneline=True), style="bold #58a6ff")
        t.append(" · ", style="dim")
        t.append(f"{self.session.search_mode} search", style="bold")
        # The keys (ctrl+s, ctrl+t, ↑↓) are in the footer: this row keeps its width for the values at 80 columns.
        t.append(" · threshold ", style="dim")
        return t

    def _threshold_value(self) -> str:
        t = self.session.threshold
        return "" if t is None else f"{t:g}"

    def _threshold_source(self) -> Text:
        """Where the threshold in force comes from, and whether it applies to the current search mode."""
        return threshold_source(self.session)

    def _show_controls(self) -> None:
        """Redraw the embedder, mode and threshold row from the session (a value typed and not entered goes)."""
        if not self.query("#controls-row"):
            return
        self.query_one("#search-info", Static).update(self._search_info())
        box = self.query_one("#threshold-input", Input)
        box.remove_class("-invalid")
        box.set_class(self.session.search_mode != "dense", "-off")
        value = self._threshold_value()
        if box.value != value:
            box.value = value
        source = self._threshold_source()
        line = self.query_one("#threshold-source", Static)
        line.update(source)
        line.tooltip = source.plain  # cut on a narrow terminal

    def action_cycle_search(self) -> None:
        """ctrl+s: the next search mode; the question shown is asked again in it (no re-index: every collection
        holds dense and keyword vectors)."""
        modes = list(SEARCH_MODES)
        now = self.session.search_mode
        self.session.search_mode = modes[(modes.index(now) + 1) % len(modes)] if now in modes else modes[0]
        self._show_controls()
        self._show_results_for()  # "search changed" until the new answer is in
        self._ask_again()

    def search_mode_changed(self, *, ask_again: bool = True) -> None:
        """The session's search mode was set from outside (a preset naming its mode was chosen): shown as ctrl+s
        shows it, the answer on screen marked "search changed", and asked again when ``ask_again`` (False when
        the strategy change asks again already)."""
        self._show_controls()
        self._show_results_for()
        if ask_again:
            self._ask_again()

    def _ask_again(self) -> None:
        """The question in the box, asked again now when its index is there (a search costs milliseconds)."""
        question = self.query_one("#query-input", Input).value.strip()
        resolved = self.resolved
        if question and not self._unavailable and resolved is not None and self.session.is_indexed(resolved):
            self._pending = question
            self._start_search(question, resolved, submitted=False)

    def action_focus_threshold(self) -> None:
        self.query_one("#threshold-input", Input).focus()

    def action_step_threshold(self, step: float) -> None:
        """↑/↓ in the threshold field: the value in force (or 0 when there is none) moved by one step."""
        now = self.session.threshold
        self._set_threshold(round(min(1.0, max(-1.0, (now or 0.0) + step)), 4))

    @on(Input.Submitted, "#threshold-input")
    def _threshold_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self._set_threshold(None)  # back to the configuration's, else the embedder's own
            return
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or not -1.0 <= value <= 1.0:
            event.input.add_class("-invalid")
            self.query_one("#threshold-source", Static).update(
                Text(f"“{visible(text, oneline=True)}” is no cosine score: type a number from -1 to 1",
                     style="bold red"))
            return
        self._set_threshold(value)

    @on(Input.Changed, "#threshold-input")
    def _threshold_typed(self, event: Input.Changed) -> None:
        event.stop()  # applied on Enter: half-typed values ("0.") would re-mark the hits at every keystroke

    @on(Input.Blurred, "#threshold-input")
    def _threshold_left(self, event: Input.Blurred) -> None:
        self._show_controls()  # a value typed and not entered goes: the field shows the one in force

    def _set_threshold(self, value: float | None) -> None:
        """A threshold set here (None: back to the default): it holds for the next questions, and the hits shown
        are re-marked from their scores at once. An expected chunk's verdict is the core's: asked again."""
        self.session.threshold_override = value
        self._show_controls()
        a = self._answer
        if a is None or a.search_mode != "dense":
            return
        self._show_answer(a.with_threshold(self.session.threshold))
        if a.verdict is not None:
            self._ask_again()

    def _threshold_focused(self) -> bool:
        return bool(self.query("#threshold-input")) and self.query_one("#threshold-input", Input).has_focus
