"""Ask the docs: a question, the ranked hits with the threshold drawn between kept and filtered, and the
verdict on the chunk you expected. The first question (Enter) indexes the tree in the background (its phase,
counts, rate and time left shown from the start; ctrl+x stops it); once the index is ready, results follow as you
type. The results say which question, strategy and search mode made them, and say so when the strategy has changed
since; an expected chunk belongs to one question and is dropped when another is asked.

Under the question, the retrieval being reproduced: the embedder, the search mode (ctrl+s cycles dense, keyword
and hybrid and asks again: every collection serves all three) and the score threshold with where it comes from
(ctrl+t goes to it; ↑/↓ step it, Enter takes a typed value; a change re-marks the hits shown at once, their scores
are known, and holds for the next questions).
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Checkbox, Input, Label, OptionList, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker

from chunkscope.safe_text import visible
from chunkscope.config.reader import ResolvedStrategy
from chunkscope.progress import CancelToken, Phase
from chunkscope.progress import Progress as WorkProgress
from chunkscope.tui.debounce import DEBOUNCE_SECONDS
from chunkscope.tui.failures import WorkerFailed
from chunkscope.tui.headless.search import (Answer, Expected, SearchSession, install_hint, measuring, progress_brief, progress_text,
                      retrieval_available)
from chunkscope.wording import plural
from chunkscope.tui.widgets import query_messages
from chunkscope.tui.widgets.query_controls import RetrievalControls
from chunkscope.tui.widgets.ordered_input import OrderedInput
from chunkscope.tui.widgets.query_text import answer_status, hit_options, strategy_words, verdict_line
from chunkscope.tui.widgets.state_checkbox import StateCheckbox


class HitList(OptionList):
    """The ranked hits; Enter on one shows its chunk in the source (said in the footer)."""

    BINDINGS = [
        Binding("enter", "select", "Jump to source", id="query.jump",
                tooltip="open the hit's file with its chunk selected, scrolled into view"),
    ]


#: Said after the indexing line: the key that stops it (bound here and, for a closed pane, app-wide).
STOP_HINT = "ctrl+x stops"
#: How far ↑/↓ move the threshold (cosine scores: MiniLM's right answers scored 0.455-0.841 on the Rust book).
THRESHOLD_STEP = 0.05
#: Seconds between redraws of the indexing line while its step has no rate yet (the time it has run moves on).
TICK_SECONDS = 1.0


class QueryPane(RetrievalControls):
    """The query pane; the explorer gives it the strategy, the open file and the expected chunk."""

    BINDINGS = [
        # Priority, so the footer shows it over the text field's own (unused) down; off inside the results.
        Binding("down", "focus_hits", "Results", id="query.results", priority=True,
                tooltip="from the question to the results, the first one highlighted (Enter on a result jumps "
                        "to it in the source)"),
        # Priority: in the question field ctrl+x is otherwise the field's "cut" (only while indexing runs).
        Binding("ctrl+x", "cancel_index", "Stop indexing", id="query.cancel-index", priority=True,
                tooltip="stop indexing between batches; what is written is kept and the next question resumes "
                        "where it stopped"),
        # Priority: these work from the question field, where a letter would be typed.
        Binding("ctrl+s", "cycle_search", "Search mode", id="query.search-mode", priority=True,
                tooltip="dense (the embedder's vectors) → keyword (BM25) → hybrid (both, fused by rank): asks the "
                        "question again in the new mode (every collection serves all three: nothing is re-indexed)"),
        Binding("ctrl+t", "focus_threshold", "Threshold", id="query.threshold", priority=True,
                tooltip="go to the score threshold: ↑/↓ step it, Enter takes a typed value, an empty field "
                        "goes back to the config's or the embedder's own; the hits shown are re-marked at once"),
        # Only while the threshold field has focus (see `check_action`): elsewhere ↑/↓ move as they always do.
        Binding("up", f"step_threshold({THRESHOLD_STEP})", f"Threshold +{THRESHOLD_STEP}", id="query.threshold-up",
                priority=True, tooltip="in the threshold field: raise it (dense search), fewer hits pass"),
        Binding("down", f"step_threshold({-THRESHOLD_STEP})", f"Threshold -{THRESHOLD_STEP}",
                id="query.threshold-down", priority=True,
                tooltip="in the threshold field: lower it (dense search), more hits pass"),
    ]

    DEFAULT_CSS = """
    QueryPane { height: 100%; }
    QueryPane #query-row { height: 1; }
    QueryPane #query-input { width: 1fr; }
    QueryPane #controls-row { height: 1; }
    QueryPane #search-info { width: auto; padding: 0 0 0 1; }
    QueryPane #threshold-input { width: 8; }
    QueryPane #threshold-input.-off { color: $text-muted; }
    QueryPane #threshold-input.-invalid { color: $error; }
    QueryPane #threshold-source { width: 1fr; padding: 0 1; color: $text-muted; }
    QueryPane Checkbox { border: none; padding: 0 1; height: 1; background: transparent; }
    QueryPane #index-row { height: auto; max-height: 2; display: none; }
    QueryPane #index-row.-busy { display: block; }
    QueryPane #index-progress { width: 30%; max-width: 40; }
    QueryPane #index-status { width: 1fr; padding: 0 1; color: $text-muted; }
    QueryPane #query-status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    QueryPane #expect-status { height: auto; max-height: 3; padding: 0 1; display: none; }
    QueryPane #expect-status.-shown { display: block; }
    QueryPane #results-for { height: auto; max-height: 2; padding: 0 1; display: none; }
    QueryPane #results-for.-shown { display: block; }
    QueryPane #hits { height: 1fr; border: none; }
    QueryPane #hits.-stale { opacity: 60%; }
    """

    resolved: reactive[ResolvedStrategy | None] = reactive(None)
    """The strategy whose index is asked."""
    current_path: reactive[str | None] = reactive(None)
    """The open file (for "this file only" and "this chapter only")."""
    current_chapter: reactive[str | None] = reactive(None)
    """The open file's chapter id."""
    expected: reactive[Expected | None] = reactive(None)
    """The chunk the user expects to answer the question (key `e`); the explorer holds it, this pane judges it."""

    # The pane's messages (defined in `query_messages`, handled as ``on_query_pane_...``).
    JumpTo = query_messages.JumpTo
    Indexed = query_messages.Indexed
    Progress = query_messages.Progress
    IndexingChanged = query_messages.IndexingChanged
    Answered = query_messages.Answered
    ExpectationDropped = query_messages.ExpectationDropped
    Warmed = query_messages.Warmed

    def __init__(self, session: SearchSession, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session
        self._pending: str | None = None
        self._answer: Answer | None = None
        #: The keystroke timer: each keystroke restarts it, and it searches when it runs out.
        self._debounce: Timer | None = None
        #: Number of the latest search started; an answer from an earlier one is stale and never shown.
        self._search_seq = 0
        self._unavailable = retrieval_available()
        #: The strategy whose index gave the answer shown (the results say so, and when it is no longer current).
        self._answer_resolved: ResolvedStrategy | None = None
        #: Why the results shown no longer stand for the current index, besides a strategy change (None: they do).
        self._stale_reason: str | None = None
        #: The question the expected chunk belongs to (None: the next one submitted with Enter).
        self._expect_question: str | None = None
        #: The expectation dropped when another question was asked, and the question it belonged to (shown once).
        self._dropped: tuple[Expected, str] | None = None
        #: The running index build's stop token, its latest report, and whether a stop was asked for.
        self._index_cancel: CancelToken | None = None
        self._index_progress: WorkProgress | None = None
        self._stopping = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="query-row"):
            yield OrderedInput(placeholder="ask the docs a question (Enter; once indexed, results follow as you "
                               "type)", compact=True, id="query-input")
            yield StateCheckbox("this file only", id="filter-file", compact=True,
                                tooltip="only chunks of the open file")
            yield StateCheckbox("this chapter only", id="filter-chapter", compact=True,
                                tooltip="only chunks of the open file's chapter")
        with Horizontal(id="controls-row"):
            yield Static(self._search_info(), id="search-info")
            yield Input(self._threshold_value(), placeholder="none", compact=True, id="threshold-input",
                        tooltip="the score threshold: hits under it are filtered out, not sent to the model "
                                "(↑/↓ step it, Enter takes a typed value, empty: the default)")
            yield Static(id="threshold-source")
        with Horizontal(id="index-row"):
            # The line beside it gives the counts: no percentage (it crowded the line on narrow terminals).
            yield ProgressBar(id="index-progress", show_eta=False, show_percentage=False)
            yield Label("", id="index-status")
        yield Static(id="expect-status")
        # As Text: the install hint's "[retrieval]" is no markup.
        yield Static(Text(self._unavailable, style="bold red") if self._unavailable else self._idle_text(),
                     id="query-status")
        yield Static(id="results-for")
        yield HitList(id="hits")

    def on_mount(self) -> None:
        self._adopt_expected()
        self._show_verdict()
        self._show_controls()
        # Until a step has a rate (the model loading, the first batch: many seconds on a busy CPU), the indexing
        # line says how long it has run, redrawn each second: it never looks stuck.
        self.set_interval(TICK_SECONDS, self._tick, name="indexing line")
        if not self._unavailable and self.resolved is not None and not self.session.is_indexed(self.resolved):
            # Once the pane is drawn: opening a collection holds the interpreter for a moment.
            self.call_after_refresh(self._warm, self.resolved)

    @work(thread=True, exclusive=True, group="warm", exit_on_error=False, name="opening the index",
          description="opening the index")
    def _warm(self, resolved: ResolvedStrategy) -> None:
        """While the first question is typed, an indexed tree's index is opened and vouched for
        (`SearchSession.warm`: it never indexes), so Enter answers at once and results follow as you type."""
        worker = get_current_worker()
        if self.session.warm(resolved, CancelToken(poll=lambda: worker.is_cancelled)):
            self.post_message(self.Warmed(resolved))

    def on_query_pane_warmed(self, msg: query_messages.Warmed) -> None:
        if self.resolved is None or msg.resolved.fingerprint() != self.resolved.fingerprint() or self._indexing():
            return  # another strategy now, or Enter's indexing is under way and asks when done
        question = self.query_one("#query-input", Input).value.strip()
        if not question:
            self._status(self._idle_text())
        elif self._answer is None and self._debounce is None:
            self._pending = question
            self._start_search(question, self.resolved, submitted=False)

    def focus_input(self) -> None:
        self.query_one("#query-input", Input).focus()

    def action_focus_hits(self) -> None:
        """Down from the question (or a filter): into the results, the first hit highlighted."""
        hits = self.query_one("#hits", HitList)
        if not any(not o.disabled for o in hits.options):
            return
        hits.focus()
        if hits.highlighted is None:
            hits.action_first()  # the first enabled row: a threshold line is never highlighted

    # --- asking ------------------------------------------------------------------------------------------------

    @on(Input.Submitted, "#query-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._stop_debounce()
        self.ask(event.value)

    @on(Input.Changed, "#query-input")
    def _typed(self, event: Input.Changed) -> None:
        """Search as you type: restart the quiet timer; an empty box clears the results and runs nothing."""
        event.stop()
        self._stop_debounce()
        if not event.value.strip():
            self._clear_answer()
            return
        if self._unavailable or self.resolved is None:
            return
        if not self.session.is_indexed(self.resolved):
            # Indexing loads torch and the model and can take minutes: only Enter starts it, never a keystroke.
            if not self._indexing():
                self._status(f"Press Enter to index the tree with {self.resolved.label} and search; "
                             "after that, results follow as you type.")
            return
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self._typed_pause, name="query debounce")

    def _typed_pause(self) -> None:
        """The typist paused: search what the box holds now (when the index is still there)."""
        self._debounce = None
        question = self.query_one("#query-input", Input).value.strip()
        resolved = self.resolved
        if not question or self._unavailable or resolved is None or not self.session.is_indexed(resolved):
            return
        self._pending = question
        self._start_search(question, resolved, submitted=False)

    def _stop_debounce(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None

    def _clear_answer(self) -> None:
        """No question: drop the hits and any search under way (a late answer must not refill the list)."""
        self._pending = None
        self._search_seq += 1
        self.workers.cancel_group(self, "query")
        self._answer = None
        self._answer_resolved, self._stale_reason = None, None
        self.refresh_bindings()
        self.query_one("#hits", OptionList).clear_options()
        self._show_results_for()
        if not self._unavailable and not self._indexing():
            self._status(self._idle_text())
        self._show_verdict()

    def _idle_text(self) -> str:
        """What the status line says while no question is asked."""
        if self.resolved is not None and self.session.is_indexed(self.resolved):
            return f"Type a question: results follow as you type ({self.resolved.label} is indexed)."
        return ("Ask a question and press Enter. The first one indexes the tree with the current strategy "
                "(the model loads then); after that, results follow as you type.")

    @on(Checkbox.Changed)
    def _filter_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        if event.checkbox.id == "filter-file" and event.value:
            self.query_one("#filter-chapter", Checkbox).value = False
        elif event.checkbox.id == "filter-chapter" and event.value:
            self.query_one("#filter-file", Checkbox).value = False
        question = self.query_one("#query-input", Input).value
        if question.strip() and self.resolved is not None and self.session.is_indexed(self.resolved):
            self.ask(question)

    def ask(self, question: str) -> None:
        """Search now, or index first (in the background) and search when the index is ready."""
        question = question.strip()
        if not question:
            return
        if self._unavailable:
            self._status(self._unavailable, error=True)
            return
        resolved = self.resolved
        if resolved is None:
            return
        self._pending = question
        if self.session.is_indexed(resolved):
            self._start_search(question, resolved)
        elif not self._indexing():
            self._index(resolved)

    def rebuild_index(self) -> None:
        """Forget the current strategy's index and build it again (``index: rebuild``)."""
        if self.resolved is None or self._unavailable:
            return
        self.workers.cancel_group(self, "index")
        if self._answer is not None and self._answer_resolved is not None \
                and self._answer_resolved.fingerprint() == self.resolved.fingerprint():
            self._stale_reason = "asked before the index was rebuilt"
            self._show_results_for()
        self._forget_then_index(self.resolved)

    def action_cancel_index(self) -> None:
        """ctrl+x: stop the index build after the batch in progress; what it wrote stays (the next question
        resumes from there)."""
        token = self._index_cancel
        if not self._indexing() or token is None or self._stopping:
            return
        token.cancel()
        self._stopping = True
        self.refresh_bindings()
        self._status("Stopping the index build after the batch in progress; what is written is kept.")
        self._render_index()

    def _indexing(self) -> bool:
        return any(w.group == "index" and w.is_running for w in self.workers)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "Stop indexing" is offered (and shown in the footer) only while an index build runs; "Results" only
        # when there are results to go to.
        if action == "cancel_index":
            return self._indexing() and not self._stopping
        on_threshold = self._threshold_focused()
        if action == "focus_hits":
            return (self._answer is not None and bool(self._answer.hits) and not self.query_one("#hits").has_focus
                    and not on_threshold)
        if action == "step_threshold":
            # Elsewhere hidden from the footer, and the key goes on to the focused widget (or to "Results").
            return on_threshold
        return True

    def _status(self, text: str | Text, error: bool = False) -> None:
        st = self.query_one("#query-status", Static)
        st.update(text if isinstance(text, Text) else Text(text, style="bold red" if error else ""))

    def _post_progress(self, progress: WorkProgress) -> None:
        """The index build's progress, from its worker thread (a flood collapses into the latest)."""
        self.post_message(self.Progress(progress))

    @work(thread=True, exclusive=True, group="index", exit_on_error=False, name="indexing", description="indexing")
    def _index(self, resolved: ResolvedStrategy) -> None:
        self._build_index(resolved, rebuild=False)

    @work(thread=True, exclusive=True, group="index", exit_on_error=False,
          name="rebuilding the index", description="rebuilding the index")
    def _forget_then_index(self, resolved: ResolvedStrategy) -> None:
        self._build_index(resolved, rebuild=True)

    def _build_index(self, resolved: ResolvedStrategy, *, rebuild: bool) -> None:
        """The index workers' body: a stop token the pane's ctrl+x (or a newer build) cancels, then the build."""
        worker = get_current_worker()
        token = CancelToken(poll=lambda: worker.is_cancelled)
        self.app.call_from_thread(self._show_indexing, resolved, token)
        if rebuild:
            self.session.forget(resolved)
        report = self.session.index(resolved, self._post_progress, token)
        self.post_message(self.Indexed(resolved, report))

    def _show_indexing(self, resolved: ResolvedStrategy, token: CancelToken) -> None:
        self._index_cancel = token
        self._stopping = False
        # Until the session's first report: it is opening the store (another task may hold it).
        self._index_progress = WorkProgress(Phase.LOAD, 0, 1, unit="store", label="the index")
        self.query_one("#index-row").add_class("-busy")
        self._render_index()
        question = self.query_one("#query-input", Input).value.strip()
        wait = f"; then “{visible(question, oneline=True)}” is asked" if question and self._pending else ""
        self._status(f"Indexing the tree with {visible(resolved.label, oneline=True)}{wait}. It goes on if you "
                     "leave this field or close the pane (the footer shows it).")
        self.refresh_bindings()

    def on_query_pane_progress(self, msg: query_messages.Progress) -> None:
        if not self._indexing():
            return  # a late message from a stopped run
        self._index_progress = msg.progress
        self._render_index()

    def _tick(self) -> None:
        # Only while the step has no rate: its elapsed time moves on. A measured line stays as the last report
        # left it (redrawn later, the rate would sag and the time left grow between two batches).
        p = self._index_progress
        if self._indexing() and p is not None and measuring(p):
            self._render_index()

    def _render_index(self) -> None:
        """The indexing line, its bar and the footer's words, from the latest report (and the clock)."""
        p = self._index_progress
        if p is None:
            return
        bar = self.query_one("#index-progress", ProgressBar)
        if p.phase in (Phase.LOAD, Phase.CHUNK) or p.total <= 0:
            bar.update(total=None, progress=0)  # one step of unknown length: the bar moves, no false 0%
        else:
            bar.update(total=p.total, progress=p.done)
        line = Text(progress_text(p))
        if self._stopping:
            line.append("  stopping after this batch…", style="bold #e5c07b")
            brief = "indexing: stopping"
        else:
            line.append(f"  ({STOP_HINT})", style="dim")
            # The footer's words say which job this is and how to stop it (its key list may be cut off).
            brief = progress_brief(p) if p.phase is Phase.INDEX else f"indexing: {progress_brief(p)}"
            brief += f" · {STOP_HINT}"
        self.query_one("#index-status", Label).update(line)
        self.post_message(self.IndexingChanged(brief))

    def on_query_pane_indexed(self, msg: query_messages.Indexed) -> None:
        self.query_one("#index-row").remove_class("-busy")
        self.post_message(self.IndexingChanged(None))
        self._index_cancel, self._index_progress, self._stopping = None, None, False
        self.refresh_bindings()
        r = msg.report
        if r.cancelled:
            written = f" after writing {r.upserted} of {plural(r.chunks, 'chunk')}" if r.chunks else ""
            self._status(Text(f"Indexing stopped{written}; what was written is kept. Enter resumes where it "
                              "stopped.", style="bold #e5c07b"))
            self._show_results_for()
            return
        self._status(f"Indexed {r.chunks} chunks with {visible(msg.resolved.label, oneline=True)} in {r.seconds:.1f}s "
                     f"({r.embedded} embedded, {r.cached} from cache, {r.unchanged} unchanged"
                     + (f", {r.truncated} truncated by the model" if r.truncated else "") + ").")
        # Search what the box holds now: the text may have changed while the tree was indexed (a stale question's
        # answer would be dropped anyway), and an emptied box asks nothing.
        question = self.query_one("#query-input", Input).value.strip()
        if (self._pending and question and self.resolved is not None
                and msg.resolved.fingerprint() == self.resolved.fingerprint()):
            self._pending = question
            self._start_search(question, self.resolved)

    def _start_search(self, question: str, resolved: ResolvedStrategy, *, submitted: bool = True) -> None:
        """Read the filters here, on the UI thread, and search in a worker.

        ``submitted``: asked with Enter (or again after indexing), not a pause in typing: an expected chunk set
        before any question belongs to the first question submitted.
        """
        path = self.current_path if self.query_one("#filter-file", Checkbox).value else None
        chapter = self.current_chapter if self.query_one("#filter-chapter", Checkbox).value else None
        self._status(f"searching “{visible(question, oneline=True)}”…")
        self._search_seq += 1
        self._search(question, resolved, path, chapter, self._expectation_for(question, submitted),
                     self.query_one("#query-input", Input), self._search_seq)

    def _expectation_for(self, question: str, submitted: bool) -> Expected | None:
        """The expected chunk to judge ``question`` against: the expectation, when it belongs to this question.

        One made for another question is dropped (the explorer clears it; the pane says so); one not yet tied to
        a question is tied to this one when it is submitted, and judged without being tied while it is typed.
        """
        exp = self.expected
        if exp is None or (self._dropped is not None and self._dropped[0] == exp):
            return None  # none, or dropped already (the explorer has yet to clear it)
        bound = self._expect_question
        if bound is None:
            if submitted:
                self._expect_question = question
            return exp
        if bound == question:
            return exp
        self._dropped = (exp, bound)
        self._expect_question = None
        self.post_message(self.ExpectationDropped(exp))
        self._show_verdict()
        return None

    @work(thread=True, exclusive=True, group="query", exit_on_error=False, name="search", description="search")
    def _search(self, question: str, resolved: ResolvedStrategy, path: str | None, chapter: str | None,
                expected: Expected | None, box: Input, seq: int) -> None:
        worker = get_current_worker()
        answer = self.session.ask(resolved, question, path=path, chapter=chapter, expected=expected)
        # A newer question (or the text changed since) makes this answer stale: drop it early; the UI thread
        # checks again when the answer arrives, since the box may change while the message waits.
        if worker.is_cancelled or box.value.strip() != question:
            return
        self.post_message(self.Answered(answer, seq, resolved))

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        """A failed index or search (no model, a store in use, a server down): say so here, notify once."""
        if event.worker.group == "index":
            self.refresh_bindings()  # the footer's "Stop indexing" follows the index worker
        if event.state != WorkerState.ERROR:
            return
        self.query_one("#index-row").remove_class("-busy")
        if event.worker.group == "index":
            self.post_message(self.IndexingChanged(None))
        err = event.worker.error
        self._status(visible(install_hint(err) or f"{event.worker.name} failed: {err}", oneline=True), error=True)
        self.post_message(WorkerFailed(event.worker))

    def on_query_pane_answered(self, msg: query_messages.Answered) -> None:
        # Only the answer to the latest search, for the text the box holds now, is shown.
        current = self.query_one("#query-input", Input).value.strip()
        if msg.search != self._search_seq or msg.answer.question != current:
            return
        self._answer_resolved = msg.resolved
        self._stale_reason = None
        self._show_answer(msg.answer)

    # --- showing -----------------------------------------------------------------------------------------------

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()  # "Results" (down) is off while the results have focus

    def _show_answer(self, a: Answer) -> None:
        self._answer = a
        self.refresh_bindings()  # "Results" (down) is offered once there are hits
        hits = self.query_one("#hits", OptionList)
        hits.clear_options()
        self._status(answer_status(a))
        self._show_results_for()
        hits.add_options(hit_options(a))
        self._show_verdict()

    def _show_results_for(self) -> None:
        """The line over the results: the question and the strategy that made them, and whether they still stand
        (the strategy changed since, or its index was rebuilt or stopped): then Enter asks again."""
        if not self.query("#results-for"):
            return
        line = self.query_one("#results-for", Static)
        a, made_by, now = self._answer, self._answer_resolved, self.resolved
        line.set_class(a is not None, "-shown")
        hits = self.query_one("#hits", OptionList)
        if a is None:
            hits.remove_class("-stale")
            return
        changed = made_by is not None and now is not None and made_by.fingerprint() != now.fingerprint()
        t = Text.assemble(("results for ", "dim"), (f"“{visible(a.question, oneline=True)}”", "bold"),
                          (" from ", "dim"), (strategy_words(made_by, now), "bold #58a6ff"),
                          (" · ", "dim"), (f"{a.search_mode} search", "bold"))
        stale = None
        if changed:
            stale = f"strategy changed to {strategy_words(now, made_by)}"
        elif a.search_mode != self.session.search_mode:
            stale = f"search changed to {self.session.search_mode}"
        elif self._stale_reason is not None:
            stale = self._stale_reason
        if stale is not None:
            t.append(f" — {stale}; Enter to ask again", style="bold #e5c07b")
        line.update(t)
        hits.set_class(stale is not None, "-stale")

    def watch_resolved(self, old: ResolvedStrategy | None, new: ResolvedStrategy | None) -> None:
        """Another strategy or parameter set: the results shown were made by the one before, and say so; when the
        new one is indexed already, the question is asked again at once (a search costs milliseconds)."""
        self._show_results_for()
        if new is None or self._answer is None or self._answer_resolved is None:
            return
        if self._answer_resolved.fingerprint() == new.fingerprint():
            return
        self._ask_again()

    def watch_expected(self, new: Expected | None) -> None:
        self._adopt_expected()
        self._show_verdict()

    def _adopt_expected(self) -> None:
        """A new expectation belongs to its own question, else to the question in the box, else to the next one
        submitted."""
        exp = self.expected
        if exp is None:
            self._expect_question = None
            return
        self._dropped = None
        if not self.query("#query-input"):
            self._expect_question = exp.question
            return
        box = self.query_one("#query-input", Input)
        if exp.question and box.value.strip() != exp.question:
            # Made for a question (a probe's missed heading, picked in the evaluation view): that question goes
            # in the box, asked as soon as the index is there.
            box.value = exp.question
        self._expect_question = exp.question or box.value.strip() or None

    def _show_verdict(self) -> None:
        if not self.query("#expect-status"):
            return
        box = self.query_one("#expect-status", Static)
        box.set_class(self.expected is not None or self._dropped is not None, "-shown")
        line = verdict_line(self.expected, self._dropped, self._answer, self.resolved, self._expect_question)
        if line is not None:
            box.update(line)

    @on(OptionList.OptionSelected, "#hits")
    def _hit_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        oid = event.option.id
        if self._answer is None or not oid or not oid.startswith("hit-"):
            return
        hit = self._answer.hits[int(oid[4:])]
        # A parent (small-to-big) opens at the chunk that found it: the explorer selects chunks, not parents.
        self.post_message(self.JumpTo(self, getattr(hit, "child", hit)))
