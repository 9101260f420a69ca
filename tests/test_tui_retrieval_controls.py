"""The query pane's retrieval controls (issue #11): the embedder shown, the score threshold with where it comes from
(changed here, it re-marks the hits shown and holds for the next questions), the search mode (cycled, it asks
again in the new mode without re-indexing), and where the embedder stops reading a chunk with a prefix."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from chunkscope.config.reader import parse_config
from chunkscope.retrieval.payload import chunk_payload
from chunkscope.retrieval.store import Hit

pytest.importorskip("textual")

from textual.widgets import Input, OptionList  # noqa: E402

from chunkscope.tui.headless.search import Answer, SearchSession, Verdict  # noqa: E402
from tests.pilot import make_app, press_burst, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 50)
FK = "module-1-foundations/02-forward-kinematics.md"
#: The scores the fake index gives its three hits: at MiniLM's 0.45 the first two pass.
SCORES = (0.8, 0.5, 0.3)


class FakeIndex:
    """The session's search without a model or a store: three hits of the open file with `SCORES`, judged as
    `Store.search` judges them by the threshold and search mode in force when asked. Records every question."""

    def __init__(self, app) -> None:
        self.session: SearchSession = app.explorer.search
        self.chunks = app.explorer.result.chunks
        #: (question, search mode, threshold in force) per search.
        self.asked: list[tuple[str, str, float | None]] = []
        self.indexed = 0

    def index(self, resolved, on_progress, cancel):
        self.indexed += 1
        self.session.indexed.add(resolved.fingerprint())
        return SimpleNamespace(cancelled=False, upserted=3, chunks=3, seconds=0.0, embedded=3, cached=0,
                               unchanged=0, truncated=0)

    def ask(self, resolved, question, *, path=None, chapter=None, expected=None) -> Answer:
        mode = self.session.search_mode
        threshold = self.session.threshold if mode == "dense" else None
        self.asked.append((question, mode, self.session.threshold))
        hits = [Hit.from_payload(rank, score, threshold is None or score >= threshold, chunk_payload(c))
                for rank, (score, c) in enumerate(zip(SCORES, self.chunks), 1)]
        verdict = None
        if expected is not None:
            kept = any(h.kept and (h.path, h.start, h.end) == (expected.path, expected.start, expected.end)
                       for h in hits)
            verdict = Verdict(expected, kept, 2, 0.5, None if kept else "threshold", "")
        return Answer(question, hits, threshold, 5, resolved.label, verdict, search_mode=mode)


async def open_pane(pilot, app, config_path: str | None = None):
    """The explorer on FK with the fake index installed and the query pane open (question field focused)."""
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the explorer")
    ex.open_file(FK)
    await wait_for(pilot, lambda: ex.result.doc.path == FK and len(ex.result.chunks) >= 3, what="FK's chunks")
    fake = FakeIndex(app)
    ex.search.index = fake.index
    ex.search.ask = fake.ask
    ex.search.indexed.add(ex.resolved.fingerprint())
    await pilot.press("slash")
    await wait_for(pilot, lambda: ex.query("#query-input") and ex.query_one("#query-input", Input).has_focus,
                   what="the question field")
    return ex.query_one("#query-pane"), fake


def shown(pane, widget_id: str) -> str:
    return str(pane.query_one(widget_id).render())


def controls(pane) -> str:
    """The controls row as read: embedder and mode, the threshold field's value, where it comes from."""
    return " ".join([shown(pane, "#search-info"), pane.query_one("#threshold-input", Input).value,
                     shown(pane, "#threshold-source")])


def marks(pane) -> list[bool]:
    return [h.kept for h in pane._answer.hits]  # noqa: SLF001


def threshold_line_at(pane) -> int | None:
    """Where the "threshold" line is drawn among the results (None: not drawn)."""
    hits = pane.query_one("#hits", OptionList)
    for i in range(hits.option_count):
        option = hits.get_option_at_index(i)
        if option.disabled and "threshold" in str(option.prompt):
            return i
    return None


async def test_the_pane_shows_the_embedder_and_the_threshold_with_where_it_comes_from():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, _fake = await open_pane(pilot, app)
        row = controls(pane)
        assert "all-MiniLM-L6-v2 · dense search" in row and "0.45" in row, row
        assert "all-MiniLM-L6-v2's own" in row, row
    # [query] threshold in the configuration file: named as its source.
    cfg = parse_config({"query": {"threshold": 0.3}}, path=Path("chunkscope.toml"))
    app = make_app(config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        pane, _fake = await open_pane(pilot, app)
        assert pane.query_one("#threshold-input", Input).value == "0.3"
        assert "chunkscope.toml" in shown(pane, "#threshold-source")
    # An endpoint's model: its own measured threshold; one nobody measured has none, and says so.
    app = make_app(config=parse_config({"embedder": {"model": "openai:text-embedding-3-small"}}))
    async with app.run_test(size=SIZE) as pilot:
        pane, _fake = await open_pane(pilot, app)
        row = controls(pane)
        assert "openai:text-embedding-3-small · dense search" in row and " 0.7 " in row, row
        assert "openai:text-embedding-3-small's own" in row, row
    cfg = parse_config({"embedder": {"model": "openai:nomic-embed-text", "url": "http://localhost:11434/v1"}})
    app = make_app(config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        pane, _fake = await open_pane(pilot, app)
        assert pane.query_one("#threshold-input", Input).value == ""
        assert "openai:nomic-embed-text has no measured threshold" in shown(pane, "#threshold-source")
    # Flags of `chunkscope DOCS` win over the file, and the pane says they came from the command line.
    base = parse_config({"query": {"threshold": 0.3}}, path=Path("chunkscope.toml"))
    app = make_app(config=base.with_command_line(query__threshold=0.55))
    async with app.run_test(size=SIZE) as pilot:
        pane, _fake = await open_pane(pilot, app)
        assert pane.query_one("#threshold-input", Input).value == "0.55"
        assert "command line" in shown(pane, "#threshold-source")
    app = make_app(config=base.with_command_line(query__search="hybrid"))
    async with app.run_test(size=SIZE) as pilot:
        pane, _fake = await open_pane(pilot, app)
        assert "hybrid search" in controls(pane) and base.search_mode == "dense"  # the file's copy is untouched


async def test_changing_the_threshold_re_marks_the_hits_shown_and_holds_for_the_next_question():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, fake = await open_pane(pilot, app)
        await pilot.press(*"knee", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        assert marks(pane) == [True, True, False] and threshold_line_at(pane) == 2
        assert "2 of 3 hits pass the threshold 0.45" in shown(pane, "#query-status")
        # ctrl+t from the question field; ↑ twice: 0.55. The marks follow at once, without searching again.
        await pilot.press("ctrl+t")
        box = pane.query_one("#threshold-input", Input)
        assert box.has_focus
        await pilot.press("up", "up")
        assert box.value == "0.55" and "set here" in shown(pane, "#threshold-source")
        assert marks(pane) == [True, False, False] and threshold_line_at(pane) == 1
        assert "1 of 3 hits pass the threshold 0.55" in shown(pane, "#query-status")
        assert len(fake.asked) == 1
        # ↓ steps back down.
        await pilot.press("down")
        assert box.value == "0.5" and marks(pane) == [True, True, False]
        # A typed value takes effect on Enter.
        box.value = ""
        await pilot.press(*"0.2", "enter")
        assert marks(pane) == [True, True, True] and threshold_line_at(pane) == 3
        assert len(fake.asked) == 1
        # Not a number: said, and nothing changes.
        box.value = ""
        await pilot.press(*"high", "enter")
        assert "no cosine score" in shown(pane, "#threshold-source") and box.has_class("-invalid")
        assert app.explorer.search.threshold == 0.2 and marks(pane) == [True, True, True]
        # The next question is judged by the threshold set here.
        question = pane.query_one("#query-input", Input)
        question.focus()
        question.value = ""
        await press_burst(pilot, *"hip", "enter")
        await wait_for(pilot, lambda: fake.asked[-1][0] == "hip", what="the next question")
        assert fake.asked[-1][2] == 0.2
        assert pane.query_one("#threshold-input", Input).value == "0.2"  # the unentered "high" is gone
        # An empty field goes back to the embedder's own.
        await pilot.press("ctrl+t")
        box.value = ""
        await pilot.press("enter")
        assert box.value == "0.45" and "all-MiniLM-L6-v2's own" in shown(pane, "#threshold-source")
        assert marks(pane) == [True, True, False]


async def test_the_verdict_on_the_expected_chunk_is_judged_again_when_the_threshold_changes():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, fake = await open_pane(pilot, app)
        ex = app.explorer
        await pilot.press(*"knee", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        ex.selected = 1  # the second hit (score 0.5): found at 0.45
        await pilot.press("escape", "e")
        await wait_for(pilot, lambda: "found" in shown(pane, "#expect-status"), what="the verdict")
        pane.focus_input()  # back in the pane (e was pressed in the source)
        await pilot.press("ctrl+t", "up", "up")  # 0.55: the expected chunk is filtered out now
        await wait_for(pilot, lambda: "missed: threshold" in shown(pane, "#expect-status"),
                       what="the verdict judged again")
        assert fake.asked[-1] == ("knee", "dense", 0.55)


async def test_ctrl_s_cycles_the_search_mode_and_asks_again_without_re_indexing():
    app = make_app(strategy="recursive")  # named, so the results are labelled "from recursive"
    async with app.run_test(size=SIZE) as pilot:
        pane, fake = await open_pane(pilot, app)
        await pilot.press(*"knee", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        assert shown(pane, "#results-for").endswith("from recursive · dense search")
        first = len(fake.asked)  # typing may have searched before Enter did
        for mode in ("keyword", "hybrid"):
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: pane._answer.search_mode == mode,  # noqa: SLF001
                           what=f"the {mode} answer")
            assert fake.asked[-1][:2] == ("knee", mode)
            assert shown(pane, "#results-for").endswith(f"from recursive · {mode} search")
            assert f"{mode} search" in shown(pane, "#search-info")
            # The threshold does not apply: said beside it, every hit kept, no threshold line.
            assert f"not applied to {mode} search" in shown(pane, "#threshold-source")
            assert marks(pane) == [True, True, True] and threshold_line_at(pane) is None
            assert "no threshold" in shown(pane, "#query-status")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: pane._answer.search_mode == "dense", what="dense again")  # noqa: SLF001
        assert marks(pane) == [True, True, False] and "all-MiniLM-L6-v2's own" in shown(pane, "#threshold-source")
        assert [m for _, m, _ in fake.asked[first:]] == ["keyword", "hybrid", "dense"]
        assert fake.indexed == 0  # the collection serves every mode: nothing was indexed again


def test_the_session_asks_in_its_search_mode_and_keyword_embeds_no_question(sample_docs):
    """`SearchSession.ask` hands the mode to the retriever and judges by the threshold in dense search only."""
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs

    cfg = load_config(sample_docs)
    session = SearchSession(load_docs(sample_docs), cfg)
    calls: list[tuple[str, object, float | None]] = []
    embedded: list[str] = []
    retriever = SimpleNamespace(search_mode="dense", chunks=[],
                                embedder=SimpleNamespace(embed_query=lambda q: embedded.append(q) or [0.1]))

    def search(vec, k, threshold, filters=None, text=None):
        calls.append((retriever.search_mode, vec, threshold))
        return []

    retriever.search = search
    session.retriever = lambda resolved: retriever
    resolved = resolve_strategy(cfg, None)
    assert session.ask(resolved, "knee").search_mode == "dense"
    session.search_mode = "keyword"
    answer = session.ask(resolved, "knee")
    assert answer.search_mode == "keyword" and answer.threshold is None
    assert calls == [("dense", [0.1], 0.45), ("keyword", None, None)]
    assert embedded == ["knee"]  # keyword search needs no vector: the model is not asked


async def test_the_embedder_stops_reading_where_the_prefix_says_not_where_its_words_repeat(tmp_path):
    """A heading prefix that repeats the chunk's words ("Echo"): the cut maps back through the chunk's place in
    its embed text, not through the first place its words occur."""
    from chunkscope.tokens import embed_tokenizer

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "echo.md").write_text("# Echo\n\n" + "Echo\n\n" * 600, encoding="utf-8")
    app = make_app(docs, strategy="recursive", chunk_size=600, chunk_overlap=0, embed_prefix="heading")
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.complete, what="the file's figures")
        chunk = ex.result.chunks[1]
        prefix = "Echo\n\n"  # the heading trail the prefix puts before the chunk
        assert chunk.embed_text == prefix + chunk.text and chunk.text.startswith(prefix)
        read = embed_tokenizer().truncation_offset(chunk.embed_text)  # in the embed text, prefix included
        assert read < len(chunk.embed_text)
        assert ex.result.truncations[1] == chunk.start + read - len(prefix)
