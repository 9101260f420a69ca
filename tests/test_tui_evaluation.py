"""The evaluation screen: the probe's metric table for the current strategy and the configured presets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from chunkscope.config.reader import parse_config, resolve_strategy

pytest.importorskip("textual")

from textual.widgets import DataTable, Static  # noqa: E402

from chunkscope.tui.screens.evaluation import SWEEP_HINT, EvaluationScreen, evaluation_strategies  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.widgets.key_bar import KeyBar  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

SIZE = (160, 50)
PRESETS = {"small": {"strategy": "recursive", "chunk_size": 40, "chunk_overlap": 0},
           "by-section": {"strategy": "section", "level": 2, "min_tokens": 0}}



@pytest.fixture
def tiny_docs(tmp_path: Path) -> Path:
    """Two short files, five distinct level-2 headings with bodies: a handful of chunks, five probe questions."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "rivers.md").write_text(textwrap.dedent("""\
        # Rivers

        ## Delta formation

        Sediment carried downstream settles where the river meets the sea and builds a fan of new land.

        ## Meanders

        A river on flat ground swings in wide loops; the outer bank erodes while the inner bank grows.

        ## Floodplains

        Seasonal floods spread silt over the flat land beside the channel, which makes it fertile for farming.
        """), encoding="utf-8")
    (root / "volcanoes.md").write_text(textwrap.dedent("""\
        # Volcanoes

        ## Magma chambers

        Molten rock gathers in a reservoir under the crust until the pressure forces it upwards.

        ## Pyroclastic flows

        A fast cloud of hot gas and ash rushes down the slope of the mountain after an eruption.
        """), encoding="utf-8")
    return root




def test_strategies_are_the_current_one_then_each_distinct_preset():
    cfg = parse_config({"strategy": "recursive", "presets": {
        **PRESETS,
        # The current strategy's own parameters under another name: the same chunks, so asked once.
        "same-as-default": {"strategy": "recursive"},
    }})
    current = resolve_strategy(cfg, None)
    strategies, problems = evaluation_strategies(cfg, current)
    assert [s.label for s in strategies] == ["recursive", "small", "by-section"]
    assert problems == []
    # Started on a preset: that preset is the current column, not repeated; the other presets follow.
    strategies, _ = evaluation_strategies(cfg, resolve_strategy(cfg, "small"))
    assert [s.label for s in strategies] == ["small", "by-section", "same-as-default"]


@pytest.mark.model
async def test_v_opens_the_probe_table_with_a_column_per_strategy(tiny_docs: Path):
    cfg = parse_config({"strategy": "recursive", "presets": PRESETS})
    app = make_app(tiny_docs, cfg)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and app.explorer.result is not None,
                       what="the explorer")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen), what="the evaluation screen")
        screen = app.screen
        assert isinstance(screen, EvaluationScreen)
        await wait_for(pilot, lambda: screen.result is not None, timeout=180, what="the probe to finish")
        result = screen.result
        assert not result.cancelled
        assert len(result.sections) == 5
        assert all(0 < o.chunks < 15 for o in result.outcomes)
        table = screen.query_one("#eval-table", DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert labels == ["metric", "recursive", "small", "by-section"]
        row = table.get_row("hit@5")
        assert str(row[0]) == "hit@5"
        values = [float(str(cell)) for cell in row[1:]]
        assert values == [round(o.metrics["hit@5"], 3) for o in result.outcomes]
        assert all(0.0 <= v <= 1.0 for v in values)
        header = str(screen.query_one("#eval-header", Static).render())
        assert "probe: 5 section headings as queries" in header
        assert SWEEP_HINT in str(screen.query_one("#eval-sweep-title", Static).render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")


# --- the sections each strategy missed ------------------------------------------------------------------------


class FakeProbe:
    """`probe.probe` without a model: every strategy answers every section but the ones in ``misses``
    (label → heading → reason, rank), each judged on the strategy's own chunk holding the start of the body."""

    def __init__(self, misses: dict[str, dict[str, tuple[str, int | None]]]) -> None:
        self.misses = misses

    def __call__(self, tree, strategies, *, k, probe_set, embedder, store, on_progress, cancel, site_url=None,
                 search_mode="dense", parent=None):
        from chunkscope.evaluation.evaluate import EvalResult
        from chunkscope.evaluation.verdicts import QueryResult, RankedChunk
        from chunkscope.evaluation.probe import ProbeOutcome, ProbeResult

        result = ProbeResult(k, tuple(sorted({1, k})), probe_set, [])
        for label, strategy in strategies:
            chunks = [c for d in tree.documents for c in strategy.chunk(d)]
            per_query = []
            for s in probe_set.sections:
                reason, rank = self.misses.get(label, {}).get(s.heading, (None, 1))
                holder = next(c for c in chunks if c.path == s.path and c.start <= s.start < c.end)
                judged = RankedChunk.of_chunk(holder) if reason and reason != "absent" else None
                per_query.append(QueryResult(s.query, s.case().expect, s.region(), s.line, reason is None, rank, 0.5,
                                             1, reason, f"rank {rank}" if rank else "not in the top 100", {},
                                             expected=judged))
            ev = EvalResult(label, {f"hit@{k}": 1.0}, per_query)
            result.outcomes.append(ProbeOutcome(label, strategy.name, dict(strategy.params), len(chunks), ev.metrics,
                                                [q.hit for q in per_query], [q.rank for q in per_query],
                                                [q.reason for q in per_query], [False] * len(per_query), eval=ev))
        return result


def list_lines(widget) -> str:
    """What an option list draws on screen, line by line (what a person reads, cut where the screen cuts it)."""
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


async def test_missed_sections_are_listed_at_80_columns_and_enter_opens_one_with_its_chunk(tiny_docs: Path,
                                                                                            monkeypatch):
    import chunkscope.evaluation.probe as tuning
    from types import SimpleNamespace

    from chunkscope.tui.screens.evaluation import MissedList

    cfg = parse_config({"strategy": "recursive", "presets": PRESETS})
    app = make_app(tiny_docs, cfg)
    async with app.run_test(size=(80, 24)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and ex.result is not None,
                       what="the explorer")
        embedder = SimpleNamespace(loaded=True, embed=lambda texts, **kw: None)
        monkeypatch.setattr(ex.search, "retriever", lambda resolved: SimpleNamespace(embedder=embedder, store=None))
        monkeypatch.setattr(tuning, "probe", FakeProbe({"small": {"Meanders": ("below-k", 7)},
                                                        "by-section": {"Pyroclastic flows": ("absent", None)}}))
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.result is not None,
                       what="the probe's result")
        screen = app.screen
        title = str(screen.query_one("#eval-missed-title", Static).render())
        assert "missed sections of 5 (recursive 0, small 1, by-section 1)" in title, title
        await pilot.press("m")
        listing = screen.query_one("#eval-missed", MissedList)
        assert listing.has_focus and listing.size.height >= 4
        shown = list_lines(listing)
        # Each miss: the heading, its reason and rank; then file:line (wrapped, never cut off at 80 columns).
        assert "small: 1 section missed of 5" in shown, shown
        assert "✖ Meanders  below-k, rank 7, score 0.500" in shown and "rivers.md:7" in shown, shown
        assert listing.get_option_at_index(listing.highlighted).id == "miss-0"
        await pilot.press("down")
        assert "Pyroclastic flows  absent, score 0.500" in list_lines(listing)
        assert "volcanoes.md:7 · not in the top 100" in list_lines(listing)
        await pilot.press("up", "enter")
        # The view closes; the explorer shows the section under the strategy that missed it, its chunk selected
        # and expected for the section's question.
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
        await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == "rivers.md"
                       and ex.result.resolved.label == "small" and ex.selected is not None
                       and ex._pending_jump is None, what="the section's chunk")  # noqa: SLF001
        chunk = ex.result.chunks[ex.selected]
        body = next(s for s in screen.result.sections if s.heading == "Meanders")
        assert chunk.start <= body.start < chunk.end
        assert ex.expected is not None and ex.expected.question == "Meanders"
        assert (ex.expected.start, ex.expected.end, ex.expected.index) == (chunk.start, chunk.end, chunk.index)
        assert ex.resolved.label == "small"


async def test_brackets_jump_between_the_strategies_misses(tiny_docs: Path, monkeypatch):
    """With many misses per strategy, ] and [ go to the first miss of the next and previous strategy, its line in
    view; a strategy with no miss is passed over, and the ends wrap around."""
    import chunkscope.evaluation.probe as tuning
    from types import SimpleNamespace

    from chunkscope.tui.screens.evaluation import MissedList

    cfg = parse_config({"strategy": "recursive", "presets": PRESETS})
    app = make_app(tiny_docs, cfg)
    headings = ["Delta formation", "Meanders", "Floodplains", "Magma chambers", "Pyroclastic flows"]
    async with app.run_test(size=(80, 24)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen) and ex.result is not None,
                       what="the explorer")
        embedder = SimpleNamespace(loaded=True, embed=lambda texts, **kw: None)
        monkeypatch.setattr(ex.search, "retriever", lambda resolved: SimpleNamespace(embedder=embedder, store=None))
        # recursive misses every section, small none, by-section four.
        monkeypatch.setattr(tuning, "probe", FakeProbe({
            "recursive": {h: ("below-k", 9) for h in headings},
            "by-section": {h: ("below-k", 8) for h in headings[1:]}}))
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.result is not None,
                       what="the probe's result")
        screen = app.screen
        await pilot.press("m")
        listing = screen.query_one("#eval-missed", MissedList)

        def at() -> tuple[str, str]:
            """The strategy and heading of the highlighted miss."""
            m = screen._missed[int(listing.get_option_at_index(listing.highlighted).id[5:])]  # noqa: SLF001
            return m.resolved.label, m.heading

        assert at() == ("recursive", "Delta formation")
        await pilot.press("right_square_bracket")
        assert at() == ("by-section", "Meanders")  # small missed nothing: passed over
        shown = list_lines(listing)
        assert "by-section: 4 sections missed of 5" in shown and "recursive" not in shown, shown
        await pilot.press("right_square_bracket")
        assert at() == ("recursive", "Delta formation")  # after the last strategy: the first again
        await pilot.press("left_square_bracket")
        assert at() == ("by-section", "Meanders")  # before the first: the last
        await pilot.press("down", "down", "left_square_bracket")
        assert at() == ("recursive", "Delta formation")  # from inside a group: the previous strategy's first miss
        assert "Next strategy" in screen.query_one(KeyBar).render().plain
