"""A preset's search mode in the app: choosing a preset that names one switches the query pane to it (with a
notice, as ctrl+s would), the answers shown then say they were made in another mode; a strategy or preset that
names none leaves the mode the user has."""

from __future__ import annotations

import pytest

from chunkscope.config.reader import parse_config

pytest.importorskip("textual")

from tests.pilot import make_app, wait_for  # noqa: E402
from tests.test_tui_retrieval_controls import SIZE, open_pane, shown  # noqa: E402

pytestmark = pytest.mark.anyio

#: Both presets cut as plain recursive does (same collection): only the search mode differs.
CONFIG = {"presets": {"tuned": {"strategy": "recursive", "search": "hybrid"},
                      "plain": {"strategy": "recursive"}}}


def notices(app) -> list[str]:
    return [f"{n.title or ''} {n.message}" for n in app._notifications]  # noqa: SLF001


async def test_choosing_a_preset_with_a_search_mode_switches_the_pane_to_it():
    # Opened on plain recursive, as both presets cut: choosing one changes the search mode, never the chunks.
    app = make_app(config=parse_config(CONFIG), strategy="recursive")
    async with app.run_test(size=SIZE) as pilot:
        pane, fake = await open_pane(pilot, app)
        ex = app.explorer
        await pilot.press(*"knee", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, what="an answer")  # noqa: SLF001
        assert pane._answer.search_mode == "dense"  # noqa: SLF001
        # Not indexed for the moment: the answer shown stays, and says it was made in the mode before.
        ex.search.indexed.discard(ex.resolved.fingerprint())
        app.choose_strategy("tuned")
        await wait_for(pilot, lambda: ex.search.search_mode == "hybrid", what="hybrid search")
        await wait_for(pilot, lambda: "hybrid search" in shown(pane, "#search-info"), what="the mode shown")
        assert "search changed to hybrid" in shown(pane, "#results-for")
        assert any("hybrid" in n for n in notices(app))
        # Indexed: the question is asked again in the preset's mode, as ctrl+s does.
        ex.search.indexed.add(ex.resolved.fingerprint())
        app.choose_strategy("recursive")  # names no mode: the user's (hybrid) stays
        await pilot.pause()
        assert ex.search.search_mode == "hybrid"
        await pilot.press("ctrl+s")  # the user's own choice: hybrid → dense
        await wait_for(pilot, lambda: ex.search.search_mode == "dense", what="dense")
        app.choose_strategy("plain")
        await pilot.pause()
        assert ex.search.search_mode == "dense" and "dense search" in shown(pane, "#search-info")
        app.choose_strategy("tuned")
        await wait_for(pilot, lambda: pane._answer.search_mode == "hybrid",  # noqa: SLF001
                       what="the answer asked again in hybrid")
        assert fake.asked[-1][:2] == ("knee", "hybrid")
        assert "hybrid search" in shown(pane, "#search-info")


async def test_a_preset_search_mode_applies_before_the_pane_opens_and_a_bar_edit_keeps_the_users_mode():
    from chunkscope.tui.headless.session import resolve

    cfg = parse_config(CONFIG)
    app = make_app(config=cfg)
    async with app.run_test(size=SIZE) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None, what="the explorer")
        app.choose_strategy("tuned")  # the query pane is not open yet
        await wait_for(pilot, lambda: ex.search.search_mode == "hybrid", what="hybrid search")
        pane, _ = await open_pane(pilot, app)
        assert "hybrid search" in shown(pane, "#search-info")
        await pilot.press("ctrl+s")  # hybrid → dense, the user's choice
        await wait_for(pilot, lambda: ex.search.search_mode == "dense", what="dense")
        # A parameter edited in the strategy bar keeps the preset (and its search): not a new choice of mode.
        ex.set_strategy(resolve(cfg, "tuned", {"chunk_size": 300}), from_bar=True)
        await pilot.pause()
        assert ex.search.search_mode == "dense"
