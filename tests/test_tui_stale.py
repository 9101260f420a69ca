"""State belongs to the question and the strategy it was made for: the results say which question and strategy
made them and say so when the strategy changed (or its index build was stopped); the expected chunk belongs to
one question and is dropped when another is asked; its star marks that chunk alone, not its overlap neighbours."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from chunkscope.retrieval.payload import chunk_payload
from chunkscope.retrieval.store import Hit

pytest.importorskip("textual")

from textual.widgets import Input, OptionList  # noqa: E402

from chunkscope.tui.headless.search import Answer, Verdict  # noqa: E402
from chunkscope.tui.headless.session import resolve  # noqa: E402
from chunkscope.tui.widgets import query_pane as query_pane_module  # noqa: E402
from tests.pilot import make_app, press_burst, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 50)
FK = "module-1-foundations/02-forward-kinematics.md"
#: Small chunks with a wide overlap: every chunk after the first shares text with its neighbours.
PARAMS = {"chunk_size": 64, "chunk_overlap": 32}


def hit_of(chunk, rank: int) -> Hit:
    """The hit the store returns for a chunk (from the chunk's own point payload)."""
    return Hit.from_payload(rank, 0.9 - rank / 100, True, chunk_payload(chunk))


class Session:
    """The session's index and search without a model: answers with ``hits``, judges the expected chunk as found
    at the rank of the hit with its span; records what each question was judged against."""

    def __init__(self, session) -> None:
        self.session = session
        self.hits: list[Hit] = []
        self.judged: dict[str, object] = {}
        self.index_gate: threading.Event | None = None
        self.index_cancel = None

    def index(self, resolved, on_progress, cancel):
        self.index_cancel = cancel
        if self.index_gate is not None:
            while not cancel.cancelled and not self.index_gate.wait(0.02):
                pass
        if not cancel.cancelled:
            self.session.indexed.add(resolved.fingerprint())
        return SimpleNamespace(cancelled=cancel.cancelled, upserted=3, chunks=9, seconds=0.0, embedded=3,
                               cached=0, unchanged=0, truncated=0)

    def ask(self, resolved, question, *, path=None, chapter=None, expected=None) -> Answer:
        self.judged[question] = expected
        verdict = None
        if expected is not None:
            span = (expected.path, expected.start, expected.end)
            rank = next((h.rank for h in self.hits if (h.path, h.start, h.end) == span), None)
            verdict = Verdict(expected, rank is not None, rank, 0.8 if rank else None, None if rank else "below-k",
                              f"rank {rank}")
        return Answer(question, list(self.hits), 0.2, 5, resolved.label, verdict)


def install(app, monkeypatch) -> Session:
    fake = Session(app.explorer.search)
    monkeypatch.setattr(app.explorer.search, "index", fake.index)
    monkeypatch.setattr(app.explorer.search, "ask", fake.ask)
    return fake


async def ready(pilot, app, path: str | None = None) -> None:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the explorer")
    if path is not None:
        ex.open_file(path)
        await wait_for(pilot, lambda: ex.result.doc.path == path and ex.result.chunks, what=f"{path}'s chunks")


async def open_query(pilot, app):
    ex = app.explorer
    await pilot.press("slash")
    await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                   what="the query input")
    return ex.query_one("#query-pane"), ex.query_one("#query-input", Input)


def results_for(pane) -> str:
    return str(pane.query_one("#results-for").render())


def starred(pane) -> list[str]:
    """The option ids of the results drawn with the expected-chunk star."""
    hits = pane.query_one("#hits", OptionList)
    out = []
    for i in range(hits.option_count):
        option = hits.get_option_at_index(i)
        if option.id and str(option.prompt).startswith("★"):
            out.append(option.id)
    return out



async def answered_knee(pilot, app, monkeypatch):
    """The explorer on FK with the current strategy indexed, the fake retriever answering with its first chunk,
    and "knee" asked and answered: (the explorer, the fake, the query pane, its input box)."""
    await ready(pilot, app, FK)
    ex = app.explorer
    fake = install(app, monkeypatch)
    fake.hits = [hit_of(ex.result.chunks[0], 1)]
    ex.search.indexed.add(ex.resolved.fingerprint())
    pane, box = await open_query(pilot, app)
    await pilot.press(*"knee", "enter")
    await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
    return ex, fake, pane, box


async def test_results_name_their_strategy_and_say_so_when_it_changes(monkeypatch):
    app = make_app(strategy="recursive")  # the label the lines below name
    async with app.run_test(size=SIZE) as pilot:
        ex, fake, pane, box = await answered_knee(pilot, app, monkeypatch)
        assert "results for “knee” from recursive · dense search" in results_for(pane)
        assert "changed" not in results_for(pane)
        # Another parameter set, not indexed yet: the results stay, marked as the old strategy's, dimmed.
        ex.set_strategy(resolve(ex.config, "recursive", {"chunk_size": 300}))
        await pilot.pause()
        line = results_for(pane)
        assert "results for “knee” from recursive · dense search — strategy changed to recursive(chunk_size=300); " \
               "Enter to ask again" in line, line
        assert pane.query_one("#hits").has_class("-stale")
        # Enter asks again: the new index, then the answer, from the new strategy.
        box.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: "from recursive(chunk_size=300) · " in results_for(pane), what="the new answer")
        assert "changed" not in results_for(pane) and not pane.query_one("#hits").has_class("-stale")
        # Back to a strategy whose index exists: asked again at once, no Enter needed.
        ex.set_strategy(resolve(ex.config, "recursive"))
        await wait_for(pilot, lambda: results_for(pane).endswith("from recursive · dense search"),
                       what="the answer re-asked")
        assert fake.judged.keys() == {"knee"}


async def test_results_stay_marked_stale_when_the_new_strategy_s_index_build_is_stopped(monkeypatch):
    app = make_app(strategy="recursive")  # the label the lines below name
    async with app.run_test(size=SIZE) as pilot:
        ex, fake, pane, _box = await answered_knee(pilot, app, monkeypatch)
        fake.index_gate = threading.Event()
        try:
            ex.set_strategy(resolve(ex.config, "recursive", {"chunk_size": 300}))
            await pilot.press("enter")
            await wait_for(pilot, lambda: fake.index_cancel is not None, what="the index build")
            await pilot.press("ctrl+x")
            await wait_for(pilot, lambda: "Indexing stopped" in str(pane.query_one("#query-status").render()),
                           what="the stop")
        finally:
            fake.index_gate.set()
        assert fake.index_cancel.cancelled
        line = results_for(pane)
        assert "from recursive · dense search — strategy changed to recursive(chunk_size=300); Enter to ask again" \
            in line, line
        assert pane.query_one("#hits").has_class("-stale")


async def test_the_star_marks_the_expected_chunk_not_its_overlap_neighbours(monkeypatch):
    app = make_app(strategy="recursive", **PARAMS)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app, FK)
        ex = app.explorer
        chunks = list(ex.result.chunks)
        target = next(c for c in chunks[1:-1]
                      if chunks[c.index - 1].end > c.start and chunks[c.index + 1].start < c.end)
        fake = install(app, monkeypatch)
        # The chunk and both neighbours it shares text with, the neighbours ranked first.
        fake.hits = [hit_of(chunks[target.index - 1], 1), hit_of(chunks[target.index + 1], 2), hit_of(target, 3)]
        ex.search.indexed.add(ex.resolved.fingerprint())
        pane, _box = await open_query(pilot, app)
        await pilot.press(*"joint angles", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        ex.selected = target.index
        await pilot.press("escape")  # out of the field: e is a key again
        await pilot.press("e")
        await wait_for(pilot, lambda: pane._answer is not None and pane._answer.verdict is not None,  # noqa: SLF001
                       what="the verdict")
        assert starred(pane) == ["hit-2"], starred(pane)
        assert "found: rank 3" in str(pane.query_one("#expect-status").render())


async def test_the_expected_chunk_belongs_to_its_question_and_is_dropped_for_another(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app, FK)
        ex = app.explorer
        chunk = ex.result.chunks[1]
        fake = install(app, monkeypatch)
        fake.hits = [hit_of(ex.result.chunks[0], 1), hit_of(chunk, 2)]
        ex.search.indexed.add(ex.resolved.fingerprint())
        pane, box = await open_query(pilot, app)
        await pilot.press(*"knee", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        ex.selected = chunk.index
        await pilot.press("escape", "e")
        await wait_for(pilot, lambda: fake.judged.get("knee") is not None, what="the question judged")
        await wait_for(pilot, lambda: starred(pane) == ["hit-1"], what="the star")
        verdict = str(pane.query_one("#expect-status").render())
        assert "for “knee”" in verdict and "found: rank 2" in verdict
        # Another question: judged against nothing, the expectation dropped (and said so), no star.
        box.focus()
        box.value = ""
        await press_burst(pilot, *"pelvis")
        await wait_for(pilot, lambda: "pelvis" in fake.judged and pane._answer is not None
                       and pane._answer.question == "pelvis",  # noqa: SLF001
                       timeout=query_pane_module.DEBOUNCE_SECONDS + 10, what="the new question's answer")
        assert fake.judged["pelvis"] is None
        await wait_for(pilot, lambda: ex.expected is None, what="the explorer to drop it")
        assert starred(pane) == []
        note = str(pane.query_one("#expect-status").render())
        assert "expectation dropped" in note and "was expected for “knee”" in note, note


async def test_an_expectation_set_before_any_question_belongs_to_the_one_submitted(monkeypatch):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app, FK)
        ex = app.explorer
        chunk = ex.result.chunks[1]
        fake = install(app, monkeypatch)
        fake.hits = [hit_of(chunk, 1)]
        ex.search.indexed.add(ex.resolved.fingerprint())
        ex.selected = chunk.index
        await pilot.press("o", "e")  # from the source: the pane opens on an empty question
        pane = ex.query_one("#query-pane")
        box = ex.query_one("#query-input", Input)
        await wait_for(pilot, lambda: box.has_focus, what="the question field")
        # A pause while typing searches (judged, not yet tied); Enter ties it to the question as submitted.
        await press_burst(pilot, *"knee")
        await wait_for(pilot, lambda: "knee" in fake.judged, what="the search while typing")
        await press_burst(pilot, *" joint", "enter")
        await wait_for(pilot, lambda: fake.judged.get("knee joint") is not None, what="the submitted question")
        assert ex.expected is not None
        assert "for “knee joint”" in str(pane.query_one("#expect-status").render())
        box.value = ""
        await press_burst(pilot, *"hip", "enter")
        await wait_for(pilot, lambda: "hip" in fake.judged, what="another question")
        assert fake.judged["hip"] is None
        await wait_for(pilot, lambda: ex.expected is None, what="the expectation dropped")
