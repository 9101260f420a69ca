"""The evaluation screen: the probe's metric table for the current strategy and the configured presets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from chunkscope.config import parse_config, resolve_strategy

pytest.importorskip("textual")

from textual.widgets import DataTable, Static  # noqa: E402

from chunkscope.tui.screens.evaluation import SWEEP_HINT, EvaluationScreen, evaluation_strategies  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
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
