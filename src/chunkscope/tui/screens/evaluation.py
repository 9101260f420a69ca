"""Evaluation: the label-free probe's metric table for the current strategy and every configured preset.

Metrics run down, strategies across (as ``chunkscope eval`` prints them). The probe asks every section heading
and scores finding that section's body, so it needs no labelled queries. It runs in one thread worker using the
query pane's embedder and store (``SearchSession``): a local Qdrant folder can be opened once per process, and
the session's lock keeps the store to one caller at a time.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker

from ...chunk import ParamError, UnknownStrategy
from ...safe_text import visible
from ...config import Config, ResolvedStrategy
from ...docs import DocsTree
from ...progress import CancelToken
from ...progress import Progress as WorkProgress
from ..search import SearchSession, install_hint
from ..session import resolve
from ..widgets.key_bar import KeyBar

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


def metric_names(k: int) -> list[str]:
    """The probe's metrics in table order (its ``ks`` are 1 and k)."""
    ks = sorted({1, k})
    return [f"hit@{n}" for n in ks] + ["mrr"] + [f"recall@{n}" for n in ks] + [f"ndcg@{n}" for n in ks]


def probe_rows(result: Any) -> list[tuple[str, list[float | int]]]:
    """(row name, one value per strategy) for a ``tuning.ProbeResult``: chunks, metrics, misses, cut-off headings."""
    outs = result.outcomes
    rows: list[tuple[str, list[float | int]]] = [("chunks", [o.chunks for o in outs])]
    rows += [(m, [o.metrics.get(m, 0.0) for o in outs]) for m in metric_names(result.k)]
    rows += [("misses", [o.misses for o in outs]), ("heading cut off", [sum(o.cut_off) for o in outs])]
    return rows


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
    """The probe's metrics for the configured presets and the current strategy, and the last sweep's table."""

    CSS_PATH = "evaluation.tcss"

    BINDINGS = [
        Binding("escape,v", "close", "Back", id="evaluation.back",
                tooltip="stop the evaluation (if it runs) and go back to the explorer"),
        Binding("r", "rerun", "Run again", id="evaluation.rerun",
                tooltip="run the probe again on the same columns: the strategy in force when this view opened "
                        "and each configured preset"),
    ]

    class Progress(Message):
        """How far the probe is: strategies done of all, and the step inside the current one."""

        def __init__(self, progress: WorkProgress) -> None:
            super().__init__()
            self.progress = progress

    class Finished(Message):
        """The probe's result (possibly stopped early)."""

        def __init__(self, result: Any) -> None:
            super().__init__()
            self.result = result

    def __init__(self, docs: DocsTree, config: Config, current: ResolvedStrategy, search: SearchSession,
                 sweep: Any = None) -> None:
        super().__init__()
        self.docs = docs
        self.config = config
        self.search = search
        self.strategies, self.problems = evaluation_strategies(config, current)
        self.sweep = sweep
        self.result: Any = None

    def compose(self) -> ComposeResult:
        with Vertical(id="eval-top"):
            yield Static(id="eval-header")
            yield ProgressBar(id="eval-progress", show_eta=False)
        yield DataTable(id="eval-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="eval-sweep-title")
        yield DataTable(id="eval-sweep", cursor_type="row")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#eval-table").border_title = "probe: metrics × strategies"
        self._show_sweep()
        for p in self.problems:
            self.notify(visible(p, oneline=True), title="preset skipped", severity="warning")
        self.action_rerun()
        self.query_one("#eval-table", DataTable).focus()

    # --- the probe ---------------------------------------------------------------------------------------------

    def action_rerun(self) -> None:
        names = ", ".join(r.label for r in self.strategies)
        self.query_one("#eval-header", Static).update(
            Text(f"probing {len(self.strategies)} strategies ({visible(names, oneline=True)})…", style="dim italic"))
        bar = self.query_one("#eval-progress", ProgressBar)
        bar.display = True
        bar.update(total=len(self.strategies) * 100, progress=0)
        self.run_probe()

    @work(thread=True, exclusive=True, group="evaluate", exit_on_error=False, name="evaluation")
    def run_probe(self) -> None:
        from ...tuning import probe

        worker = get_current_worker()
        pairs = [(r.label, r.strategy) for r in self.strategies]
        # The session's lock for the whole probe: the store is shared with the query pane and takes one caller.
        with self.search.lock:
            retriever = self.search.retriever(self.strategies[0])  # opens the app's embedder and store once
            result = probe(self.docs, pairs, k=self.config.k, embedder=retriever.embedder, store=retriever.store,
                           on_progress=lambda p: self.post_message(self.Progress(p)),
                           cancel=CancelToken(poll=lambda: worker.is_cancelled), site_url=self.config.site_url or None)
        if not worker.is_cancelled:
            self.post_message(self.Finished(result))

    def on_evaluation_screen_progress(self, msg: "EvaluationScreen.Progress") -> None:
        p = msg.progress
        whole = p.outer or p
        frac = p.fraction if p.outer is not None else 0.0
        bar = self.query_one("#eval-progress", ProgressBar)
        bar.update(total=max(whole.total, 1) * 100, progress=int((whole.done + frac) * 100))
        self.query_one("#eval-header", Static).update(Text(visible(p.describe(), oneline=True), style="dim italic"))

    def on_evaluation_screen_finished(self, msg: "EvaluationScreen.Finished") -> None:
        self.result = r = msg.result
        self.query_one("#eval-progress", ProgressBar).display = False
        header = self.query_one("#eval-header", Static)
        if not r.sections:
            header.update(Text("probe: no section heading with a body to ask at levels "
                               f"{r.probe_set.levels[0]}-{r.probe_set.levels[1]}", style="bold #e5c07b"))
        else:
            header.update(Text(probe_header(r), style="bold"))
        table = self.query_one("#eval-table", DataTable)
        table.clear(columns=True)
        table.add_column("metric", key="metric")
        for i, o in enumerate(r.outcomes):
            table.add_column(visible(o.label, oneline=True), key=f"s{i}")
        several = len(r.outcomes) > 1
        for name, values in probe_rows(r):
            higher_better = name not in ("misses", "heading cut off", "chunks")
            best = max(values) if higher_better else min(values) if name != "chunks" else None
            cells = [Text(_fmt(v), style="bold green" if several and best is not None and v == best else "",
                          justify="right") for v in values]
            table.add_row(Text(name, style="bold"), *cells, key=name)

    # --- the sweep ---------------------------------------------------------------------------------------------

    def _show_sweep(self) -> None:
        title = self.query_one("#eval-sweep-title", Static)
        table = self.query_one("#eval-sweep", DataTable)
        s = self.sweep
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
        # The probe checks `is_cancelled` between batches, so it lets go of the store's lock soon after.
        self.workers.cancel_group(self, "evaluate")
        self.app.pop_screen()

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self.query_one("#eval-progress", ProgressBar).display = False
            self.query_one("#eval-header", Static).update(Text("the evaluation failed (see the notification)",
                                                               style="bold red"))
            text = install_hint(err, "The probe") or f"{type(err).__name__}: {err}"
            self.notify(visible(text, oneline=True), title="evaluation failed",
                        severity="error", timeout=8, markup=False)


def _fmt(v: float | int) -> str:
    return str(v) if isinstance(v, int) else f"{v:.3f}"
