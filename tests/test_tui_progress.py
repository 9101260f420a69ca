"""Long work in the app says what it does from its first second (phase, done/total, rate, time left) and stops
on a visible key, keeping what finished: the query pane's index build (and the footer behind a closed pane) and
the evaluation view's probe. Driven by doubles that report `Progress` the way the core does, at a pace the test
sets, and that stop only when their `CancelToken` says so."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from chunkscope.config.reader import parse_config
from chunkscope.evaluation.evaluate import EvalResult
from chunkscope.progress import CancelToken, Phase, Progress
from chunkscope.retrieval.store import IndexReport
from chunkscope.evaluation.probe import ProbeOutcome, ProbeResult

pytest.importorskip("textual")

from textual.widgets import DataTable, Input  # noqa: E402

from chunkscope.tui.screens.evaluation import EvaluationScreen  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.widgets.key_bar import KeyBar  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 50)


class Gate:
    """A step the test lets finish: the worker thread waits on it, the test opens it."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()

    def pass_(self, timeout: float = 20.0) -> None:
        self.reached.set()
        assert self.go.wait(timeout), "the test never opened the gate"


class SlowEmbedder:
    """The embedder's surface the session uses: loading takes until the test opens ``load_gate``; embedding the
    probe's questions reports a batch measured over two seconds and then waits for ``embed_gate``."""

    def __init__(self) -> None:
        self.loaded = False
        self.load_gate = Gate()
        self.embed_gate = Gate()

    def load(self) -> "SlowEmbedder":
        self.load_gate.pass_()
        self.loaded = True
        return self

    def embed(self, texts, *, on_progress=None, cancel=None, label="", token_counts=None):
        first = Progress(Phase.EMBED, 0, len(texts), unit="texts", label=label, started=time.monotonic() - 2.0)
        if on_progress is not None:
            on_progress(first.advanced(len(texts) // 2))
        self.embed_gate.pass_()
        return SimpleNamespace(vectors=[], stats=SimpleNamespace(misses=len(texts), hits=0))


class SlowRetriever:
    """The retriever's surface `SearchSession.index` uses: chunking waits for ``chunk_gate``; indexing writes 40
    of 100 points (measured over four seconds: 10/s, 6 s left), then waits until it is told to stop."""

    def __init__(self) -> None:
        self.embedder = SlowEmbedder()
        self.store = object()
        self.manifest = None  # no manifest: the session chunks the whole tree first, as this test waits for
        self.chunk_gate = Gate()
        self._chunks: list = []
        self.cancel: CancelToken | None = None
        self.stopped = threading.Event()

    @property
    def chunks(self) -> list:
        self.chunk_gate.pass_()
        return self._chunks

    def in_step(self) -> None:
        return None  # no manifest vouches for the tree: it is chunked and indexed

    def ensure_indexed(self, on_progress, cancel, *, label: str = "") -> IndexReport:
        self.cancel = cancel
        started = Progress(Phase.INDEX, 0, 100, unit="points", label=label, started=time.monotonic() - 4.0)
        on_progress(started.advanced(40))
        deadline = time.monotonic() + 30
        while not cancel.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
        self.stopped.set()
        return IndexReport(chunks=100, upserted=40, cancelled=cancel.cancelled)


def index_line(pane) -> str:
    return str(pane.query_one("#index-status").render())


async def test_indexing_says_each_step_from_the_first_second_and_ctrl_x_stops_it_behind_a_closed_pane(monkeypatch):
    app = make_app(strategy="recursive")  # the label the lines below name
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the explorer")
        fake = SlowRetriever()
        monkeypatch.setattr(ex.search, "retriever", lambda resolved: fake)
        files = len(ex.docs.documents)
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="the query input")
        pane = ex.query_one("#query-pane")
        footer = ex.query_one(KeyBar)
        try:
            await pilot.press(*"pelvis", "enter")
            # Chunking the tree, before any vector: said as such, with its count of files.
            await wait_for(pilot, lambda: fake.chunk_gate.reached.is_set()
                           and f"chunking recursive: 0/{files} files" in index_line(pane), what="chunking")
            assert "indexing: chunking 0/" in footer.status
            fake.chunk_gate.go.set()
            # The model loads (seconds, no count): said, with the time it has taken so far, moving on its own.
            await wait_for(pilot, lambda: "loading the embedding model" in index_line(pane), what="the model")
            assert "loading the embedding model" in footer.status and "ctrl+x stops" in footer.status
            await wait_for(pilot, lambda: "1 s so far" in index_line(pane), timeout=5,
                           what="the elapsed time to move on")
            fake.embedder.load_gate.go.set()
            # The store's reports: phase, counts, rate and time left; in the footer too, with the key that stops it.
            await wait_for(pilot, lambda: "40/100 points" in index_line(pane), what="the first batch")
            line = index_line(pane)
            assert "indexing recursive: 40/100 points" in line and "/s" in line and " left" in line, line
            assert footer.status.startswith("indexing 40/100 · ") and " left" in footer.status
            # Both Escapes: out of the field, then the pane closes; the build goes on and the footer offers the stop.
            await pilot.press("escape", "escape")
            assert not ex.pane_open
            assert "Stop indexing" in footer.render().plain or "ctrl+x stops" in footer.status
            await pilot.press("ctrl+x")
            await wait_for(pilot, lambda: fake.stopped.is_set(), what="the build to see its stop")
            assert fake.cancel is not None and fake.cancel.cancelled
            await wait_for(pilot, lambda: footer.status == "", what="the footer to let go")
            status = str(pane.query_one("#query-status").render())
            assert "Indexing stopped after writing 40 of 100 chunks" in status and "kept" in status
            assert not ex.search.is_indexed(ex.resolved)
        finally:
            for gate in (fake.chunk_gate, fake.embedder.load_gate, fake.embedder.embed_gate):
                gate.go.set()


class SlowProbe:
    """`probe.probe`'s double: the first strategy finishes (reported as the core does, within the probe's
    outer report), the second writes 30 of 60 points and waits until it is stopped."""

    def __init__(self) -> None:
        self.cancel: CancelToken | None = None
        self.strategies: list[str] = []

    def __call__(self, tree, strategies, *, k, probe_set, embedder, store, on_progress, cancel, site_url=None,
                 search_mode="dense", parent=None):
        self.cancel = cancel
        self.strategies = [label for label, _ in strategies]
        n = len(probe_set.sections)
        outer = Progress(Phase.PROBE, 0, len(strategies), unit="strategies", started=time.monotonic() - 6.0)
        result = ProbeResult(k, tuple(sorted({1, k})), probe_set, [])
        label, strategy = strategies[0]
        result.outcomes.append(ProbeOutcome(label, strategy.name, dict(strategy.params), 12, {f"hit@{k}": 1.0},
                                            [True] * n, [1] * n, [None] * n, [False] * n,
                                            eval=EvalResult(label, {}, [])))
        outer = Progress(Phase.PROBE, 1, outer.total, unit="strategies", started=outer.started,
                         label=strategies[1][0])
        step = Progress(Phase.INDEX, 0, 60, unit="points", label=strategies[1][0], started=time.monotonic() - 3.0)
        on_progress(step.advanced(30).within(outer))
        deadline = time.monotonic() + 30
        while not cancel.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
        result.cancelled = cancel.cancelled
        return result


async def test_the_probe_says_each_step_and_ctrl_x_keeps_the_strategies_that_finished(monkeypatch):
    import chunkscope.evaluation.probe as tuning

    cfg = parse_config({"strategy": "recursive",
                        "presets": {"small": {"strategy": "recursive", "chunk_size": 40, "chunk_overlap": 0}}})
    app = make_app(config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and ex.result is not None,
                       what="the explorer")
        fake = SlowRetriever()
        probe = SlowProbe()
        monkeypatch.setattr(ex.search, "retriever", lambda resolved: fake)
        monkeypatch.setattr(tuning, "probe", probe)
        gates = (fake.embedder.load_gate, fake.embedder.embed_gate)
        try:
            await pilot.press("v")
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation view")
            screen = app.screen
            status = screen.query_one("#eval-status")
            footer = screen.query_one(KeyBar)
            # Before the first strategy: the model loads, said at once, with the time it takes.
            await wait_for(pilot, lambda: "loading the embedding model" in str(status.render()), what="the model")
            assert "probing 1/2 strategies" in str(status.render())
            assert "Stop" in footer.render().plain and "ctrl+x stops" in str(status.render())
            await wait_for(pilot, lambda: "1 s so far" in str(status.render()), timeout=5,
                           what="the elapsed time to move on")
            fake.embedder.load_gate.go.set()
            # The questions are embedded (cached for the probe): counted, with a rate and time left.
            await wait_for(pilot, lambda: "embedding questions:" in str(status.render()), what="the questions")
            text = str(status.render())
            assert "/s" in text and " left" in text, text
            fake.embedder.embed_gate.go.set()
            # The core's own reports: which strategy of how many, the step's counts, rate and time left.
            await wait_for(pilot, lambda: "indexing small: 30/60 points" in str(status.render()),
                           what="the second strategy")
            text = str(status.render())
            assert "probing 2/2 strategies (small)" in text and "/s" in text and " left" in text, text
            await pilot.press("ctrl+x")
            await wait_for(pilot, lambda: screen.result is not None, what="the stopped probe's result")
            assert probe.cancel is not None and probe.cancel.cancelled
            text = str(status.render())
            assert "stopped: 1 of 2 strategies finished (recursive)" in text, text
            # What finished is shown; the view stays open, and the stop key is no longer offered.
            table = screen.query_one("#eval-table", DataTable)
            assert [str(c.label) for c in table.columns.values()] == ["metric", "recursive"]
            assert "STOPPED" in str(screen.query_one("#eval-header").render())
            assert isinstance(app.screen, EvaluationScreen)
            assert "Stop" not in footer.render().plain
        finally:
            for gate in gates:
                gate.go.set()


async def test_the_probe_says_it_waits_for_an_index_build_and_ctrl_x_stops_the_wait(monkeypatch):
    app = make_app(strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the explorer")
        fake = SlowRetriever()
        monkeypatch.setattr(ex.search, "retriever", lambda resolved: fake)
        await pilot.press("slash")
        await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                       what="the query input")
        try:
            await pilot.press(*"pelvis", "enter")
            await wait_for(pilot, lambda: fake.chunk_gate.reached.is_set(), what="the index build to hold the store")
            await pilot.press("escape", "v")
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation view")
            screen = app.screen
            status = screen.query_one("#eval-status")
            await wait_for(pilot, lambda: "waiting for indexing recursive to finish" in str(status.render()),
                           what="the wait said")
            await pilot.press("ctrl+x")
            await wait_for(pilot, lambda: screen.result is not None, what="the wait to stop")
            assert screen.result.cancelled and not screen.result.outcomes
            assert "stopped: 0 of 1 strategy finished" in str(status.render())
        finally:
            for gate in (fake.chunk_gate, fake.embedder.load_gate, fake.embedder.embed_gate):
                gate.go.set()
