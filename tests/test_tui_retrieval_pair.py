"""Retrieval side by side in the app: two configurations picked with V and probed in the evaluation view, and
compare mode's tree totals and next/previous file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkscope.config.reader import parse_config

pytest.importorskip("textual")

from textual.widgets import DataTable, Input, Select, Static  # noqa: E402

from chunkscope.tui.screens.compare import CompareScreen  # noqa: E402
from chunkscope.tui.screens.evaluation import EvaluationScreen, MissedList  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.screens.pick_pair import PickPairScreen  # noqa: E402
from tests.pilot import SAMPLE, make_app, wait_for  # noqa: E402
from tests.test_tui_evaluation import PRESETS, FakeProbe, list_lines, tiny_docs  # noqa: E402, F401

pytestmark = pytest.mark.anyio


async def open_picker(pilot: Any, app: Any) -> PickPairScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and app.explorer.result is not None,
                   what="the explorer")
    await pilot.press("V")
    await wait_for(pilot, lambda: isinstance(app.screen, PickPairScreen), what="the picker")
    screen = app.screen
    assert isinstance(screen, PickPairScreen)
    return screen


async def type_text(pilot: Any, text: str) -> None:
    for ch in text:
        await pilot.press(ch)


def fake_session(monkeypatch: pytest.MonkeyPatch, ex: Any) -> None:
    """The probe's embedder and store, without a model (the core's probe is replaced by `FakeProbe`)."""
    from types import SimpleNamespace

    embedder = SimpleNamespace(loaded=True, embed=lambda texts, **kw: None)
    monkeypatch.setattr(ex.search, "retriever", lambda resolved: SimpleNamespace(embedder=embedder, store=None))


@pytest.mark.model
async def test_the_picker_probes_exactly_two_configurations_each_in_its_own_mode(
        tiny_docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A is the strategy bar's values, B a preset with another search mode and an embed prefix: the real probe
    runs each in its mode, and the table has those two columns (and no other preset)."""
    import chunkscope.evaluation.probe as core

    real_probe = core.probe
    asked: list[tuple[str, list[str], dict[str, Any]]] = []

    def spy(tree: Any, strategies: Any, **kw: Any) -> Any:
        asked.append((kw["search_mode"], [label for label, _ in strategies],
                      {label: dict(s.params) for label, s in strategies}))
        return real_probe(tree, strategies, **kw)

    monkeypatch.setattr(core, "probe", spy)
    cfg = parse_config({"strategy": "recursive", "presets": PRESETS})
    app = make_app(tiny_docs, cfg, chunk_size=60)  # a value set in the strategy bar, in no config
    async with app.run_test(size=(120, 40)) as pilot:
        picker = await open_picker(pilot, app)
        assert picker.query_one("#a-source", Select).value == "\0current"
        picker.query_one("#b-source", Select).value = "by-section"
        await pilot.pause()
        picker.query_one("#b-search", Select).value = "keyword"
        picker.query_one("#b-prefix", Input).focus()
        await type_text(pilot, "title")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation view")
        screen = app.screen
        await wait_for(pilot, lambda: screen.result is not None, timeout=300, what="the probe to finish")
        a, b = "A: recursive(chunk_size=60) · dense", "B: by-section(embed_prefix=title) · keyword"
        assert not screen.result.cancelled
        assert [o.label for o in screen.result.outcomes] == [a, b]
        table = screen.query_one("#eval-table", DataTable)
        assert [str(c.label) for c in table.columns.values()] == ["metric", a, b]
        # Each configuration in its own mode, with the parameters picked (nothing was written to a config).
        assert sorted((mode, labels) for mode, labels, _ in asked) == [("dense", [a]), ("keyword", [b])]
        params = {label: p for _, _, ps in asked for label, p in ps.items()}
        assert params[a]["chunk_size"] == 60 and params[a]["embed_prefix"] == "none"
        assert params[b]["embed_prefix"] == "title" and params[b]["level"] == 2
        title = str(screen.query_one("#eval-missed-title", Static).render())
        assert f"{a} " in title and f"{b} " in title, title


async def test_misses_are_listed_per_configuration_and_enter_opens_one_in_its_mode(
        tiny_docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import chunkscope.evaluation.probe as core

    cfg = parse_config({"strategy": "recursive", "presets": PRESETS})
    app = make_app(tiny_docs, cfg)
    a, b = "A: recursive · dense", "B: small · hybrid"
    async with app.run_test(size=(80, 24)) as pilot:
        ex = app.explorer
        picker = await open_picker(pilot, app)
        fake_session(monkeypatch, ex)
        monkeypatch.setattr(core, "probe", FakeProbe({a: {"Floodplains": ("below-k", 6)},
                                                      b: {"Meanders": ("below-k", 7)}}))
        assert picker.query_one("#b-source", Select).value == "small"  # the first preset that is not A
        # Two identical sides are refused, with what to do; nothing is probed.
        picker.query_one("#b-source", Select).value = "\0current"
        await pilot.pause()
        await pilot.press("ctrl+r")
        assert isinstance(app.screen, PickPairScreen)
        assert "A and B are the same configuration" in str(picker.query_one("#pair-status", Static).render())
        picker.query_one("#b-source", Select).value = "small"
        await pilot.pause()  # the preset's own mode (none here: the app's) is set first; then the user's
        picker.query_one("#b-search", Select).value = "hybrid"
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.result is not None,
                       what="the probe's result")
        screen = app.screen
        assert str(screen.query_one("#eval-table").border_title) == "probe: metrics × configurations"
        title = str(screen.query_one("#eval-missed-title", Static).render())
        assert f"missed sections of 5 ({a} 1, {b} 1)" in title, title
        await pilot.press("m")
        listing = screen.query_one("#eval-missed", MissedList)
        assert f"{a}: 1 section missed of 5" in list_lines(listing)
        await pilot.press("right_square_bracket")
        assert "✖ Meanders" in list_lines(listing)
        await pilot.press("enter")
        # B's miss opens under B's strategy, and questions are matched in B's mode from now on.
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
        await wait_for(pilot, lambda: ex.result is not None and ex.result.resolved.label == "small"
                       and ex.selected is not None and ex._pending_jump is None,  # noqa: SLF001
                       what="the miss in the source")
        assert ex.result.doc.path == "rivers.md"
        assert ex.search.search_mode == "hybrid"
        assert ex.expected is not None and ex.expected.question == "Meanders"


def write_questions(folder: Path) -> Path:
    """Four labelled questions on `tiny_docs`, as a JSONL queries file."""
    import json

    queries = folder / "questions.jsonl"
    asked = [("How does a river build new land at the coast?", "rivers.md", "Delta formation"),
             ("Why is the land beside a river good for farming?", "rivers.md", "Floodplains"),
             ("What pushes molten rock up through the crust?", "volcanoes.md", "Magma chambers"),
             # Words in no chunk: keyword search finds nothing, so it is a miss there.
             ("zzzz qqqq xxxx", "volcanoes.md", "Pyroclastic flows")]
    queries.write_text("".join(json.dumps({"query": q, "expect": {"path": f, "heading": h}}) + "\n"
                               for q, f, h in asked), encoding="utf-8")
    return queries


@pytest.mark.model
async def test_a_queries_file_adds_evals_metrics_and_misses_beside_the_probes(tiny_docs: Path, tmp_path: Path) -> None:
    """With labelled questions, the real ``eval`` runs after the probe on the same two configurations: its rows
    join the table (the numbers ``evaluate`` gives) and its misses the list, each opening in the source."""
    queries = write_questions(tmp_path)
    cfg = parse_config({"strategy": "recursive", "presets": PRESETS})
    app = make_app(tiny_docs, cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        picker = await open_picker(pilot, app)
        picker.query_one("#pair-queries", Input).focus()
        await type_text(pilot, str(tmp_path / "nope.jsonl"))
        await pilot.press("enter")
        assert "no such file" in str(picker.query_one("#pair-status", Static).render())
        picker.query_one("#pair-queries", Input).value = str(queries)
        picker.query_one("#b-search", Select).value = "keyword"
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation view")
        screen = app.screen
        await wait_for(pilot, lambda: screen.eval_results is not None, timeout=300, what="eval to finish")
        a, b = "A: recursive · dense", "B: small · keyword"
        assert [r.strategy_label for r in screen.eval_results] == [a, b]
        table = screen.query_one("#eval-table", DataTable)
        for r, cell in zip(screen.eval_results, table.get_row("eval · hit@5")[1:]):
            assert float(str(cell)) == round(r.metrics["hit@5"], 3)
        misses = [sum(1 for q in r.per_query if not q.hit) for r in screen.eval_results]
        assert [int(str(c)) for c in table.get_row("eval · misses")[1:]] == misses
        assert not screen.eval_results[1].per_query[3].hit
        listing = screen.query_one("#eval-missed", MissedList)
        groups = [str(o.prompt) for o in listing.options if o.disabled]
        assert f"eval · {b}: {misses[1]} question{'s' if misses[1] != 1 else ''} missed of 4" in groups, groups
        # Enter on B's eval miss of the nonsense question: its section in the source, the question expected.
        index = next(i for i, m in enumerate(screen._missed)  # noqa: SLF001
                     if m.column == f"eval · {b}" and m.query == "zzzz qqqq xxxx")
        listing.focus()
        listing.highlighted = next(i for i, o in enumerate(listing.options) if o.id == f"miss-{index}")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == "volcanoes.md"
                       and ex.result.resolved.label == "small", what="the miss in the source")
        await wait_for(pilot, lambda: ex.expected is not None, what="the expectation")
        assert ex.expected.question == "zzzz qqqq xxxx"


def start_app(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Any:
    """``chunkscope ARGV`` up to the app's start: the app it would run (`run_app` is where the terminal is taken)."""
    import chunkscope.tui.app as app_module
    from chunkscope.cli import main

    started: dict[str, Any] = {}

    def run_app(tree: Any, config: Any, resolved: Any, **kw: Any) -> int:
        started["app"] = app_module.ChunkscopeApp(tree, config, resolved, **kw)
        return 0

    monkeypatch.setattr(app_module, "run_app", run_app)
    assert main(argv) == 0
    return started["app"]


@pytest.mark.model
async def test_the_queries_flag_starts_both_evaluation_views_with_evals_columns(
        tiny_docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``chunkscope DOCS --queries FILE``: v runs eval's questions after the probe with no path typed; the picker
    (V) starts with the file named, and its two configurations get eval's rows too."""
    queries = write_questions(tmp_path)
    app = start_app(monkeypatch, [str(tiny_docs), "--queries", str(queries)])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and app.explorer.result is not None,
                       what="the explorer")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation view")
        screen = app.screen
        await wait_for(pilot, lambda: screen.eval_results is not None, timeout=300, what="eval to finish")
        current = app.explorer.resolved.label
        assert [r.strategy_label for r in screen.eval_results] == [current]
        assert len(screen.eval_results[0].per_query) == 4
        table = screen.query_one("#eval-table", DataTable)
        assert float(str(table.get_row("eval · hit@5")[1])) == round(screen.eval_results[0].metrics["hit@5"], 3)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")

        picker = await open_picker(pilot, app)
        assert picker.query_one("#pair-queries", Input).value == str(queries)
        picker.query_one("#b-search", Select).value = "keyword"  # B: the same strategy, matched by its words
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen is not screen,
                       what="the evaluation of two configurations")
        pair = app.screen
        await wait_for(pilot, lambda: pair.eval_results is not None, timeout=300, what="eval of both")
        assert [r.strategy_label for r in pair.eval_results] == [f"A: {current} · dense", f"B: {current} · keyword"]
        assert pair.query_one("#eval-table", DataTable).get_row("eval · misses")


@pytest.mark.parametrize("content, problem", [(None, "no such file"), ('{"query": "q"}\n', ":1: ")])
def test_a_bad_queries_file_is_one_line_naming_it_before_the_app_starts(
        tiny_docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        content: str | None, problem: str) -> None:
    import chunkscope.tui.app as app_module
    from chunkscope.cli import main

    path = tmp_path / "questions.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    monkeypatch.setattr(app_module, "run_app", lambda *a, **kw: pytest.fail("the app started"))
    for argv in ([str(tiny_docs), "--queries", str(path)], ["tui", str(tiny_docs), "--queries", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"chunkscope: error: {path}") and problem in err, err
        assert err.count("\n") == 1, err


async def test_a_bad_prefix_is_one_line_naming_the_side() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        picker = await open_picker(pilot, app)
        picker.query_one("#a-prefix", Input).focus()
        await type_text(pilot, "{nosuchfield}")
        await pilot.press("enter")
        assert isinstance(app.screen, PickPairScreen)
        said = str(picker.query_one("#pair-status", Static).render())
        assert said.startswith("A: ") and "nosuchfield" in said, said
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")


# --- compare: the tree's totals, next and previous file --------------------------------------------------------


async def test_compare_sums_up_the_tree_and_brackets_move_between_files() -> None:
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.reading import embed_cuts

    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None, what="the explorer")
        paths = [d.path for d in app.docs.documents]
        ex.open_file(paths[1])
        await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == paths[1], what="file 2")
        ex.action_compare("fixed")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.diff is not None
                       and all(app.screen.totals.values()), timeout=60, what="compare and its totals")
        screen = app.screen
        spec = app.config.embedder_spec()
        for side in "ab":
            resolved = screen.strategies[side]
            chunks = [c for r in chunk_documents(app.docs.documents, resolved.strategy) for c in r.chunks]
            t = screen.totals[side]
            limit = resolved.strategy.limits().max
            assert (t.chunks, t.tokens, t.max_tokens) == (len(chunks), sum(c.tokens for c in chunks),
                                                          max(c.tokens for c in chunks))
            assert t.over_limit == sum(1 for c in chunks if limit is not None and c.tokens > limit)
            truncated = sum(len(embed_cuts([c for c in chunks if c.path == p], spec)) for p in paths)
            assert t.truncated == truncated
            line = (f"tree {side.upper()} {t.chunks} chunks · {t.tokens:,} tokens · mean {t.mean:.0f} "
                    f"· max {t.max_tokens}")
            assert line in str(screen.query_one("#compare-totals", Static).render())
        totals = dict(screen.totals)
        assert f"(2 of {len(paths)}; ] and [ move)" in str(screen.query_one("#compare-summary", Static).render())

        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: screen.diff is not None and screen.results["a"] is not None
                       and screen.results["a"].doc.path == paths[2], what="the next file compared")
        assert screen.path == paths[2] and screen.results["b"].doc.path == paths[2]
        assert str(screen.query_one("#compare-summary", Static).render()).startswith(paths[2])
        assert screen.totals == totals  # the tree's totals are the tree's: not counted again
        await pilot.press("left_square_bracket", "left_square_bracket")
        await wait_for(pilot, lambda: screen.diff is not None and screen.results["b"] is not None
                       and screen.results["b"].doc.path == paths[0], what="the first file compared")
        await pilot.press("left_square_bracket")  # before the first file: stays, and says so
        await pilot.pause()
        assert screen.path == paths[0]
        # B takes A's strategy: A's totals at once, never counted again.
        screen.chunk_side("b", screen.strategies["a"])
        assert screen.totals["a"] == totals["a"] and screen.totals["b"] == totals["a"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
        # Back on the file compared last.
        await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == paths[0], what="file 1")


async def test_compare_sums_up_the_explorers_strategy_from_the_explorers_own_cut(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Side A is the strategy the explorer has already cut the whole tree with: its totals come from that run (the
    same figures), and only B's strategy, or A's after a change, is cut again."""
    import chunkscope.tui.headless.tree_totals as totals_module

    cut: list[str] = []
    real = totals_module.chunk_tree

    def spy(docs: Any, resolved: Any, *args: Any, **kw: Any) -> Any:
        cut.append(resolved.label)
        return real(docs, resolved, *args, **kw)

    monkeypatch.setattr(totals_module, "chunk_tree", spy)
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the tree's run")
        ex.action_compare("fixed")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and all(app.screen.totals.values()),
                       timeout=60, what="compare's totals")
        screen = app.screen
        a = screen.strategies["a"]
        assert a is ex.resolved and cut == [screen.strategies["b"].label]  # A was not cut a second time
        assert screen.totals["a"] == real_totals(app, a)
        # A with other parameters is no longer the explorer's run: it is cut.
        from chunkscope.tui.headless.session import resolve

        smaller = resolve(app.config, a.name, {**a.params, "chunk_size": a.params["chunk_size"] // 2})
        cut.clear()
        screen.chunk_side("a", smaller)
        await wait_for(pilot, lambda: screen.totals["a"] is not None, timeout=60, what="A's new totals")
        assert cut == [smaller.label]
        assert screen.totals["a"] == real_totals(app, smaller) != real_totals(app, a)


def real_totals(app: Any, resolved: Any) -> Any:
    """The tree's totals of ``resolved``, cut afresh (what the compare line must show)."""
    from chunkscope.tui.headless.tree_totals import tree_totals

    return tree_totals(app.docs.documents, resolved, app.config)


# --- the snapshot ----------------------------------------------------------------------------------------------


@pytest.mark.model
def test_two_configurations_side_by_side_at_80x24(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real probe of two configurations on sample_docs at the smallest size: the current strategy as it is,
    and with the page title put before each chunk for embedding (both in dense search: exact, so every figure
    is the same from run to run); both columns, the misses of each."""
    pytest.importorskip("pytest_textual_snapshot")
    import chunkscope.tui.screens.evaluation as evaluation
    from chunkscope.tui.headless.search import retrieval_available

    missing = retrieval_available()
    if missing is not None:
        pytest.skip(missing)
    monkeypatch.setattr(evaluation, "format_seconds", lambda s: "N s")  # the probe's time: the one moving figure

    async def run_before(pilot: Any) -> None:
        app = pilot.app
        picker = await open_picker(pilot, app)
        picker.query_one("#b-prefix", Input).focus()
        await type_text(pilot, "title")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.result is not None,
                       timeout=600, what="the probe")
        await pilot.press("m")
        app.clear_notifications()
        await pilot.pause(0.2)

    assert snap_compare(make_app(SAMPLE), terminal_size=(80, 24), run_before=run_before)
