"""The query pane searching as you type and the lint pane's rule filter (Pilot-driven)."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from chunkscope.progress import Phase, Progress

from chunkscope.config.reader import parse_config

pytest.importorskip("textual")

from textual.widgets import Checkbox, Input, OptionList, Select  # noqa: E402

from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.headless.search import Answer  # noqa: E402
from chunkscope.tui.widgets import query_pane as query_pane_module  # noqa: E402
from chunkscope.tui.widgets.key_bar import KeyBar  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from tests.pilot import make_app, press_burst, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"
SIZE = (160, 50)
FK = "module-1-foundations/02-forward-kinematics.md"





async def ready(pilot, app: ChunkscopeApp) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="first file and tree")


async def open_query(pilot, app: ChunkscopeApp):
    """Open the query pane with the slash key; returns (pane, its input)."""
    ex = app.explorer
    await pilot.press("slash")
    await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                   what="the query input")
    return ex.query_one("#query-pane"), ex.query_one("#query-input", Input)


def fake_hit(question: str, path: str, kept: bool = True) -> SimpleNamespace:
    """A hit as the retriever returns one, its text naming the question it answers."""
    return SimpleNamespace(path=path, start=0, end=10, start_line=1, rank=1, score=0.9, kept=kept, citation="",
                           heading_path=["Title"], embed_tokens=None, tokens=10, text=f"answer to {question}")


class FakeSearch:
    """Stands in for the session's index and search (no model): records calls, can hold a question back."""

    def __init__(self, session) -> None:
        self.session = session
        self.indexed_calls: list[str] = []
        self.asked: list[str] = []
        self.hold: dict[str, threading.Event] = {}
        #: Where the hits point, and whether they pass the threshold.
        self.path = "a.md"
        self.kept = True
        #: When set, indexing reports the model loading (as the session does before the first batch) and waits
        #: for this before writing its 10 points.
        self.index_gate: threading.Event | None = None
        self.index_started = threading.Event()

    def index(self, resolved, on_progress, cancel):
        self.indexed_calls.append(resolved.label)
        self.index_started.set()
        if self.index_gate is not None:
            on_progress(Progress(Phase.LOAD, 0, 1, unit="model", label="the embedding model"))
            self.index_gate.wait(10)
            started = Progress(Phase.INDEX, 0, 10, unit="points", label=resolved.label)
            on_progress(started)
            on_progress(started.advanced(10))
        self.session.indexed.add(resolved.fingerprint())
        return SimpleNamespace(cancelled=False, upserted=1, chunks=1, seconds=0.0, embedded=1, cached=0,
                               unchanged=0, truncated=0)

    def ask(self, resolved, question, *, path=None, chapter=None, expected=None) -> Answer:
        self.asked.append(question)
        gate = self.hold.get(question)
        if gate is not None:
            gate.wait(10)
        return Answer(question, [fake_hit(question, self.path, self.kept)], 0.2, 5, resolved.label)


def install_fake(app: ChunkscopeApp, monkeypatch) -> FakeSearch:
    session = app.explorer.search
    fake = FakeSearch(session)
    monkeypatch.setattr(session, "index", fake.index)
    monkeypatch.setattr(session, "ask", fake.ask)
    return fake


# --- query as you type ----------------------------------------------------------------------------------------


async def test_typing_before_any_index_starts_nothing_and_enter_still_indexes(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        fake = install_fake(app, monkeypatch)
        pane, box = await open_query(pilot, app)
        await pilot.press(*"pelvis")
        await pilot.pause(query_pane_module.DEBOUNCE_SECONDS + 0.3)
        assert fake.indexed_calls == [] and fake.asked == []
        assert not any(w.group in ("index", "query") for w in app.workers)
        assert not app.explorer.search.indexed
        assert "Press Enter to index" in str(pane.query_one("#query-status").render())
        # Enter builds the index, then searches at once.
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="the answer after Enter")  # noqa: SLF001
        assert fake.indexed_calls == [app.explorer.resolved.label] and fake.asked == ["pelvis"]


async def test_typing_searches_without_enter_and_a_stale_answer_is_never_shown(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        fake = install_fake(app, monkeypatch)
        ex = app.explorer
        ex.search.indexed.add(ex.resolved.fingerprint())  # the index exists
        pane, box = await open_query(pilot, app)
        shown: list[str] = []
        show = pane._show_answer  # noqa: SLF001

        def record(answer: Answer) -> None:
            shown.append(answer.question)
            show(answer)

        monkeypatch.setattr(pane, "_show_answer", record)
        # One pause after the keystrokes: one search, no Enter. (Sent as one burst: on a loaded machine Pilot's
        # key-by-key presses can leave a gap longer than the pause, which would search "kn" first.)
        await press_burst(pilot, *"knee")
        await wait_for(pilot, lambda: shown == ["knee"], what="results while typing")
        assert fake.asked == ["knee"]
        hits = pane.query_one("#hits", OptionList)
        assert hits.option_count >= 1 and "answer to knee" in str(hits.get_option_at_index(0).prompt)
        # A slow search for "pelvis" is overtaken by a newer keystroke: its late answer must not be shown.
        gate = fake.hold["pelvis"] = threading.Event()
        box.value = ""
        await press_burst(pilot, *"pelvis")
        await wait_for(pilot, lambda: fake.asked[-1:] == ["pelvis"], what="the slow search to start")
        await press_burst(pilot, "space", *"joint")
        gate.set()  # "pelvis" answers now, after the box moved on
        await wait_for(pilot, lambda: shown[-1:] == ["pelvis joint"], what="the newer answer")
        await pilot.pause(0.2)
        assert "pelvis" not in shown and shown == ["knee", "pelvis joint"]
        assert pane._answer.question == "pelvis joint"  # noqa: SLF001
        assert "answer to pelvis joint" in str(hits.get_option_at_index(0).prompt)


async def test_emptying_the_box_clears_the_results_and_searches_nothing(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        fake = install_fake(app, monkeypatch)
        ex = app.explorer
        ex.search.indexed.add(ex.resolved.fingerprint())
        pane, box = await open_query(pilot, app)
        await pilot.press(*"hip")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        await pilot.press("backspace", "backspace", "backspace", "space", "space")
        await pilot.pause(query_pane_module.DEBOUNCE_SECONDS + 0.3)
        assert pane._answer is None and pane.query_one("#hits", OptionList).option_count == 0  # noqa: SLF001
        assert fake.asked == ["hip"]


async def test_down_from_the_question_highlights_the_first_result_and_enter_jumps_to_it(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        fake = install_fake(app, monkeypatch)
        fake.path, fake.kept = FK, False  # under the threshold: the list starts with the (disabled) threshold line
        ex = app.explorer
        ex.search.indexed.add(ex.resolved.fingerprint())
        pane, box = await open_query(pilot, app)
        await pilot.press(*"knee", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        hits = pane.query_one("#hits", OptionList)
        assert hits.get_option_at_index(0).disabled  # the threshold line comes first
        assert "Results" in ex.query_one(KeyBar).render().plain  # the footer offers the way down
        await pilot.press("down")
        assert hits.has_focus and hits.highlighted is not None
        assert hits.get_option_at_index(hits.highlighted).id == "hit-0"
        # The footer says what Enter does there; down moves within the results now.
        assert "Jump to source" in ex.query_one(KeyBar).render().plain
        await pilot.press("down")
        assert hits.has_focus and hits.get_option_at_index(hits.highlighted).id == "hit-0"  # the only hit
        await pilot.press("up", "up")
        assert hits.has_focus and hits.get_option_at_index(hits.highlighted).id == "hit-0"  # never the line
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == FK and ex.result.doc.path == FK and ex.selected == 0,
                       what="the jump to the hit's chunk")


async def test_indexing_says_the_model_loads_and_goes_on_behind_escape(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        fake = install_fake(app, monkeypatch)
        gate = fake.index_gate = threading.Event()
        ex = app.explorer
        pane, box = await open_query(pilot, app)
        index_status = pane.query_one("#index-status")
        footer = ex.query_one(KeyBar)
        try:
            await pilot.press(*"pelvis")
            assert "Press Enter to index" in str(pane.query_one("#query-status").render())
            await pilot.press("enter")
            # Nothing written yet: the row says the model is loading, not a stuck "0% 0/10".
            await wait_for(pilot, lambda: fake.index_started.is_set()
                           and "loading the embedding model" in str(index_status.render()), what="the first progress")
            assert "0/10" not in str(index_status.render())
            status = str(pane.query_one("#query-status").render())
            assert "Press Enter" not in status and "Indexing the tree" in status
            assert "indexing" in footer.render().plain
            # The first Escape only leaves the question field; the pane and the indexing stay.
            await pilot.press("escape")
            assert ex.query_one(SourceView).has_focus and ex.pane_open
            # The second closes the pane; the footer still says the index is being built.
            await pilot.press("escape")
            assert not ex.pane_open
            assert any(w.group == "index" and w.is_running for w in pane.workers)
            assert "indexing" in footer.render().plain
        finally:
            gate.set()
        await wait_for(pilot, lambda: pane._answer is not None and footer.status == "",  # noqa: SLF001
                       what="the index and the answer")
        assert "indexing" not in footer.render().plain and fake.asked == ["pelvis"]


@pytest.mark.model
async def test_typing_after_the_first_query_shows_real_results_without_enter(tmp_path, monkeypatch, topic_docs):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    docs = topic_docs
    app = make_app(docs, config=parse_config({"query": {"k": 2, "threshold": 0.2}}))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        pane, box = await open_query(pilot, app)
        await pilot.press(*"how long do I knead dough", "enter")  # the first question builds the index
        await wait_for(pilot, lambda: pane._answer is not None,  # noqa: SLF001
                       timeout=240, what="indexing and the answer")
        assert pane._answer.hits[0].path == "baking.md"  # noqa: SLF001
        box.value = ""
        await pilot.press(*"turning a boat through the wind")
        await wait_for(pilot, lambda: pane._answer is not None  # noqa: SLF001
                       and pane._answer.question.startswith("turning"),  # noqa: SLF001
                       timeout=60, what="an answer without Enter")
        assert pane._answer.question == "turning a boat through the wind"  # noqa: SLF001
        assert pane._answer.hits[0].path == "sailing.md"  # noqa: SLF001


# --- the lint pane's filter -----------------------------------------------------------------------------------


async def open_lint_pane(pilot, app: ChunkscopeApp):
    """Press ``l`` and wait until the pane lists every finding of the tree with its list focused."""
    ex = app.explorer
    report = ex.tree_result.lint
    await pilot.press("l")
    pane = ex.query_one("#lint-pane")
    findings = ex.query_one("#findings", OptionList)
    await wait_for(pilot, lambda: findings.option_count == len(report.findings) and findings.has_focus,
                   what="the lint pane")
    return pane, findings


async def test_lint_filter_narrows_the_list_to_one_rule_and_enter_jumps_within_it():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex, report = app.explorer, app.explorer.tree_result.lint
        assert report is not None, ex.tree_result.lint_error  # lint is part of every build: None is a failure
        by_rule = Counter(f.rule for f in report.findings)
        assert len(by_rule) > 1, "sample_docs should give findings of several rules with the default strategy"
        pane, findings = await open_lint_pane(pilot, app)
        select = pane.query_one("#lint-rule", Select)
        labels = [str(prompt) for prompt, _ in select._options]  # noqa: SLF001 - the choices a person sees
        assert f"all rules ({len(report.findings)})" in labels
        assert all(f"{rule} ({n})" in labels for rule, n in by_rule.items())
        # `r` picks the rule with the most findings.
        top = by_rule.most_common(1)[0][0]
        await pilot.press("r")
        await wait_for(pilot, lambda: findings.option_count == by_rule[top], what=f"only {top}")
        assert select.value == top and {f.rule for f in pane._findings} == {top}  # noqa: SLF001
        summary = str(pane.query_one("#lint-summary").render())
        errors = sum(1 for f in report.findings if f.rule == top and f.severity == "error")
        assert f"{errors} errors, {by_rule[top] - errors} warnings shown (rule {top};" in summary
        # Picking a rule in the list of choices, as a person does; then Enter jumps to one of its findings.
        rule = next(r for r in by_rule if r != top and any(f.path != ex.current_path for f in report.findings
                                                           if f.rule == r))
        select.value = rule
        await wait_for(pilot, lambda: findings.option_count == by_rule[rule], what=f"only {rule}")
        assert {f.rule for f in pane._findings} == {rule}  # noqa: SLF001
        target = next(i for i, f in enumerate(pane._findings) if f.path != ex.current_path)  # noqa: SLF001
        finding = pane._findings[target]  # noqa: SLF001
        findings.focus()
        findings.highlighted = target
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == finding.path and ex.result.doc.path == finding.path
                       and ex.selected is not None, what="the jump to the finding")
        if finding.chunk_index is not None:
            assert ex.selected == finding.chunk_index
        else:
            chunk = ex.result.chunks[ex.selected]
            assert chunk.start_line <= finding.line <= chunk.end_line


async def test_lint_errors_only_hides_warnings_and_recounts_the_rules():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        report = app.explorer.tree_result.lint
        assert report is not None, app.explorer.tree_result.lint_error  # lint is part of every build
        pane, findings = await open_lint_pane(pilot, app)
        errors = [f for f in report.findings if f.severity == "error"]
        await pilot.press("E")
        await wait_for(pilot, lambda: pane.errors_only, what="errors only")
        assert pane.query_one("#lint-errors-only", Checkbox).value is True
        assert pane._findings == errors  # noqa: SLF001 - errors keep their reading order
        assert findings.option_count == max(len(errors), 1)
        labels = [str(prompt) for prompt, _ in pane.query_one("#lint-rule", Select)._options]  # noqa: SLF001
        assert f"all rules ({len(errors)})" in labels
        warning_only = {f.rule for f in report.findings} - {f.rule for f in errors}
        assert all(f"{r} (0)" in labels for r in warning_only)
        # The checkbox turns it off again, as the key does.
        pane.query_one("#lint-errors-only", Checkbox).value = False
        await wait_for(pilot, lambda: findings.option_count == len(report.findings), what="every finding again")
        assert not pane.errors_only


async def test_escape_gives_the_keys_to_the_source_in_the_frame_that_closes_the_lint_pane() -> None:
    """Escape on the lint pane: when its action returns, before Textual draws again, the pane is hidden, the
    source has the focus and the key bar, drawn now, no longer offers the pane's keys. Focus moved later
    (Textual's ``focus()`` is queued, and the bar hears of it only after a frame) left the pane's keys in the bar
    a frame or two after the pane had gone (bench/bench_tui.py, "Escape", waits for the bar)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ex = app.explorer
        await open_lint_pane(pilot, app)
        bar = ex.query_one(KeyBar)
        assert "Next rule" in bar.render().plain
        ex.action_close_pane()  # what Escape runs; nothing else is processed before the checks below
        assert not ex.pane_open
        assert ex.focused is ex.query_one(SourceView)
        assert "Next rule" not in bar.render().plain  # what the bar draws in the coming frame
        await pilot.pause()
        assert not ex.pane_open and ex.query_one(SourceView).has_focus
