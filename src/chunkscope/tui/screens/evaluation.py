"""Evaluation: the label-free probe's metric table for the current strategy and every configured preset (key v), or
for two configurations picked side by side (key V, `PickPairScreen`), and the sections each one missed.

Metrics run down, strategies across (as ``chunkscope eval`` prints them). The probe asks every section heading
and scores finding that section's body, so it needs no labelled queries. It runs in one thread worker using the
query pane's embedder and store (``SearchSession.probe``): a local Qdrant folder can be opened once per process,
and the session's lock keeps the store to one caller at a time. Its phase, counts, rate and time left show from
the first second; ctrl+x stops it and keeps the strategies that finished. Enter on a missed section closes the
view and opens it in the source, under the strategy that missed it, with the chunk it was judged on selected;
] and [ jump to the next and previous strategy's misses (a real book lists hundreds per strategy).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState, get_current_worker

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import UnknownStrategy
from chunkscope.safe_text import visible
from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.document.loader import DocsTree
from chunkscope.evaluation.regions import Region
from chunkscope.evaluation.verdicts import CUT_OFF, verdict_words
from chunkscope.progress import CancelToken, Phase, format_seconds
from chunkscope.progress import Progress as WorkProgress
from chunkscope.wording import plural
from chunkscope.tui.headless.search import Expected, SearchSession, install_hint, measuring, progress_text
from chunkscope.tui.headless.session import cut_file, resolve
from chunkscope.tui.widgets.key_bar import KeyBar

#: Shown when no sweep ran in this process (``tuning`` keeps no sweep result between calls).
SWEEP_HINT = "run `chunkscope sweep DOCS --strategy NAME --grid param=a,b,…` to compare parameter sets"


def evaluation_strategies(config: Config, current: ResolvedStrategy) -> tuple[list[ResolvedStrategy], list[str]]:
    """The current strategy, then every preset (in config order), without duplicates; and presets that failed."""
    out = [current]
    seen = {current.fingerprint()}
    problems: list[str] = []
    for name in config.presets:
        try:
            r = resolve(config, name)
        except (ParamError, UnknownStrategy) as exc:
            problems.append(f"{name}: {exc}")
            continue
        # Same strategy and parameters (the current strategy *is* this preset): same chunks, asked once.
        if r.fingerprint() in seen:
            continue
        seen.add(r.fingerprint())
        out.append(r)
    return out, problems


@dataclass(frozen=True)
class Configuration:
    """One column of a side-by-side evaluation: a strategy with its parameters, and the search mode its questions
    are matched in, under a column name of its own (two columns may share a strategy and differ in mode)."""

    column: str
    #: The strategy as picked; its ``search`` is the mode (opening a miss in the explorer searches that way).
    resolved: ResolvedStrategy
    search: str

    def probed(self) -> ResolvedStrategy:
        """The strategy as the probe runs it: named by the column (the probe tells its outcomes apart by label)."""
        return replace(self.resolved, label=self.column)


def metric_names(k: int) -> list[str]:
    """The probe's metrics in table order (its ``ks`` are 1 and k)."""
    ks = sorted({1, k})
    return [f"hit@{n}" for n in ks] + ["mrr"] + [f"recall@{n}" for n in ks] + [f"ndcg@{n}" for n in ks]


def probe_rows(result: Any) -> list[tuple[str, list[float | int]]]:
    """(row name, one value per strategy) for a ``probe.ProbeResult``: chunks, metrics, misses, cut-off headings."""
    outs = result.outcomes
    rows: list[tuple[str, list[float | int]]] = [("chunks", [o.chunks for o in outs])]
    rows += [(m, [o.metrics.get(m, 0.0) for o in outs]) for m in metric_names(result.k)]
    rows += [("misses", [o.misses for o in outs]), ("heading cut off", [sum(o.cut_off) for o in outs])]
    return rows


@dataclass(frozen=True)
class Missed:
    """A probe question one strategy missed: the section asked, where it is, the verdict and its rank.

    ``chunk`` is the span of the chunk the miss was judged on (the best-ranked chunk holding the section's body,
    or part of it); None when no chunk of that strategy overlaps the body.
    """

    resolved: ResolvedStrategy
    path: str
    line: int
    heading: str
    query: str
    start: int  # where the section's body starts: where to go when no chunk was judged
    reason: str
    rank: int | None
    detail: str
    chunk: tuple[int, int] | None
    #: The verdict as ``probe`` prints it (`verdicts.verdict_words`): reason, rank, score.
    words: str = ""
    #: The section's body (its heading line named): the answer an expectation of ``chunk`` is judged against.
    region: Region | None = None
    #: The column (probe label) that missed it: the strategy's label unless two configurations are compared.
    column: str = ""


def _column_strategy(label: str, by_label: dict[str, ResolvedStrategy],
                     originals: dict[str, ResolvedStrategy]) -> ResolvedStrategy | None:
    """The strategy of a column: its own, or for a parent-level column (``… · parent=section``, a configured
    parent) its chunks' (its misses, outside-parent among them, open under that strategy)."""
    found = originals.get(label) or by_label.get(label)
    if found is None:
        base, sep, _ = label.rpartition(" · parent=")
        if sep:
            found = originals.get(base) or by_label.get(base)
    return found


def missed_sections(result: Any, strategies: list[ResolvedStrategy],
                    originals: dict[str, ResolvedStrategy] | None = None) -> list[Missed]:
    """Every (strategy, section) the probe missed, strategy by strategy, sections in reading order.

    ``originals``: column label -> the strategy as picked, for columns named apart from their strategy (a miss
    opens under the strategy, not under the column's name).
    """
    by_label = {r.label: r for r in strategies}
    originals = originals or {}
    out: list[Missed] = []
    for o in result.outcomes:
        resolved = _column_strategy(o.label, by_label, originals)
        if resolved is None or o.eval is None:
            continue
        for s, q in zip(result.sections, o.eval.per_query):
            if q.hit:
                continue
            judged = (q.expected.start, q.expected.end) if q.expected is not None else None
            reason = CUT_OFF if q.cut_off else q.reason or "missed"
            out.append(Missed(resolved, s.path, s.line, s.heading, s.query, s.start, reason, q.rank, q.detail,
                              judged, q.words, s.region(), o.label))
    return out


def missed_questions(results: list[Any], strategies: list[ResolvedStrategy],
                     originals: dict[str, ResolvedStrategy] | None = None) -> list[Missed]:
    """Every (strategy, labelled question) ``eval`` missed (`EvalResult`s), as misses the list opens like the
    probe's: the question is the heading, its expected region the answer. Grouped as ``eval · <column>``."""
    by_label = {r.label: r for r in strategies}
    originals = originals or {}
    out: list[Missed] = []
    for res in results:
        resolved = _column_strategy(res.strategy_label, by_label, originals)
        if resolved is None:
            continue
        for q in res.per_query:
            if q.hit:
                continue
            judged = (q.expected.start, q.expected.end) if q.expected is not None else None
            out.append(Missed(resolved, q.region.path, q.line, q.query, q.query, q.region.start, q.reason or "missed",
                              q.rank, q.detail, judged, q.words, q.region, f"{EVAL_PREFIX}{res.strategy_label}"))
    return out


def eval_rows(results: list[Any], columns: list[str], k: int) -> list[tuple[str, list[float | int | None]]]:
    """(row name, one value per column; None where that column was not evaluated) for ``eval``'s results."""
    by_label = {r.strategy_label: r for r in results}
    got = [by_label.get(c) for c in columns]
    rows: list[tuple[str, list[float | int | None]]] = [
        (f"{EVAL_PREFIX}{m}", [r.metrics.get(m, 0.0) if r is not None else None for r in got])
        for m in metric_names(k) if any(r is not None and m in r.metrics for r in got)]
    rows.append((f"{EVAL_PREFIX}misses", [sum(1 for q in r.per_query if not q.hit) if r is not None else None
                                          for r in got]))
    return rows


#: How the rows and groups of misses of labelled questions are named (the probe's have no prefix).
EVAL_PREFIX = "eval · "


def missed_text(m: Missed) -> Text:
    """Two lines for one miss, readable at 80 columns: the heading, reason and rank; then where it is and why."""
    t = Text()
    t.append("✖ ", style="bold #ff5f5f")
    t.append(visible(m.heading, oneline=True), style="bold")
    # The core's words, as ``probe`` prints them: one verdict everywhere.
    t.append(f"  {m.words or verdict_words(m.reason, m.rank)}", style="#ff8787")
    t.append(f"\n   {visible(m.path, oneline=True)}:{m.line}", style="#58a6ff")
    if m.detail and not m.detail.startswith("rank "):  # "rank N" is said on the first line
        t.append(f" · {visible(m.detail, oneline=True)}", style="dim")
    return t


#: Option id prefix of a strategy's line in the missed list (the misses under it are ``miss-N``).
GROUP_PREFIX = "group-"


class MissedList(OptionList):
    """The sections each strategy missed, under a line per strategy; Enter opens one in the source, ] and [ jump
    between the strategies (said in the footer)."""

    # Room for two misses even on a 24-row terminal (the metric table above gives rows back, and scrolls).
    DEFAULT_CSS = """
    MissedList { height: 1fr; min-height: 6; }
    """

    BINDINGS = [
        Binding("enter", "select", "Open in source", id="evaluation.open-missed",
                tooltip="close this view and open the section in the source, under the strategy that missed it, "
                        "with the chunk it was judged on selected and expected for its question"),
        Binding("right_square_bracket", "jump_group(1)", "Next strategy", id="evaluation.next-strategy",
                tooltip="the first miss of the next strategy (after the last one: the first strategy again)"),
        Binding("left_square_bracket", "jump_group(-1)", "Prev strategy", id="evaluation.prev-strategy",
                tooltip="the first miss of the previous strategy (before the first one: the last strategy)"),
    ]

    def group_starts(self) -> list[int]:
        """The option index of each strategy's first miss (a strategy with no miss has none)."""
        starts = []
        for i, option in enumerate(self.options[:-1]):
            if option.id and option.id.startswith(GROUP_PREFIX) and not self.options[i + 1].disabled:
                starts.append(i + 1)
        return starts

    def action_jump_group(self, direction: int) -> None:
        """Highlight the first miss of the next (1) or previous (-1) strategy, its line shown above it."""
        starts = self.group_starts()
        if not starts:
            return
        here = self.highlighted
        # The group holding the highlight: the last one starting at or before it (-1: none is highlighted).
        current = -1 if here is None else sum(1 for s in starts if s <= here) - 1
        if direction > 0:
            target = starts[(current + 1) % len(starts)]
        else:
            target = starts[current - 1] if current >= 1 else starts[-1]
        self.highlighted = target
        self.scroll_to_highlight(top=True)
        self.scroll_to(y=max(self.scroll_y - 1, 0), animate=False, immediate=True)  # the strategy's own line


def probe_header(result: Any) -> str:
    ps = result.probe_set
    lo, hi = ps.levels
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(ps.skipped.items()) if n)
    text = (f"probe: {len(ps.sections)} section headings as queries (levels {lo}-{hi}; answer = the section's body "
            f"within top {result.k}; no labels needed)")
    if skipped:
        text += f"; skipped: {skipped}"
    if result.cancelled:
        text += "; STOPPED before every strategy ran"
    return text


class EvaluationScreen(Screen):
    """The probe's metrics for the configured presets and the current strategy (or for the configurations given),
    and the last sweep's table."""

    CSS_PATH = "evaluation.tcss"

    BINDINGS = [
        Binding("escape,v", "close", "Back", id="evaluation.back",
                tooltip="stop the evaluation (if it runs) and go back to the explorer"),
        Binding("r", "rerun", "Run again", id="evaluation.rerun",
                tooltip="run the probe again on the same columns: the strategy in force when this view opened "
                        "and each configured preset"),
        Binding("ctrl+x", "stop", "Stop", id="evaluation.stop",
                tooltip="stop the probe between batches; the strategies that finished stay in the table (their "
                        "vectors and points are kept, so running it again starts where it stopped)"),
        Binding("m", "focus_missed", "Missed", id="evaluation.missed",
                tooltip="the sections each strategy missed: heading, file:line, the reason and the rank"),
    ]

    class Progress(Message):
        """How far the probe is: strategies done of all, and the step inside the current one."""

        def __init__(self, progress: WorkProgress) -> None:
            super().__init__()
            self.progress = progress

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, EvaluationScreen.Progress)

    class Finished(Message):
        """The probe's result (possibly stopped early)."""

        def __init__(self, result: Any) -> None:
            super().__init__()
            self.result = result

    class Evaluated(Message):
        """``eval``'s results on the labelled questions, one per configuration that finished."""

        def __init__(self, results: list[Any], cancelled: bool) -> None:
            super().__init__()
            self.results = results
            self.cancelled = cancelled

    def __init__(self, docs: DocsTree, config: Config, current: ResolvedStrategy, search: SearchSession,
                 sweep: Any = None, configurations: list[Configuration] | None = None,
                 queries: list[Any] | None = None, queries_name: str = "") -> None:
        """Args:
            configurations: the columns to probe, each in its own search mode (`PickPairScreen`); without them,
                the current strategy and every configured preset, in the app's search mode.
            queries: labelled questions (`QueryCase`s from ``queries_name``): after the probe, ``eval``'s metrics
                and misses on them join the table and the list.
        """
        super().__init__()
        self.docs = docs
        self.config = config
        self.search = search
        self.configurations = configurations
        self.problems: list[str] = []
        if configurations:
            self.strategies = [c.probed() for c in configurations]
        else:
            self.strategies, self.problems = evaluation_strategies(config, current)
        #: Column label -> the strategy as picked (a miss opens under it).
        self._originals = {c.column: c.resolved for c in configurations or []}
        self.queries = queries or []
        self.queries_name = queries_name
        #: ``eval``'s results on ``queries`` (None: not run yet, or no queries).
        self.eval_results: list[Any] | None = None
        self._started_eval = time.monotonic()
        self.sweep = sweep
        self.result: Any = None
        #: The running probe's stop token and its latest report (the status line is redrawn from it each second).
        self._cancel: CancelToken | None = None
        self._progress: WorkProgress | None = None
        self._stopping = False
        #: When the probe was started (the time it took is said with its result, model loading included).
        self._started = time.monotonic()
        #: The misses listed, by option id.
        self._missed: list[Missed] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="eval-top"):
            yield Static(id="eval-header")
            yield Static(id="eval-status")
            yield ProgressBar(id="eval-progress", show_eta=False)
        yield DataTable(id="eval-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="eval-missed-title")
        yield MissedList(id="eval-missed")
        yield Static(id="eval-sweep-title")
        yield DataTable(id="eval-sweep", cursor_type="row")
        yield KeyBar()

    def on_mount(self) -> None:
        columns = "configurations" if self.configurations else "strategies"
        self.query_one("#eval-table").border_title = f"probe: metrics × {columns}"
        self.query_one("#eval-missed").display = False
        self._show_sweep()
        for p in self.problems:
            self.notify(visible(p, oneline=True), title="preset skipped", severity="warning")
        self.action_rerun()
        self.query_one("#eval-table", DataTable).focus()
        # Until a step has a rate (the model loading, a first batch of long chunks: seconds), the status line says
        # how long it has run, redrawn each second.
        self.set_interval(1.0, self._tick, name="probe status")

    # --- the probe ---------------------------------------------------------------------------------------------

    def action_rerun(self) -> None:
        self.eval_results = None
        names = ", ".join(r.label for r in self.strategies)
        what = plural(len(self.strategies), "configuration") if self.configurations else \
            plural(len(self.strategies), "strategy", "strategies")
        self.query_one("#eval-header", Static).update(
            Text(f"probing {what} ({visible(names, oneline=True)})", style="bold"))
        self._progress = WorkProgress(Phase.PROBE, 0, len(self.strategies), unit="strategies")
        self._started = time.monotonic()
        self._stopping = False
        self.query_one("#eval-progress", ProgressBar).display = True
        self._show_progress()
        self.run_probe()

    def _post_progress(self, progress: WorkProgress) -> None:
        """The probe's progress, from its worker thread."""
        self.post_message(self.Progress(progress))

    def _worker_start(self) -> tuple[Worker[None], CancelToken, list[str] | None]:
        """In a probe's or an eval's worker thread: the worker, the token ctrl+x cancels (the result so far is
        shown; leaving the view or a rerun cancels the worker, and the result is dropped), and each side's search
        mode (None: the session's own)."""
        worker = get_current_worker()
        token = CancelToken(poll=lambda: worker.is_cancelled)
        self.app.call_from_thread(setattr, self, "_cancel", token)
        return worker, token, [c.search for c in self.configurations] if self.configurations else None

    @work(thread=True, exclusive=True, group="evaluate", exit_on_error=False,
          name="evaluation", description="evaluation")
    def run_probe(self) -> None:
        worker, token, modes = self._worker_start()
        result = self.search.probe(self.strategies, self._post_progress, token, modes)
        if not worker.is_cancelled:
            self.post_message(self.Finished(result))

    @work(thread=True, exclusive=True, group="evaluate", exit_on_error=False,
          name="evaluation on labelled questions", description="evaluation on labelled questions")
    def run_eval(self) -> None:
        worker, token, modes = self._worker_start()
        results, cancelled = self.search.evaluate(self.strategies, self.queries, self._post_progress, token, modes)
        if not worker.is_cancelled:  # ctrl+x cancels the token only: what finished is shown
            self.post_message(self.Evaluated(results, cancelled))

    def _probing(self) -> bool:
        return any(w.group == "evaluate" and w.is_running for w in self.workers)

    def action_stop(self) -> None:
        """ctrl+x: stop the probe after the batch in progress; the strategies that finished are shown."""
        if self._cancel is None or not self._probing() or self._stopping:
            return
        self._cancel.cancel()
        self._stopping = True
        self._show_progress()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            return self._probing() and not self._stopping  # offered (and in the footer) while the probe runs
        if action == "focus_missed":
            return bool(self._missed)
        return True

    def on_evaluation_screen_progress(self, msg: "EvaluationScreen.Progress") -> None:
        if not self._probing():
            return  # a late report from a stopped run
        self._progress = msg.progress
        self._show_progress()

    def _tick(self) -> None:
        # Only while the step has no rate (its elapsed time moves on); see `QueryPane._tick`.
        if self._probing() and self._progress is not None and measuring(self._progress):
            self._show_progress()

    def _show_progress(self) -> None:
        """The status line and the bar from the latest report: the whole probe's strategies and the step."""
        p = self._progress
        if p is None:
            return
        whole = p.outer or p
        bar = self.query_one("#eval-progress", ProgressBar)
        if p.phase is Phase.LOAD:
            bar.update(total=None, progress=0)  # one thing loading, of unknown length: the bar moves, no false 0%
        else:
            step = p.fraction if p.outer is not None and p.phase is not Phase.CHUNK else 0.0
            bar.update(total=max(whole.total, 1) * 100, progress=int((whole.done + step) * 100))
        line = Text(progress_text(p), style="italic")
        if self._stopping:
            line.append("  stopping after this batch…", style="bold #e5c07b")
        else:
            line.append("  (ctrl+x stops)", style="dim")
        self.query_one("#eval-status", Static).update(line)
        self.refresh_bindings()

    def on_evaluation_screen_finished(self, msg: "EvaluationScreen.Finished") -> None:
        self.result = r = msg.result
        self._cancel, self._progress = None, None
        self.query_one("#eval-progress", ProgressBar).display = False
        status = self.query_one("#eval-status", Static)
        if r.cancelled:
            done = ", ".join(o.label for o in r.outcomes) or "none"
            of = plural(len(self.strategies), "strategy", "strategies")
            status.update(Text(f"stopped: {len(r.outcomes)} of {of} finished "
                               f"({visible(done, oneline=True)}); r runs it again (what was embedded is kept)",
                               style="bold #e5c07b"))
        else:
            status.update(Text(f"done in {format_seconds(time.monotonic() - self._started)}", style="dim"))
        self._stopping = False
        self.refresh_bindings()
        header = self.query_one("#eval-header", Static)
        if not r.sections:
            header.update(Text("probe: no section heading with a body to ask at levels "
                               f"{r.probe_set.levels[0]}-{r.probe_set.levels[1]}", style="bold #e5c07b"))
        else:
            header.update(Text(probe_header(r), style="bold"))
        self._fill_table()
        self._show_missed(r)
        if self.queries and r.outcomes and not r.cancelled:
            self._start_eval()

    def _fill_table(self) -> None:
        """The probe's rows, then ``eval``'s when it ran: metrics down, configurations across, the best in green."""
        r = self.result
        table = self.query_one("#eval-table", DataTable)
        table.clear(columns=True)
        table.add_column("metric", key="metric")
        for i, o in enumerate(r.outcomes):
            table.add_column(visible(o.label, oneline=True), key=f"s{i}")
        several = len(r.outcomes) > 1
        rows: list[tuple[str, list[float | int | None]]] = [(name, [*values]) for name, values in probe_rows(r)]
        if self.eval_results is not None:
            rows += eval_rows(self.eval_results, [o.label for o in r.outcomes], r.k)
        for name, values in rows:
            higher_better = not name.endswith(("misses", "heading cut off", "chunks"))
            known = [v for v in values if v is not None]
            if not known or name == "chunks":
                best = None  # stopped before any strategy finished: a metric column only
            else:
                best = max(known) if higher_better else min(known)
            cells = [Text("–" if v is None else _fmt(v),
                          style="bold green" if several and best is not None and v == best else "", justify="right")
                     for v in values]
            table.add_row(Text(name, style="bold"), *cells, key=name)

    def _start_eval(self) -> None:
        of = plural(len(self.queries), "labelled question")
        self.query_one("#eval-status", Static).update(
            Text(f"asking {of} from {visible(self.queries_name, oneline=True)}…", style="italic"))
        self._progress = WorkProgress(Phase.EVALUATE, 0, len(self.strategies), unit="strategies")
        self._started_eval = time.monotonic()
        self.query_one("#eval-progress", ProgressBar).display = True
        self._show_progress()
        self.run_eval()

    def on_evaluation_screen_evaluated(self, msg: "EvaluationScreen.Evaluated") -> None:
        self._cancel, self._progress = None, None
        self._stopping = False
        self.eval_results = msg.results
        self.query_one("#eval-progress", ProgressBar).display = False
        of = plural(len(self.queries), "labelled question")
        name = visible(self.queries_name, oneline=True)
        if msg.cancelled:
            line = Text(f"eval stopped: {len(msg.results)} of {len(self.strategies)} finished on {of} from {name}; "
                        "r runs it all again", style="bold #e5c07b")
        else:
            line = Text(f"done; eval on {of} from {name} in "
                        f"{format_seconds(time.monotonic() - self._started_eval)}", style="dim")
        self.query_one("#eval-status", Static).update(line)
        self.refresh_bindings()
        if self.result is not None:
            self._fill_table()
            self._show_missed(self.result)

    # --- the missed sections -----------------------------------------------------------------------------------

    def _show_missed(self, result: Any) -> None:
        """Each strategy's misses under a line naming it; the list shows once there is a finished strategy."""
        self._missed = missed_sections(result, self.strategies, self._originals)
        # (group name, what was asked, how many) for each probe column, then each eval column.
        groups = [(o.label, "section", len(result.sections)) for o in result.outcomes]
        if self.eval_results:
            self._missed += missed_questions(self.eval_results, self.strategies, self._originals)
            groups += [(f"{EVAL_PREFIX}{r.strategy_label}", "question", len(self.queries)) for r in self.eval_results]
        listing = self.query_one("#eval-missed", MissedList)
        title = self.query_one("#eval-missed-title", Static)
        listing.clear_options()
        listing.display = bool(result.outcomes)
        if not result.outcomes:
            title.update("")
            return
        total = len(result.sections)
        counts = ", ".join(f"{visible(o.label, oneline=True)} {o.misses}" for o in result.outcomes)
        asked = ""
        if self.eval_results:
            mine_of = [sum(1 for q in r.per_query if not q.hit) for r in self.eval_results]
            asked = f"; missed questions of {len(self.queries)} (" + ", ".join(
                f"{visible(r.strategy_label, oneline=True)} {n}" for r, n in zip(self.eval_results, mine_of)) + ")"
        title.update(Text.assemble(("missed sections", "bold"), f" of {total} ({counts}){asked}",
                                   (" — m goes to the list, Enter opens one in the source, ] and [ jump between "
                                    "strategies" if self._missed else "", "dim")))
        options: list[Option] = []
        at = 0
        for g, (name, unit, of) in enumerate(groups):
            mine = [m for m in self._missed if m.column == name]
            options.append(Option(Text(f"{visible(name, oneline=True)}: {plural(len(mine), unit)} missed "
                                       f"of {of}", style="bold #e5c07b"), id=f"{GROUP_PREFIX}{g}", disabled=True))
            for m in mine:
                options.append(Option(missed_text(m), id=f"miss-{at}"))
                at += 1
        listing.add_options(options)
        self.refresh_bindings()

    def action_focus_missed(self) -> None:
        listing = self.query_one("#eval-missed", MissedList)
        listing.focus()
        if listing.highlighted is None:
            listing.action_first()  # the first miss: a strategy's line is never highlighted

    @on(OptionList.OptionSelected, "#eval-missed")
    def _missed_chosen(self, event: OptionList.OptionSelected) -> None:
        """Enter on a miss: leave with it; the explorer opens it (`ExplorerScreen.show_missed`)."""
        event.stop()
        oid = event.option.id
        if not oid or not oid.startswith("miss-"):
            return
        self.workers.cancel_group(self, "evaluate")
        self.dismiss(self._missed[int(oid[5:])])

    # --- the sweep ---------------------------------------------------------------------------------------------

    def _show_sweep(self) -> None:
        title = self.query_one("#eval-sweep-title", Static)
        table = self.query_one("#eval-sweep", DataTable)
        s = self.sweep
        if self.configurations and s is None:
            # Two configurations picked: the sweep's hint is beside the point, and the misses take its rows.
            title.display = table.display = False
            return
        if s is None:
            title.update(Text(SWEEP_HINT, style="dim"))
            table.display = False
            return
        src = "probe questions" if s.source == "probe" else "queries"
        title.update(Text(f"last sweep: {s.strategy}, {len(s.points)} grid points on {s.queries} {src}, "
                          f"ranked by {s.metric}", style="bold"))
        table.add_column("#", key="rank")
        for name in s.grid:
            table.add_column(visible(name, oneline=True), key=f"p:{name}")
        metrics = [s.metric] + [m for m in ("hit@1", f"hit@{s.k}", "mrr") if m != s.metric]
        for m in metrics:
            table.add_column(m, key=f"m:{m}")
        table.add_column("chunks", key="chunks")
        for rank, p in enumerate(s.ranked(), 1):
            table.add_row(str(rank), *[visible(str(p.params.get(n)), oneline=True) for n in s.grid],
                          *[_fmt(p.metrics.get(m, 0.0)) for m in metrics], str(p.chunks), key=str(p.index))
        for p in s.skipped:
            table.add_row("–", *[visible(str(p.params.get(n)), oneline=True) for n in s.grid],
                          *["" for _ in metrics], visible(p.status, oneline=True), key=str(p.index))

    # --- leaving, failures -------------------------------------------------------------------------------------

    def action_close(self) -> None:
        # The probe checks its token between batches, so it lets go of the store's lock soon after.
        self.workers.cancel_group(self, "evaluate")
        self.dismiss(None)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        self.refresh_bindings()  # "Stop" follows the probe's worker
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self._progress = None
            self.query_one("#eval-progress", ProgressBar).display = False
            self.query_one("#eval-status", Static).update(Text("the evaluation failed (see the notification)",
                                                               style="bold red"))
            text = install_hint(err, "The probe") or f"{type(err).__name__}: {err}"
            self.notify(visible(text, oneline=True), title="evaluation failed",
                        severity="error", timeout=8, markup=False)


def _fmt(v: float | int) -> str:
    return str(v) if isinstance(v, int) else f"{v:.3f}"


def judged_expectation(missed: Missed, doc: Any) -> Expected | None:
    """The chunk a miss was judged on, as an expectation for the section's question (what Enter on a miss marks
    in the explorer); None when no chunk was judged, or the file changed since and that chunk is gone.

    The file is cut here with the strategy that missed it (one file: milliseconds), for the chunk's index and line.
    """
    if missed.chunk is None:
        return None
    cut = cut_file(doc, missed.resolved)
    chunk = next((c for c in cut.chunks if (c.start, c.end) == missed.chunk), None)
    if chunk is None:
        return None
    return Expected(chunk.path, chunk.start, chunk.end, chunk.index, chunk.start_line, missed.resolved.label,
                    question=missed.query, answer=missed.region)
