"""Compare mode and the strategy bars, driven with Pilot: side B is remembered and a key away, the parameter bar
never shows a piece of a parameter, a narrow terminal shows one side at a time, and the summary is read whole."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, Select  # noqa: E402

from chunkscope.chunking.registry import strategy_class  # noqa: E402
from chunkscope.tui.app import ChunkscopeApp  # noqa: E402
from chunkscope.tui.screens.compare import SIDE_BY_SIDE_FROM, CompareScreen  # noqa: E402
from chunkscope.tui.screens.explorer import ExplorerScreen  # noqa: E402
from chunkscope.tui.widgets.docs_tree import DocsTreeView  # noqa: E402
from chunkscope.tui.widgets.source_view import SourceView  # noqa: E402
from chunkscope.tui.widgets.strategy_bar import StrategyBar, param_text  # noqa: E402
from tests.pilot import make_app, wait_for  # noqa: E402

pytestmark = pytest.mark.anyio

FK = "module-1-foundations/02-forward-kinematics.md"


async def explorer_ready(pilot, app: ChunkscopeApp) -> ExplorerScreen:
    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.result.complete and ex.tree_result is not None
                   and ex.query_one(StrategyBar).editor_ready, what="the explorer")
    return ex


async def open_fk(pilot, app: ChunkscopeApp) -> ExplorerScreen:
    ex = await explorer_ready(pilot, app)
    tree = ex.query_one(DocsTreeView)
    tree.move_cursor(tree._leaves[FK])  # noqa: SLF001 - the leaf of that path
    await wait_for(pilot, lambda: ex.result.doc.path == FK and ex.result.complete, what=f"{FK} to open")
    return ex


async def open_compare(pilot, app: ChunkscopeApp) -> CompareScreen:
    """Key c, as a person opens it; wait for both sides and both bars' editors."""
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), what="the compare screen")
    screen = app.screen
    await wait_for(pilot, lambda: screen.diff is not None and all(b.editor_ready for b in screen.query(StrategyBar)),
                   what="both sides chunked")
    return screen


def screen_rows(app: ChunkscopeApp) -> list[str]:
    """The screen as drawn, one string per row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]  # noqa: SLF001 - the drawn frame


def drawn(widget) -> bool:
    """Whether a widget is drawn at all (displayed, not hidden, laid out)."""
    return widget.display and widget.visible and widget.region.width > 0


def fragments(app: ChunkscopeApp, bar: StrategyBar) -> list[str]:
    """What the bar shows of a parameter without the rest of it, read from the drawn screen.

    The fields drawn whole inside the parameter row are blanked (the text inside a field scrolls with its
    cursor: that is the field's business); what remains may hold whole names, ranges and the bar's own marks
    only. A word that is part of a parameter's name, value or range but not a whole word of it is a fragment,
    and so is a name drawn without its whole field.
    """
    resolved = bar.resolved
    params = strategy_class(resolved.name).parameters
    values = {p.name: param_text(p, resolved.params.get(p.name, p.default)) for p in params}
    words = {p.name for p in params} | {w for p in params for w in p.range_text().split()}
    parts = words | {w for v in values.values() for w in v.split()}
    window = bar.query_one("#params").content_region
    row_area = bar.query_one("#bar-row").region
    rows = [list(row) for row in screen_rows(app)]
    whole_fields = set()
    for field in [bar.query_one("#strategy-select"), *bar.query(".param")]:
        inside = field.id == "strategy-select" or window.contains_region(field.region)
        if drawn(field) and inside:
            whole_fields.add(field.id)
            r = field.region
            for y in range(r.y, r.bottom):
                rows[y][r.x:r.right] = " " * r.width
    found = []
    for y in range(row_area.y, row_area.bottom):
        row = "".join(rows[y])[row_area.x:row_area.right]
        for word in re.findall(r"[^\s◂▸▼]+", row):
            if word not in words and any(word in whole for whole in parts):
                found.append(word)
    for label in bar.query(".param-label"):
        name = str(label.render()).strip()
        if drawn(label) and window.overlaps(label.region) and f"param-{name}" not in whole_fields:
            found.append(f"{name} without its whole field")
    return found


async def tab_through_parameters(pilot, app: ChunkscopeApp, bar: StrategyBar) -> list[str]:
    """From the picker, Tab to every parameter as a person does; the fragments seen on the way."""
    seen: list[str] = []
    focused: list[str] = []
    params = strategy_class(bar.resolved.name).parameters
    seen += fragments(app, bar)
    for _ in params:
        await pilot.press("tab")
        await pilot.pause()
        w = app.screen.focused
        focused.append(w.id.removeprefix("param-") if w is not None and w.id else "")
        seen += [f"{focused[-1]}: {f}" for f in fragments(app, bar)]
    assert focused == [p.name for p in params], "Tab did not reach every parameter in turn"
    return seen


# --- B is remembered and one key away -------------------------------------------------------------------------


async def test_b_is_remembered_between_visits_and_one_key_away():
    app = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await open_fk(pilot, app)
        screen = await open_compare(pilot, app)
        bar_b = screen.query_one("#bar-b", StrategyBar)
        # One key from anywhere on the screen: B's strategy picker (no Tab through A's parameters).
        await pilot.press("b")
        select = bar_b.query_one("#strategy-select", Select)
        await wait_for(pilot, lambda: select.has_focus, what="B's picker focused by b")
        # Escape leaves the bar for the source (compare stays open); from there it goes back.
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.query_one("#side-a").has_focus, what="the source, out of the bar")
        assert app.screen is screen
        # The user sets B: section, with max_tokens 300.
        select.value = "section"
        await wait_for(pilot, lambda: screen.results["b"] is not None and screen.results["b"].resolved.name == "section",
                       what="B cut by section")
        box = bar_b.query_one("#param-max_tokens", Input)
        await pilot.press("b", "tab", "tab", "tab")  # level, overlap_tokens, max_tokens
        await wait_for(pilot, lambda: box.has_focus, what="B's max_tokens field")
        box.value = "300"
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.results["b"].resolved.params["max_tokens"] == 300, what="B at 300")
        await pilot.press("escape")  # out of the field: the keys work again
        await wait_for(pilot, lambda: screen.query_one("#side-a").has_focus, what="the source, out of the field")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), what="back to the explorer")
        # Open it again: B is as the user left it, side and bar.
        again = await open_compare(pilot, app)
        assert again is not screen
        b = again.results["b"].resolved
        assert b.name == "section" and b.params["max_tokens"] == 300
        assert again.query_one("#bar-b", StrategyBar).query_one("#param-max_tokens", Input).value == "300"
        # a does the same for A.
        await pilot.press("a")
        await wait_for(pilot, lambda: again.query_one("#bar-a").query_one("#strategy-select").has_focus,
                       what="A's picker focused by a")


# --- whole parameters only ------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120, 160])
async def test_the_explorers_parameter_bar_never_shows_part_of_a_parameter(width):
    app = make_app()
    async with app.run_test(size=(width, 40)) as pilot:
        ex = await explorer_ready(pilot, app)
        bar = ex.query_one(StrategyBar)
        await pilot.press("s")
        await wait_for(pilot, lambda: bar.query_one("#strategy-select").has_focus, what="the picker")
        assert await tab_through_parameters(pilot, app, bar) == []


@pytest.mark.parametrize("width", [80, 120, 160])
async def test_compares_parameter_bars_never_show_part_of_a_parameter(width):
    app = make_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await explorer_ready(pilot, app)
        screen = await open_compare(pilot, app)
        for side in "ab":
            bar = screen.query_one(f"#bar-{side}", StrategyBar)
            if screen.focused is not None and screen.focused is not screen._view_shown():  # noqa: SLF001
                await pilot.press("escape")  # leave the bar: the keys work again
            await pilot.press(side)
            await wait_for(pilot, lambda bar=bar: bar.query_one("#strategy-select").has_focus, what=f"{side}'s picker")
            assert await tab_through_parameters(pilot, app, bar) == [], f"side {side}"


# --- one side at a time on a narrow terminal ------------------------------------------------------------------


def side_line(screen: CompareScreen) -> str:
    return str(screen.query_one("#compare-side").render())


async def test_a_narrow_terminal_shows_one_side_at_a_time_and_s_switches_at_the_same_line():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_fk(pilot, app)
        screen = await open_compare(pilot, app)
        a, b = screen.query_one("#side-a", SourceView), screen.query_one("#side-b", SourceView)
        assert a.display and not b.display
        # The source keeps a readable width, and the screen says which side this is and how to see the other.
        assert a.scrollable_content_region.width - a.layout_data.gutter_width >= 50
        assert "showing A" in side_line(screen) and "s shows B" in side_line(screen)
        assert screen.query_one("#bar-a").display and not screen.query_one("#bar-b").display
        a.scroll_to(y=30, animate=False, immediate=True)
        await pilot.pause()
        await pilot.press("s")
        await wait_for(pilot, lambda: b.display and not a.display and round(b.scroll_y) == 30,
                       what="side B at the same line")
        assert "showing B" in side_line(screen) and "s shows A" in side_line(screen)
        assert screen.query_one("#bar-b").display and not screen.query_one("#bar-a").display
        rows = screen_rows(app)
        assert any(f"B: {screen.strategies['b'].label}" in row for row in rows)  # B's source is what is drawn
        # a shows side A again, with its picker focused.
        await pilot.press("a")
        await wait_for(pilot, lambda: a.display and screen.query_one("#bar-a").query_one("#strategy-select").has_focus,
                       what="side A and its picker")


async def test_from_the_threshold_both_sides_are_shown_and_s_is_not_offered():
    app = make_app()
    async with app.run_test(size=(SIDE_BY_SIDE_FROM, 40)) as pilot:
        await open_fk(pilot, app)
        screen = await open_compare(pilot, app)
        a, b = screen.query_one("#side-a", SourceView), screen.query_one("#side-b", SourceView)
        assert a.display and b.display and not screen.query_one("#compare-side").display
        for view in (a, b):  # each side keeps a sentence's width of text
            assert view.scrollable_content_region.width - view.layout_data.gutter_width >= 30
        assert "s" not in screen.active_bindings


# --- the summary is read whole --------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120, 160])
async def test_the_summary_wraps_instead_of_being_cut(width):
    app = make_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await open_fk(pilot, app)
        screen = await open_compare(pilot, app)
        summary = screen.query_one("#compare-summary")
        rows = screen_rows(app)
        r = summary.region
        drawn = " ".join(" ".join(rows[y][r.x:r.right].split()) for y in range(r.y, r.bottom))
        d = screen.diff
        differ = len(d.only_a) + len(d.only_b)
        boundaries = len(d.boundaries_only_a) + len(d.boundaries_only_b)
        assert differ > 1 and boundaries > 1  # the sample file is cut differently: every number is plural
        for piece in (FK, f"{differ} chunks differ", f"{len(d.only_a)} only in A", f"{len(d.only_b)} only in B",
                      f"{d.identical} identical", f"A {d.a_chunks} chunks", f"B {d.b_chunks} chunks",
                      f"{boundaries} boundaries differ", "a chunk the other side lacks"):
            assert piece in drawn, f"{piece!r} is not on screen at {width} columns: {drawn!r}"
